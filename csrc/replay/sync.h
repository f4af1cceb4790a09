/* Synchronization structure of a trace, as explicit data:
 * - every message record knows the MPI call it belongs to (enter/leave
 *   time, call path), and every receive knows its matching send;
 * - non-blocking requests are matched to their completion;
 * - every collective operation (and MPI_Init/MPI_Finalize, which act as
 *   implicit collectives over all ranks) is a "site" that knows its
 *   instance, its member index and its root.
 */
#ifndef WS_REPLAY_SYNC_H
#define WS_REPLAY_SYNC_H

#include "../trace/trace.h"
#include "transport.h"

/* message flags */
enum {
    WS_MSG_SEND = 1,        /* a send record (else a receive) */
    WS_MSG_NONBLOCKING = 2, /* Isend / Irecv */
    WS_MSG_MAY_BLOCK = 4,   /* completed by a call that can wait for the partner:
                               sends: MPI_Send, MPI_Ssend or MPI_Wait*;
                               receives: MPI_Recv, MPI_Sendrecv or MPI_Wait* */
    WS_MSG_CANCELLED = 8,   /* the request was cancelled */
    WS_MSG_MULTI = 16,      /* completed together with others (Waitall, Waitsome) */
    WS_MSG_NO_CALL = 32,    /* the record is in no call: no call path */
    WS_MSG_NO_DONE_CALL = 64, /* sends: the completion is in no call: no call path */
    WS_MSG_CH1_APART = 128   /* channel 1 is exchanged at an event of its own (MpiIsendComplete,
                                MpiIrecvRequest: a WS_SYNC_CH1 entry of the synchronization events),
                                else at the record */
};

/* Each message has two exchange points on each side.  Channel 0 joins
 * the start of the send with the completion of the receive (the Late
 * Sender relation); channel 1 joins the completion of the send with the
 * posting of the receive (the Late Receiver relation).  For blocking
 * calls both points are the message record itself; for non-blocking ones
 * channel 1 is exchanged at MpiIsendComplete / MpiIrecvRequest. */

enum { WS_SYNC_RECORD = 1u << 30, WS_SYNC_CH1 = 2u << 30, WS_SYNC_SITE = 3u << 30, WS_SYNC_INDEX = (1u << 30) - 1 };

/* classes of synchronization sites */
enum ws_site_class {
    WS_SITE_BARRIER = 1,  /* MPI_Barrier                                  */
    WS_SITE_NXN = 2,      /* Allreduce, Allgather(v), Alltoall(v,w), Reduce_scatter */
    WS_SITE_1TON = 3,     /* Bcast, Scatter(v)                            */
    WS_SITE_NTO1 = 4,     /* Reduce, Gather(v)                            */
    WS_SITE_SCAN = 5,     /* Scan, Exscan                                 */
    WS_SITE_INIT = 6,     /* MPI_Init / MPI_Init_thread                   */
    WS_SITE_FINALIZE = 7, /* MPI_Finalize                                 */
    WS_SITE_OTHER = 8,    /* other collective records (handles, ...)      */
    WS_SITE_OMP_FORK = 9, /* a thread's start of an OpenMP parallel region (its Enter), on the team */
    WS_SITE_OMP_BARRIER = 10 /* an OpenMP barrier (its Leave), on the team  */
};

/* ws_site.op of the OpenMP sites */
enum { WS_SITE_OP_OMP_FORK = 0xfd, WS_SITE_OP_OMP_EBARRIER = 0xfc, WS_SITE_OP_OMP_IBARRIER = 0xfb };

/* Is this an OpenMP site? */
static inline int ws_site_is_omp(uint8_t cls)
{
    return cls == WS_SITE_OMP_FORK || cls == WS_SITE_OMP_BARRIER;
}

/* One message record, as the replays see it (24 bytes).  What the store
 * already holds is not copied: the call holding the record, the call
 * completing a send and the call posting a receive are kept as event
 * indices, their times and call paths read from the store's columns
 * (ws_msg_enter and the other accessors below). */
typedef struct ws_msg {
    uint32_t partner;     /* location index of the partner */
    uint32_t match_row;   /* receives: row of the matched send at the partner (WS_NONE32: unmatched);
                             sends: row of the receive at the partner when the partner's location was
                             built in the same ws_sync_build (else WS_NONE32) */
    uint32_t call;        /* Enter event of the MPI call holding the record (the record's event: none) */
    uint32_t other_call;  /* sends: Enter event of the call completing the send;
                             receives: of the call posting the receive (Recv or Irecv) */
    uint32_t done_leave;  /* sends: Leave event of the call completing the send */
    uint8_t flags;        /* WS_MSG_* */
    uint8_t pad;
    uint16_t leave_delta; /* the Leave event of the call holding the record (the record's event when the call
                             never leaves) less `call`, unless the location keeps them in leave_wide
                             (ws_msg_leave_event) */
} ws_msg;

/* A collective site of a location (24 bytes): one record, since the
 * engine and the handlers read several of its fields at once (the fields
 * the engine reads at every site come first).  Its instance is its
 * communicator and its number there (ws_site_instance); how many members
 * it has is its communicator's (ws_site_members); its call path is its
 * call's (ws_site_callpath); the location's index among the members is
 * the same at all its sites of a communicator (ws_site_member); the root
 * is what the collective's event records (ws_site_root). */
typedef struct ws_site {
    uint32_t comm;           /* communicator; t->n_comms: MPI_Init's, t->n_comms + 1: MPI_Finalize's */
    uint32_t seq;            /* sequence number on it (below 2^32: a location has fewer events) */
    uint32_t event;          /* event replayed as the site (MpiCollectiveEnd, the Leave of Init/Finalize or of an
                                OpenMP barrier, or the Enter of a parallel region) */
    uint8_t cls;             /* enum ws_site_class */
    uint8_t op;              /* OTF2 collective op (for explicit sites) */
    uint8_t pad[2];
    /* the Enter and the Leave of the call (times: ws_site_enter,
     * ws_site_leave; kept as events, 8 bytes less per site); the Enter is
     * the site's event where the call has none (a collective outside every
     * region) */
    uint32_t enter_event;
    uint32_t leave_event;
} ws_site;
_Static_assert(sizeof(ws_site) == 24, "a site takes 24 bytes");

/* The instance of site st: the same key on every member's site. */
static inline uint64_t ws_site_instance(const ws_site *st)
{
    return (uint64_t)st->comm << 40 | st->seq;
}

/* The call path of site st's call (an OpenMP site: its construct's;
 * WS_NONE32 outside every region), which the Enter of the call names. */
static inline uint32_t ws_site_callpath(const ws_events *e, const ws_site *st)
{
    return e->kind[st->enter_event] == WS_EV_ENTER ? e->ref[st->enter_event] : WS_NONE32;
}

/* The member index of the root of site st's instance, or WS_NONE32: an
 * MPI collective's as its event records it, an OpenMP fork's is the
 * team's master. */
static inline uint32_t ws_site_root(const ws_events *e, const ws_site *st)
{
    if (st->cls == WS_SITE_OMP_FORK)
        return 0;
    return e->kind[st->event] == WS_EV_COLL_END ? e->coll_root[e->ref[st->event]] : WS_NONE32;
}

/* When location loc's call of site st began and ended. */
static inline double ws_site_enter(const ws_events *e, const ws_site *st)
{
    return ws_ev_time(e, st->enter_event);
}
static inline double ws_site_leave(const ws_events *e, const ws_site *st)
{
    return ws_ev_time(e, st->leave_event);
}

typedef struct ws_loc_sync {
    uint64_t n_messages;
    ws_msg *msgs;           /* per message row */
    uint32_t *leave_wide;   /* NULL, or per row the Leave event of the call holding the record, where one
                               call of the location spans more than 65,535 events */

    /* every event where something is exchanged (message records, channel-1
     * points, sites), ascending: a sparse replay visits only these, a
     * dense one meets them on its way.
     * sync_what tells what happens there without touching the event
     * arrays: WS_SYNC_* in the top 2 bits, the message row or site below.
     * sync_what lies in the block of sync_events (freed with it). */
    uint64_t n_sync_events;
    uint32_t *sync_events;
    uint32_t *sync_what;

    uint32_t n_sites;
    uint32_t n_member_of;
    ws_site *sites;         /* per site, in event order */
    /* every communicator the location has sites on, ascending (MPI_Init's
     * and MPI_Finalize's: t->n_comms and t->n_comms + 1), then in the same
     * order the location's index among its members (n_member_of of each):
     * ws_site_member.  It lies in the block of sites, after them. */
    const uint32_t *member_of;

    uint64_t clock_violations; /* receives that end before their send starts */
} ws_loc_sync;

typedef struct ws_sync {
    uint32_t n_locations;   /* of the whole trace */
    ws_loc_sync *locs;      /* indexed by location; filled for local ones */
    /* members owned by this process, of every communicator (the same for
     * all its instances, so not kept per site), and of MPI_Init and
     * MPI_Finalize (every location): ws_site_expected_local */
    uint32_t *comm_local;
    uint32_t *comm_members; /* per communicator its size, then the world's twice (MPI_Init, MPI_Finalize) */
    uint32_t n_comms;
    uint32_t n_local;
    uint32_t n_local_mpi;   /* of them MPI locations (rank != WS_NONE32): the members of MPI_Init and MPI_Finalize */
    uint8_t *region_mpi;    /* per region: WS_MPIFN_* class, see sync.c */
    uint32_t n_regions;
} ws_sync;

/* MPI function classes of regions, derived from their names. */
enum {
    WS_MPIFN_NONE = 0,       /* not an MPI region */
    WS_MPIFN_INIT = 1,       /* MPI_Init, MPI_Init_thread */
    WS_MPIFN_FINALIZE = 2,   /* MPI_Finalize */
    WS_MPIFN_SEND_BLOCKING = 3, /* MPI_Send, MPI_Ssend: may wait for the receiver */
    WS_MPIFN_RECV_BLOCKING = 4, /* MPI_Recv, MPI_Sendrecv, MPI_Sendrecv_replace */
    WS_MPIFN_WAIT = 5,       /* MPI_Wait, MPI_Waitany */
    WS_MPIFN_WAIT_MULTI = 6, /* MPI_Waitall, MPI_Waitsome */
    WS_MPIFN_TEST = 7,       /* MPI_Test* */
    WS_MPIFN_OTHER = 8
};

/* The members of site st's instance owned by this process. */
static inline uint32_t ws_site_expected_local(const ws_sync *s, const ws_site *st)
{
    if (st->cls == WS_SITE_INIT || st->cls == WS_SITE_FINALIZE)
        return s->n_local_mpi;
    return st->comm < s->n_comms ? s->comm_local[st->comm] : 0;
}

/* How many members site st's instance has: its communicator's size (the
 * world's for MPI_Init and MPI_Finalize). */
static inline uint32_t ws_site_members(const ws_sync *s, const ws_site *st)
{
    return s->comm_members[st->comm];
}

/* Location ls's index among the members of site st's instance. */
static inline uint32_t ws_site_member(const ws_loc_sync *ls, const ws_site *st)
{
    uint32_t n = ls->n_member_of;
    uint64_t k = ws_lower_bound_u32(ls->member_of, 0, n, st->comm);
    return k < n && ls->member_of[k] == st->comm ? ls->member_of[n + k] : WS_NONE32;
}

/* Builds the local parts (calls, requests, sites) for the given
 * locations and matches every receive to its send through the transport
 * (in-process all locations are local).  On failure nothing is kept. */
int ws_sync_build(const ws_trace *t, const uint32_t *locations, uint32_t n, ws_transport *tr, ws_sync **out,
                  ws_error *err);
/* The event where each message row of a location exchanges channel 1
 * (out: one per row), read from its synchronization events. */
void ws_sync_ch1_events(const ws_events *e, const ws_loc_sync *ls, uint32_t *out);
void ws_sync_free(ws_sync *s);

/* Does an event of this kind carry a message record (ref: message row)? */
static inline int ws_is_message_kind(uint8_t kind)
{
    return kind == WS_EV_SEND || kind == WS_EV_ISEND || kind == WS_EV_RECV || kind == WS_EV_IRECV;
}

/* Receives: message id of the matched send (WS_NONE64: unmatched). */
static inline uint64_t ws_msg_match(const ws_msg *m)
{
    return m->match_row == WS_NONE32 ? WS_NONE64 : ws_message_id(m->partner, m->match_row);
}
/* The message's id in the transports, on both sides: the send's location
 * and row. */
static inline uint64_t ws_msg_id(uint32_t loc, uint32_t row, const ws_msg *m)
{
    return (m->flags & WS_MSG_SEND) ? ws_message_id(loc, row) : ws_msg_match(m);
}
/* The channel this side of a replay's message produces on; the other
 * side produces on the other one (channel 0 flows from sender to
 * receiver in a forward replay, channel 1 back; a backward replay turns
 * both round).  -1 if the message exchanges nothing (cancelled, or a
 * receive without its send). */
static inline int ws_msg_produced_channel(const ws_msg *m, int backward)
{
    if ((m->flags & WS_MSG_CANCELLED) || (m->match_row == WS_NONE32 && !(m->flags & WS_MSG_SEND)))
        return -1;
    int is_send = (m->flags & WS_MSG_SEND) != 0;
    return (backward ? !is_send : is_send) ? 0 : 1;
}
/* The channels (bit c: channel c) that meet at an exchange event of the
 * message's location: at the record itself (at_record) channel 0, and
 * channel 1 too when the record is also its channel-1 point; at a
 * separate channel-1 point (a non-blocking call's completion or post)
 * channel 1. */
static inline int ws_msg_channels_at(const ws_msg *m, int at_record)
{
    if (!at_record)
        return 2;
    return (m->flags & WS_MSG_CH1_APART) ? 1 : 3;
}
/* enter and leave time, call path of the call holding the record */
static inline double ws_msg_enter(const ws_events *e, const ws_msg *m)
{
    return ws_ev_time(e, m->call);
}
static inline uint32_t ws_msg_leave_event(const ws_loc_sync *ls, const ws_msg *m)
{
    return ls->leave_wide ? ls->leave_wide[m - ls->msgs] : m->call + m->leave_delta;
}
static inline double ws_msg_leave(const ws_events *e, const ws_loc_sync *ls, const ws_msg *m)
{
    return ws_ev_time(e, ws_msg_leave_event(ls, m));
}
static inline uint32_t ws_msg_callpath(const ws_events *e, const ws_msg *m)
{
    return (m->flags & WS_MSG_NO_CALL) ? WS_NONE32 : e->ref[m->call];
}
/* receives: when the receive was posted (enter of the Recv or Irecv) */
static inline double ws_msg_post(const ws_events *e, const ws_msg *m)
{
    return ws_ev_time(e, m->other_call);
}
/* Leave time of the call whose Enter is event `enter` (its own time when
 * the call never leaves) */
static inline double ws_leave_of_enter(const ws_events *e, uint32_t enter)
{
    int depth = 0;
    for (uint64_t i = (uint64_t)enter + 1; i < e->n; i++) {
        if (e->kind[i] == WS_EV_ENTER)
            depth++;
        else if (e->kind[i] == WS_EV_LEAVE && depth-- == 0)
            return ws_ev_time(e, i);
    }
    return ws_ev_time(e, enter);
}
/* sends: enter, leave and call path of the call that completed the send */
static inline double ws_msg_done_enter(const ws_events *e, const ws_msg *m)
{
    return ws_ev_time(e, m->other_call);
}
static inline double ws_msg_done(const ws_events *e, const ws_msg *m)
{
    return ws_ev_time(e, m->done_leave);
}
static inline uint32_t ws_msg_done_callpath(const ws_events *e, const ws_msg *m)
{
    return (m->flags & WS_MSG_NO_DONE_CALL) ? WS_NONE32 : e->ref[m->other_call];
}

#endif
