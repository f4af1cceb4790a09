/* The trace store: global definitions, the call-path tree and, per
 * location, the events as parallel (columnar) arrays.
 *
 * Timestamps are seconds relative to the clock's global offset.  All
 * cross references use dense indices (0..n-1) into the store's tables;
 * the OTF2 identifiers are kept alongside for writing traces back.
 */
#ifndef WS_TRACE_TRACE_H
#define WS_TRACE_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include "../common/error.h"
#include "../common/util.h"

/* ---- event kinds (stored as uint8) ------------------------------------ */
enum ws_event_kind {
    WS_EV_ENTER = 1,             /* Enter           ref: call path    */
    WS_EV_LEAVE = 2,             /* Leave           ref: call path left */
    WS_EV_SEND = 3,              /* MpiSend         ref: message row  */
    WS_EV_ISEND = 4,             /* MpiIsend        ref: message row  */
    WS_EV_ISEND_COMPLETE = 5,    /* MpiIsendComplete ref: request row */
    WS_EV_IRECV_REQUEST = 6,     /* MpiIrecvRequest ref: request row  */
    WS_EV_RECV = 7,              /* MpiRecv         ref: message row  */
    WS_EV_IRECV = 8,             /* MpiIrecv        ref: message row  */
    WS_EV_REQUEST_TEST = 9,      /* MpiRequestTest  ref: request row  */
    WS_EV_REQUEST_CANCELLED = 10,/*                 ref: request row  */
    WS_EV_COLL_BEGIN = 11,       /* MpiCollectiveBegin ref: unused    */
    WS_EV_COLL_END = 12,         /* MpiCollectiveEnd ref: collective row */
    WS_EV_PROGRAM_BEGIN = 13,
    WS_EV_PROGRAM_END = 14,
    WS_EV_MEASUREMENT_ON = 15,
    WS_EV_MEASUREMENT_OFF = 16,
    /* threads (OpenMP, POSIX threads): ref is the row of the thread table
     * (thr_*) */
    WS_EV_THREAD_FORK = 17,          /* ThreadFork: model, requested threads (thr_a) */
    WS_EV_THREAD_JOIN = 18,          /* ThreadJoin: model */
    WS_EV_THREAD_TEAM_BEGIN = 19,    /* ThreadTeamBegin: team communicator */
    WS_EV_THREAD_TEAM_END = 20,      /* ThreadTeamEnd: team communicator */
    WS_EV_THREAD_ACQUIRE_LOCK = 21,  /* model, lock id (thr_a), acquisition order (thr_b) */
    WS_EV_THREAD_RELEASE_LOCK = 22,  /* model, lock id (thr_a), acquisition order (thr_b) */
    WS_EV_THREAD_TASK_CREATE = 23,   /* team, creating thread (thr_a), generation number (thr_b) */
    WS_EV_THREAD_TASK_SWITCH = 24,   /* team, creating thread (thr_a), generation number (thr_b) */
    WS_EV_THREAD_TASK_COMPLETE = 25, /* team, creating thread (thr_a), generation number (thr_b) */
    WS_EV_THREAD_CREATE = 26,        /* thread contingent, sequence count (thr_b) */
    WS_EV_THREAD_BEGIN = 27,         /* thread contingent, sequence count (thr_b) */
    WS_EV_THREAD_WAIT = 28,          /* thread contingent, sequence count (thr_b) */
    WS_EV_THREAD_END = 29,           /* thread contingent, sequence count (thr_b) */
    WS_EV_KIND_COUNT = 30
};

/* Is this a thread event (ref: row of the thread table)? */
static inline int ws_is_thread_kind(uint8_t kind)
{
    return kind >= WS_EV_THREAD_FORK && kind <= WS_EV_THREAD_END;
}

/* Region roles and paradigms use OTF2's numbering (OTF2_RegionRole,
 * OTF2_Paradigm) so that values round-trip unchanged. */

/* Collective operation types follow OTF2_CollectiveOp. */

typedef struct ws_region {
    uint64_t otf2_id;
    uint32_t name;           /* string index */
    uint32_t canonical_name; /* string index */
    uint32_t description;    /* string index */
    uint8_t role;            /* OTF2_RegionRole */
    uint8_t paradigm;        /* OTF2_Paradigm */
    uint32_t flags;          /* OTF2_RegionFlag */
    uint32_t source_file;    /* string index or WS_NONE32 */
    uint32_t begin_line;
    uint32_t end_line;
} ws_region;

enum ws_group_kind { /* follows OTF2_GroupType */
    WS_GROUP_UNKNOWN = 0,
    WS_GROUP_LOCATIONS = 1,
    WS_GROUP_REGIONS = 2,
    WS_GROUP_METRIC = 3,
    WS_GROUP_COMM_LOCATIONS = 4,
    WS_GROUP_COMM_GROUP = 5,
    WS_GROUP_COMM_SELF = 6
};

typedef struct ws_group {
    uint64_t otf2_id;
    uint32_t name;      /* string index */
    uint8_t type;       /* OTF2_GroupType */
    uint8_t paradigm;   /* OTF2_Paradigm */
    uint32_t flags;     /* OTF2_GroupFlag */
    uint64_t n_members;
    uint64_t *members;  /* raw OTF2 member values */
} ws_group;

typedef struct ws_comm {
    uint64_t otf2_id;
    uint32_t name;      /* string index */
    uint32_t group;     /* group index */
    uint32_t parent;    /* comm index or WS_NONE32 */
    uint32_t size;      /* number of ranks */
    uint32_t *rank_location; /* comm rank -> location index (WS_NONE32 if unknown) */
    int is_self;        /* MPI_COMM_SELF-like: every location is rank 0 */
} ws_comm;

typedef struct ws_system_node {
    uint64_t otf2_id;
    uint32_t name;       /* string index */
    uint32_t class_name; /* string index */
    uint32_t parent;     /* node index or WS_NONE32 */
} ws_system_node;

typedef struct ws_location_group {
    uint64_t otf2_id;
    uint32_t name;        /* string index */
    uint8_t type;         /* OTF2_LocationGroupType */
    uint32_t system_node; /* node index or WS_NONE32 */
} ws_location_group;

/* Event times are held in one of two forms:
 *  - compact (time == NULL), as the readers and the synthetic programs
 *    produce them: ticks since the clock's offset, the first of every
 *    block of WS_TICK_BLOCK events in tick_block, each event's distance
 *    from it in tick_delta (4 bytes per event); an event farther than
 *    2^32 - 2 ticks from its block's first (or before it) has
 *    WS_TICK_ESCAPE there and its ticks in the sorted escape table.
 *    Its seconds are (double)(int64_t)ticks * tick_scale, exactly what
 *    the reader computed before (tick_scale = 1.0 / resolution);
 *  - seconds (time != NULL, 8 bytes per event): times that are no whole
 *    ticks (simulated runs, corrected clocks).
 * ws_ev_time reads either; ws_events_widen turns the compact form into
 * seconds before times are written. */
#define WS_TICK_SHIFT 7
#define WS_TICK_BLOCK (1u << WS_TICK_SHIFT)
#define WS_TICK_ESCAPE UINT32_MAX

/* The number of blocks (tick_block entries) of n events. */
static inline uint64_t ws_tick_blocks(uint64_t n)
{
    return (n + WS_TICK_BLOCK - 1) / WS_TICK_BLOCK;
}

/* Columnar events of one location.  Arrays are separately allocated so
 * that each can be exposed as a zero-copy NumPy view. */
typedef struct ws_events {
    uint64_t n;
    double *time;          /* seconds, or NULL: the compact form */
    uint8_t *kind;
    uint32_t *ref;

    /* the compact form of the times (see above) */
    double tick_scale;
    uint64_t *tick_block;  /* (n + WS_TICK_BLOCK - 1) / WS_TICK_BLOCK */
    uint32_t *tick_delta;  /* n */
    uint64_t n_escapes, cap_escapes;
    uint32_t *escape_event; /* ascending */
    uint64_t *escape_ticks;

    uint64_t n_messages;   /* MpiSend/Isend/Recv/Irecv */
    uint32_t *msg_event;
    /* peer, comm and tag: or NULL, then in 16 bits (ws_msg_peer, ... read either) */
    uint32_t *msg_peer;    /* rank of the partner within msg_comm */
    uint32_t *msg_comm;    /* comm index */
    uint32_t *msg_tag;
    uint16_t *msg_peer16, *msg_comm16, *msg_tag16;
    uint64_t *msg_bytes;   /* or NULL: msg_bytes32 (ws_msg_bytes reads either) */
    uint32_t *msg_bytes32;

    uint64_t n_requests;   /* request ids of non-blocking operations */
    uint32_t *req_event;
    uint64_t *req_id;      /* or NULL: req_id32 (ws_req_id reads either) */
    uint32_t *req_id32;

    uint64_t n_collectives; /* MpiCollectiveEnd */
    uint32_t *coll_event;
    uint32_t *coll_comm;    /* comm index */
    uint32_t *coll_root;    /* comm rank or WS_NONE32 */
    uint8_t *coll_op;       /* OTF2_CollectiveOp */
    uint64_t *coll_sent;
    uint64_t *coll_received;

    uint64_t n_threads;     /* thread events (WS_EV_THREAD_*) */
    uint32_t *thr_event;
    uint32_t *thr_comm;     /* team or thread contingent: comm index, or WS_NONE32 */
    uint8_t *thr_model;     /* OTF2_Paradigm of forks, joins and locks (else 0) */
    uint64_t *thr_a;        /* requested threads, lock id or creating thread (else 0) */
    uint64_t *thr_b;        /* acquisition order, generation number or sequence count (else 0) */

    uint64_t n_skipped;     /* records of kinds the store does not keep */
} ws_events;

typedef struct ws_location {
    uint64_t otf2_id;
    uint32_t name;            /* string index */
    uint8_t type;             /* OTF2_LocationType */
    uint32_t group;           /* location group index */
    uint64_t n_events_defined;/* number of event records per definitions */
    uint32_t rank;            /* MPI rank (world) or WS_NONE32 (a thread that is no MPI location) */
    uint32_t process;         /* rank of its process: the MPI rank of its group's MPI location,
                                 else the group's position */
    uint32_t thread;          /* position among the locations of its group */
    int loaded;               /* events are present in `events` */
    ws_events events;
} ws_location;

typedef struct ws_cart_dim {
    uint32_t name; /* string index */
    uint32_t size;
    int periodic;
} ws_cart_dim;

typedef struct ws_cart_topology {
    uint64_t otf2_id;
    uint32_t name;     /* string index */
    uint32_t comm;     /* comm index */
    uint32_t n_dims;
    uint32_t *dims;    /* indices into trace->cart_dims */
    /* coordinates: for each rank of comm (comm->size), n_dims values;
     * WS_NONE32 where no coordinate was defined. */
    uint32_t n_ranks;
    uint32_t *coords;
} ws_cart_topology;

typedef struct ws_clock {
    uint64_t resolution;  /* ticks per second */
    uint64_t offset;      /* global offset in ticks */
    uint64_t length;      /* trace length in ticks */
    uint64_t realtime;    /* OTF2 realtime timestamp or 0 */
    int defined;
} ws_clock;

/* One ClockOffset record: at `time` (seconds, as event times) the global
 * clock of location index `location` is its timestamps plus `offset`
 * ticks, measured with standard deviation `stddev` ticks. */
typedef struct ws_clock_offset {
    uint32_t location;
    double time;
    int64_t offset;
    double stddev;
} ws_clock_offset;

/* The call-path tree: call path i has region cp_region[i] and parent
 * cp_parent[i] (WS_NONE32 for roots). */
typedef struct ws_callpaths {
    uint32_t n;
    size_t capacity;
    uint32_t *parent;
    uint32_t *region;
    uint32_t *first_child;
    uint32_t *next_sibling;
    uint32_t *depth;
    ws_map64 index; /* (parent+1)<<32 | region -> call path */
} ws_callpaths;

typedef struct ws_trace {
    char *path;          /* anchor file */
    char *directory;     /* experiment directory */

    ws_clock clock;

    uint32_t n_strings;
    char **strings;

    uint32_t n_regions;
    ws_region *regions;

    uint32_t n_groups;
    ws_group *groups;

    uint32_t n_comms;
    ws_comm *comms;

    uint32_t n_system_nodes;
    ws_system_node *system_nodes;

    uint32_t n_location_groups;
    ws_location_group *location_groups;

    uint32_t n_locations;
    ws_location *locations;

    uint32_t n_cart_dims;
    ws_cart_dim *cart_dims;
    uint32_t n_cart_topologies;
    ws_cart_topology *cart_topologies;

    ws_callpaths callpaths;

    /* allocated capacities of the tables above */
    size_t cap_strings, cap_regions, cap_groups, cap_comms, cap_system_nodes,
        cap_location_groups, cap_locations, cap_cart_dims, cap_cart_topologies;

    /* OTF2 id -> dense index maps (used while loading/writing) */
    ws_map64 string_ids, region_ids, group_ids, comm_ids, location_ids,
        location_group_ids, system_node_ids, cart_dim_ids, cart_topology_ids;
    /* fast region lookup when ids are small: region_lut[otf2_id] */
    uint32_t *region_lut;
    uint64_t region_lut_size;

    uint32_t world_comm;     /* comm index of MPI_COMM_WORLD or WS_NONE32 */
    uint32_t world_size;     /* number of MPI ranks */
    uint64_t n_events;       /* events stored over all loaded locations */
    int has_mpi_paradigm;
    /* ranks whose measurement was cut short (crash, MPI_Abort), e.g. "1,3",
     * kept in the archive property WAITSCOPE::CUT_SHORT_RANKS; NULL if none */
    char *cut_short_ranks;
    /* how the measurement recorded OpenMP (archive property
     * WAITSCOPE::OPENMP, written by the interposition library), e.g.
     * "recorded through OMPT (...)" or "not recorded: ..."; NULL if silent */
    char *openmp_recording;
    /* ClockOffset records of the locations' local definitions, written to
     * the archive (the OTF2 reader does not fill them: it does not apply
     * clock offsets); empty unless a producer (the interposition library's
     * unification) sets them */
    uint32_t n_clock_offsets;
    ws_clock_offset *clock_offsets;
} ws_trace;

/* ---- construction ------------------------------------------------------ */

ws_trace *ws_trace_new(void);
/* ws_trace_free: waitscope.h */
/* A deep copy of the store (trace_copy.c); NULL (and err set) on failure. */
ws_trace *ws_trace_copy(const ws_trace *t, ws_error *err);

/* Adds definitions; each returns the new dense index or WS_NONE32 on
 * allocation failure.  OTF2 ids must be unique per table. */
uint32_t ws_trace_add_string(ws_trace *t, uint64_t otf2_id, const char *s);
/* Returns the dense index of string s, adding it (with the next free OTF2
 * id) if it is not present.  Used by writers that build definitions. */
uint32_t ws_trace_intern_string(ws_trace *t, const char *s);

const char *ws_trace_string(const ws_trace *t, uint32_t index);
/* How messages name communicator c: "communicator 'NAME'", or for one
 * without a name "thread team N" (an OpenMP team) / "communicator N"
 * (N its OTF2 id); written into buf, which is returned. */
const char *ws_trace_comm_label(const ws_trace *t, uint32_t c, char *buf, size_t size);

/* Prefixes err's message with the trace's anchor path and the event file
 * of location loc (a dense index), e.g. "dir/traces.otf2: dir/traces/3.evt:
 * location 3: ...", so that an error found during the analysis names the
 * file it concerns.  Returns err->code. */
int ws_trace_error_at(const ws_trace *t, uint32_t loc, ws_error *err);

/* Prefixes err's message with the trace's anchor path unless it starts
 * with it already (ws_trace_error_at ran where the error was found).
 * Returns err->code. */
int ws_trace_error_in(const ws_trace *t, ws_error *err);

/* Frees a call-path tree's arrays and leaves it empty. */
void ws_callpaths_free(ws_callpaths *cp);
uint32_t ws_callpath_child(ws_callpaths *cp, uint32_t parent, uint32_t region);

/* Events storage helpers */
/* Reserves the kind and ref columns and the times for n events, in the
 * compact form when `ticks` (tick_scale set by the caller), else as
 * seconds.  Growing keeps the form. */
int ws_events_reserve(ws_events *ev, uint64_t n);
int ws_events_reserve_ticks(ws_events *ev, uint64_t n);
void ws_events_free(ws_events *ev);

/* Sets the time of event i (< the reserved size, set in order: i is the
 * next event) to `ticks` since the clock's offset, in the compact form;
 * -1 if the escape table cannot grow. */
int ws_events_set_ticks(ws_events *ev, uint64_t i, uint64_t ticks);

/* The ticks of an escaped event (ws_ev_time's slow path). */
uint64_t ws_events_escaped_ticks(const ws_events *ev, uint64_t i);

/* Event i's ticks since the clock's offset (compact form only). */
static inline uint64_t ws_ev_ticks(const ws_events *ev, uint64_t i)
{
    uint32_t d = ev->tick_delta[i];
    return d != WS_TICK_ESCAPE ? ev->tick_block[i >> WS_TICK_SHIFT] + d : ws_events_escaped_ticks(ev, i);
}

/* Event i's time in seconds, in either form. */
static inline double ws_ev_time(const ws_events *ev, uint64_t i)
{
    if (ev->time)
        return ev->time[i];
    return (double)(int64_t)ws_ev_ticks(ev, i) * ev->tick_scale;
}

/* Writes the times of all ev->n events, in seconds, to out. */
void ws_events_times(const ws_events *ev, double *out);

/* Where event i's time is held (to prefetch it). */
static inline const void *ws_ev_time_addr(const ws_events *ev, uint64_t i)
{
    return ev->time ? (const void *)&ev->time[i] : (const void *)&ev->tick_delta[i];
}

/* Turns compact times into seconds (before they are changed); 0, or -1
 * out of memory (nothing changed). */
int ws_events_widen(ws_events *ev);

/* Gives ev the times `time` (seconds, n of them, malloc'ed: ev owns
 * them now) in place of the ones it has, in either form. */
void ws_events_adopt_seconds(ws_events *ev, double *time);

/* A complete location's message sizes and request ids in 32 bits, its
 * messages' peers, communicators and tags in 16, where they all fit
 * (msg_bytes32, ...; the wider columns freed), as the readers and the
 * synthetic programs store them; 0, or -1 out of memory. */
int ws_events_narrow(ws_events *ev);

static inline uint64_t ws_msg_bytes(const ws_events *ev, uint64_t m)
{
    return ev->msg_bytes ? ev->msg_bytes[m] : ev->msg_bytes32[m];
}

static inline uint32_t ws_msg_peer(const ws_events *ev, uint64_t m)
{
    return ev->msg_peer ? ev->msg_peer[m] : ev->msg_peer16[m];
}

static inline uint32_t ws_msg_comm(const ws_events *ev, uint64_t m)
{
    return ev->msg_comm ? ev->msg_comm[m] : ev->msg_comm16[m];
}

static inline uint32_t ws_msg_tag(const ws_events *ev, uint64_t m)
{
    return ev->msg_tag ? ev->msg_tag[m] : ev->msg_tag16[m];
}

static inline uint64_t ws_req_id(const ws_events *ev, uint64_t r)
{
    return ev->req_id ? ev->req_id[r] : ev->req_id32[r];
}

/* Bytes held by the columns of ev. */
uint64_t ws_events_bytes(const ws_events *ev);

/* After definitions are complete: resolves communicator ranks to
 * locations, MPI ranks of locations, world communicator.  */
int ws_trace_resolve_definitions(ws_trace *t, ws_error *err);

/* ws_callpath_name (the full name of a call path): waitscope.h */

/* Index of the location that holds comm rank `rank` of comm `comm`,
 * for the location `self` (needed for COMM_SELF). WS_NONE32 if unknown. */
uint32_t ws_comm_location(const ws_trace *t, uint32_t comm, uint32_t rank, uint32_t self);

/* Rank of location loc in comm, or WS_NONE32 if not a member. */
uint32_t ws_comm_rank_of(const ws_trace *t, uint32_t comm, uint32_t loc);

/* Do some processes (location groups) have several locations (threads)? */
int ws_trace_has_threads(const ws_trace *t);

/* The part (of n_parts processes or threads sharing an analysis) that
 * holds each location: contiguous blocks of (nearly) equal size, (l *
 * n_parts) / n_locations; when processes have several locations
 * (threads), by location group, (g * n_parts) / n_groups, so that the
 * threads of a process stay together.  The parallel mode's Python side
 * (trace.block_owners) computes the same. */
void ws_block_owners(const ws_trace *t, uint32_t n_parts, uint32_t *owner);

#endif
