/* Synchronization data of one location (sync.h): one pass over its
 * events collects its message records, collective sites and
 * synchronization events.  Matching the messages between the locations
 * and the checks across locations are in sync.c. */
#include "sync_int.h"

#include <stdlib.h>
#include <string.h>

#include <otf2/otf2.h>

/* OTF2's numbers (paradigms, collective operations) come from its headers */

static uint8_t site_class_of(uint8_t op)
{
    switch (op) {
    case OTF2_COLLECTIVE_OP_BARRIER:
        return WS_SITE_BARRIER;
    case OTF2_COLLECTIVE_OP_BCAST:
    case OTF2_COLLECTIVE_OP_SCATTER:
    case OTF2_COLLECTIVE_OP_SCATTERV:
        return WS_SITE_1TON;
    case OTF2_COLLECTIVE_OP_GATHER:
    case OTF2_COLLECTIVE_OP_GATHERV:
    case OTF2_COLLECTIVE_OP_REDUCE:
        return WS_SITE_NTO1;
    case OTF2_COLLECTIVE_OP_ALLGATHER:
    case OTF2_COLLECTIVE_OP_ALLGATHERV:
    case OTF2_COLLECTIVE_OP_ALLTOALL:
    case OTF2_COLLECTIVE_OP_ALLTOALLV:
    case OTF2_COLLECTIVE_OP_ALLTOALLW:
    case OTF2_COLLECTIVE_OP_ALLREDUCE:
    case OTF2_COLLECTIVE_OP_REDUCE_SCATTER:
    case OTF2_COLLECTIVE_OP_REDUCE_SCATTER_BLOCK:
        return WS_SITE_NXN;
    case OTF2_COLLECTIVE_OP_SCAN:
    case OTF2_COLLECTIVE_OP_EXSCAN:
        return WS_SITE_SCAN;
    default:
        return WS_SITE_OTHER;
    }
}

uint8_t ws_sync_classify_region(const ws_trace *t, const ws_region *r)
{
    if (r->paradigm != OTF2_PARADIGM_MPI)
        return WS_MPIFN_NONE;
    const char *name = ws_trace_string(t, r->name);
    if (strcmp(name, "MPI_Init") == 0 || strcmp(name, "MPI_Init_thread") == 0)
        return WS_MPIFN_INIT;
    if (strcmp(name, "MPI_Finalize") == 0)
        return WS_MPIFN_FINALIZE;
    if (strcmp(name, "MPI_Send") == 0 || strcmp(name, "MPI_Ssend") == 0)
        return WS_MPIFN_SEND_BLOCKING;
    if (strcmp(name, "MPI_Recv") == 0 || strcmp(name, "MPI_Sendrecv") == 0 ||
        strcmp(name, "MPI_Sendrecv_replace") == 0)
        return WS_MPIFN_RECV_BLOCKING;
    if (strcmp(name, "MPI_Wait") == 0 || strcmp(name, "MPI_Waitany") == 0)
        return WS_MPIFN_WAIT;
    if (strcmp(name, "MPI_Waitall") == 0 || strcmp(name, "MPI_Waitsome") == 0)
        return WS_MPIFN_WAIT_MULTI;
    if (strncmp(name, "MPI_Test", 8) == 0)
        return WS_MPIFN_TEST;
    return WS_MPIFN_OTHER;
}


typedef struct frame {
    uint32_t callpath;
    uint32_t enter_event;
    double enter;
} frame;

/* records waiting for the leave time of the call that holds them */
typedef struct pending {
    uint32_t depth;
    uint32_t kind; /* 0 message record, 1 site, 2 send completion */
    uint64_t index;
} pending;

typedef struct loc_pass {
    frame *stack;
    size_t stack_cap;
    pending *pend;
    size_t pend_n, pend_cap;
    size_t site_cap;
    /* channel-1 exchange points that are not message records (event, row),
     * until they are merged into the synchronization events */
    uint32_t *ch1_event;
    uint32_t *ch1_row;
    size_t n_ch1, ch1_cap;
    /* per message row the Leave event of the call holding the record,
     * until the rows keep them as deltas (pack_leaves) */
    uint32_t *leave;
} loc_pass;

static int push_pending(loc_pass *p, uint32_t depth, uint32_t kind, uint64_t index)
{
    if (ws_grow((void **)&p->pend, &p->pend_cap, p->pend_n + 1, sizeof *p->pend) != 0)
        return -1;
    p->pend[p->pend_n].depth = depth;
    p->pend[p->pend_n].kind = kind;
    p->pend[p->pend_n].index = index;
    p->pend_n++;
    return 0;
}

/* room for one more site: the location's collectives and its MPI_Init
 * and MPI_Finalize are reserved at once (reserve_sites), so that growing
 * by doubling, which copies the sites into fresh pages each time, happens
 * only for further initialization calls */
static int grow_sites(ws_loc_sync *s, loc_pass *p, size_t cap)
{
    ws_site *a = ws_realloc(s->sites, cap * sizeof *s->sites);
    if (!a)
        return -1;
    s->sites = a;
    p->site_cap = cap;
    return 0;
}

static int add_site(ws_loc_sync *s, loc_pass *p)
{
    return s->n_sites < p->site_cap ? 0 : grow_sites(s, p, p->site_cap ? p->site_cap * 2 : 16);
}

static int reserve_sites(ws_loc_sync *s, loc_pass *p, uint64_t n)
{
    return n > SIZE_MAX / sizeof *s->sites ? -1 : grow_sites(s, p, (size_t)n);
}

static int add_ch1(loc_pass *p, uint32_t event, uint32_t row)
{
    size_t k = p->n_ch1, cap = p->ch1_cap;
    if (ws_grow((void **)&p->ch1_event, &cap, k + 1, sizeof *p->ch1_event) != 0)
        return -1;
    cap = p->ch1_cap;
    if (ws_grow((void **)&p->ch1_row, &cap, k + 1, sizeof *p->ch1_row) != 0)
        return -1;
    p->ch1_cap = cap;
    p->ch1_event[k] = event;
    p->ch1_row[k] = row;
    p->n_ch1++;
    return 0;
}

static int alloc_messages(ws_loc_sync *s, loc_pass *p, uint64_t n)
{
    s->n_messages = n;
    s->msgs = ws_calloc_dense(n ? (size_t)n : 1, sizeof *s->msgs);
    p->leave = ws_malloc_array(n ? (size_t)n : 1, sizeof *p->leave);
    return s->msgs && p->leave ? 0 : -1;
}

/* The rows keep their calls' Leave events as 16-bit deltas from the
 * calls' Enter events; where one does not fit (a call of more than 65,535
 * events), the location keeps them all as they are. */
static void pack_leaves(ws_loc_sync *s, loc_pass *p)
{
    uint32_t widest = 0;
    for (uint64_t m = 0; m < s->n_messages; m++)
        if (p->leave[m] - s->msgs[m].call > widest)
            widest = p->leave[m] - s->msgs[m].call;
    if (widest > UINT16_MAX) {
        s->leave_wide = p->leave;
        p->leave = NULL;
        return;
    }
    for (uint64_t m = 0; m < s->n_messages; m++)
        s->msgs[m].leave_delta = (uint16_t)(p->leave[m] - s->msgs[m].call);
}

/* a posted non-blocking receive, until its completion is seen */
typedef struct posted_recv {
    uint32_t call;  /* Enter event of the posting call (the event itself: none) */
    uint32_t event;
} posted_recv;

static int cmp_ch1(const void *a, const void *b)
{
    const uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Sorts the channel-1 exchange points by (event, row).  They are added
 * as their calls are met, so they mostly come in order (a point is out
 * of place when a later call completes an earlier request): an insertion
 * sort puts the few out of place right in O(n); only when that takes more
 * than a few moves per point is the order left to qsort. */
static int sort_ch1(loc_pass *p)
{
    const uint64_t n = p->n_ch1;
    if (n < 2)
        return 0;
    uint32_t *ev = p->ch1_event, *row = p->ch1_row;
    uint64_t moves = 0, budget = 4 * n;
    for (uint64_t k = 1; k < n && moves <= budget; k++) {
        uint32_t e = ev[k], r = row[k];
        uint64_t i = k;
        while (i > 0 && (ev[i - 1] > e || (ev[i - 1] == e && row[i - 1] > r)) && moves <= budget) {
            ev[i] = ev[i - 1];
            row[i] = row[i - 1];
            i--;
            moves++;
        }
        ev[i] = e;
        row[i] = r;
    }
    if (moves <= budget)
        return 0;
    uint64_t *pairs = ws_malloc_array(n, sizeof *pairs);
    if (!pairs)
        return -1;
    for (uint64_t k = 0; k < n; k++)
        pairs[k] = ((uint64_t)ev[k] << 32) | row[k];
    qsort(pairs, n, sizeof *pairs, cmp_ch1);
    for (uint64_t k = 0; k < n; k++) {
        ev[k] = (uint32_t)(pairs[k] >> 32);
        row[k] = (uint32_t)pairs[k];
    }
    free(pairs);
    return 0;
}

/* (communicator, location) -> rank, for every non-self communicator: a
 * linear search per location and communicator made building the sync data
 * O(locations^2) on wide communicators. */
int ws_sync_rank_map(const ws_trace *t, ws_map64 *m)
{
    for (uint32_t c = 0; c < t->n_comms; c++) {
        const ws_comm *cm = &t->comms[c];
        if (cm->is_self)
            continue;
        for (uint32_t r = 0; r < cm->size; r++) {
            uint64_t key = ((uint64_t)c << 32) | cm->rank_location[r];
            if (cm->rank_location[r] != WS_NONE32 && !ws_map64_get(m, key, NULL) && ws_map64_put(m, key, r) != 0)
                return -1;
        }
    }
    return 0;
}

/* the rank of `loc` in `comm` (as ws_comm_rank_of) */
uint32_t ws_sync_comm_rank(const ws_trace *t, const ws_map64 *ranks, uint32_t comm, uint32_t loc)
{
    if (comm >= t->n_comms)
        return WS_NONE32;
    if (t->comms[comm].is_self)
        return 0;
    uint64_t r;
    return ws_map64_get(ranks, ((uint64_t)comm << 32) | loc, &r) ? (uint32_t)r : WS_NONE32;
}

/* The request id of event i (WS_NONE64: none), asked for in event order
 * (the request table is sorted by event; *cursor only moves forward), and
 * only at the events that can have one. */
static inline uint64_t request_at(const ws_events *e, uint64_t *cursor, uint64_t i)
{
    while (*cursor < e->n_requests && e->req_event[*cursor] < i)
        (*cursor)++;
    return *cursor < e->n_requests && e->req_event[*cursor] == i ? ws_req_id(e, *cursor) : WS_NONE64;
}

/* An OpenMP site of the thread team `team` (sync.h: the fork at the
 * thread's Enter of the parallel region, rooted at the team's master;
 * a barrier at its Leave), numbered among the team's sites. */
static int add_omp_site(const ws_trace *t, ws_loc_sync *s, loc_pass *p, uint32_t loc, uint32_t team,
                        comm_counter *comms, const ws_map64 *ranks, uint8_t cls, uint8_t op, uint32_t event,
                        uint32_t enter_event, ws_error *err)
{
    comm_counter *cc = &comms[team];
    if (!cc->known) {
        cc->rank = ws_sync_comm_rank(t, ranks, team, loc);
        cc->known = 1;
    }
    if (cc->rank == WS_NONE32) {
        ws_error_set(err, WS_ERR_MATCH, "location %u: event %u belongs to a thread team of which the location is "
                     "not a member", (unsigned)loc, (unsigned)event);
        return ws_trace_error_at(t, loc, err);
    }
    if (team >= (1u << 19))
        return ws_error_set(err, WS_ERR_ARGUMENT, "more than 2^19 communicators are not supported");
    if (add_site(s, p) != 0)
        return ws_error_nomem(err, "collective sites");
    uint32_t k = s->n_sites++;
    s->sites[k] = (ws_site){
        .comm = team,
        .seq = (uint32_t)cc->count++,
        .event = event,
        .cls = cls,
        .op = op,
        .enter_event = enter_event,
        .leave_event = event,
    };
    return WS_OK;
}

/* The location's index among the members of each communicator it has
 * sites on (ws_loc_sync.member_of), placed after its sites.  Its MPI_Init
 * and MPI_Finalize take the MPI locations (a process's other threads take
 * no part). */
static int member_table(const ws_trace *t, ws_loc_sync *s, loc_pass *p, uint32_t loc, const comm_counter *comms,
                        uint64_t n_init, uint64_t n_finalize)
{
    uint32_t n = (n_init > 0) + (n_finalize > 0);
    for (uint32_t c = 0; c < t->n_comms; c++)
        n += comms[c].count > 0;
    s->n_member_of = n;
    if (!n)
        return 0;
    size_t room = ((size_t)n * 2 * sizeof(uint32_t) + sizeof *s->sites - 1) / sizeof *s->sites;
    if (s->n_sites + room > p->site_cap && grow_sites(s, p, s->n_sites + room) != 0)
        return -1;
    uint32_t *m = (uint32_t *)(void *)(s->sites + s->n_sites), k = 0;
    for (uint32_t c = 0; c < t->n_comms; c++)
        if (comms[c].count > 0) {
            m[k] = c;
            m[n + k++] = comms[c].rank;
        }
    for (uint32_t x = 0; x < 2; x++)
        if (x ? n_finalize > 0 : n_init > 0) {
            m[k] = t->n_comms + x;
            m[n + k++] = t->locations[loc].rank;
        }
    s->member_of = m;
    return 0;
}

int ws_sync_build_location(const ws_trace *t, const ws_sync *sync, uint32_t loc, ws_loc_sync *s, uint64_t *init_count,
                           uint64_t *finalize_count, comm_counter *comms, const ws_map64 *ranks, ws_error *err)
{
    const ws_location *l = &t->locations[loc];
    const ws_events *e = &l->events;
    loc_pass p;
    memset(&p, 0, sizeof p);
    int rc = WS_OK;
    ws_map64 irecv_posts; /* request id -> index into posts */
    ws_map64 isend_row;   /* request id -> message row */
    posted_recv *posts = NULL;
    size_t n_posts = 0, cap_posts = 0;
    ws_map64_init(&irecv_posts);
    ws_map64_init(&isend_row);
    uint32_t depth = 0;
    uint64_t req_cursor = 0;
    uint32_t n_init = 0, n_finalize = 0;
    /* OpenMP: the thread team the location is in (WS_NONE32: none), and
     * whether its parallel region is still to be entered */
    uint32_t team = WS_NONE32;
    int fork_pending = 0;

    if (alloc_messages(s, &p, e->n_messages) != 0) {
        rc = ws_error_nomem(err, "message annotations");
        goto done;
    }
    if (reserve_sites(s, &p, e->n_collectives + 2) != 0) {
        rc = ws_error_nomem(err, "collective sites");
        goto done;
    }
    for (uint64_t m = 0; m < e->n_messages; m++) {
        s->msgs[m].match_row = WS_NONE32;
        uint32_t partner = ws_comm_location(t, ws_msg_comm(e, m), ws_msg_peer(e, m), loc);
        if (partner == WS_NONE32) {
            rc = ws_error_set(err, WS_ERR_MATCH,
                              "location %u: message record %llu names rank %u of communicator '%s', which has no "
                              "location",
                              (unsigned)loc, (unsigned long long)m, (unsigned)ws_msg_peer(e, m),
                              ws_trace_string(t, t->comms[ws_msg_comm(e, m)].name));
            ws_trace_error_at(t, loc, err);
            goto done;
        }
        s->msgs[m].partner = partner;
    }

    for (uint64_t i = 0; i < e->n; i++) {
        uint8_t kind = e->kind[i];
        double time = ws_ev_time(e, i);
        const frame *top = depth ? &p.stack[depth - 1] : NULL;
        /* the MPI function around a message or request event (looked up
         * only there: regions and synchronizations are most events) */
        uint8_t top_fn = WS_MPIFN_NONE;
        if (top && kind != WS_EV_ENTER && kind != WS_EV_LEAVE && kind != WS_EV_COLL_BEGIN && kind != WS_EV_COLL_END)
            top_fn = sync->region_mpi[t->callpaths.region[top->callpath]];

        switch (kind) {
        case WS_EV_ENTER:
            if (ws_grow((void **)&p.stack, &p.stack_cap, (size_t)depth + 1, sizeof *p.stack) != 0) {
                rc = ws_error_nomem(err, "call stack");
                goto done;
            }
            p.stack[depth].callpath = e->ref[i];
            p.stack[depth].enter_event = (uint32_t)i;
            p.stack[depth].enter = time;
            depth++;
            if (fork_pending) {
                /* the thread starts the team's parallel region */
                fork_pending = 0;
                if ((rc = add_omp_site(t, s, &p, loc, team, comms, ranks, WS_SITE_OMP_FORK, WS_SITE_OP_OMP_FORK,
                                       (uint32_t)i, (uint32_t)i, err)))
                    goto done;
            }
            break;
        case WS_EV_LEAVE: {
            if (depth == 0) {
                rc = ws_error_set(err, WS_ERR_FORMAT, "location %u: unbalanced leave at event %llu", (unsigned)loc,
                                  (unsigned long long)i);
                ws_trace_error_at(t, loc, err);
                goto done;
            }
            /* records of this call learn its leave time */
            while (p.pend_n && p.pend[p.pend_n - 1].depth == depth) {
                pending *q = &p.pend[--p.pend_n];
                if (q->kind == 0) {
                    ws_msg *r = &s->msgs[q->index];
                    p.leave[q->index] = (uint32_t)i;
                    /* a send is done when its call returns, unless a later
                     * MpiIsendComplete says otherwise */
                    if (r->flags & WS_MSG_SEND)
                        r->done_leave = (uint32_t)i;
                } else if (q->kind == 1) {
                    s->sites[q->index].leave_event = (uint32_t)i;
                } else {
                    s->msgs[q->index].done_leave = (uint32_t)i;
                }
            }
            uint32_t cp = e->ref[i];
            uint8_t fn = sync->region_mpi[t->callpaths.region[cp]];
            if (team != WS_NONE32) {
                const ws_region *rg = &t->regions[t->callpaths.region[cp]];
                if (rg->paradigm == OTF2_PARADIGM_OPENMP &&
                    (rg->role == OTF2_REGION_ROLE_BARRIER || rg->role == OTF2_REGION_ROLE_IMPLICIT_BARRIER) &&
                    (rc = add_omp_site(t, s, &p, loc, team, comms, ranks, WS_SITE_OMP_BARRIER,
                                       rg->role == OTF2_REGION_ROLE_BARRIER ? WS_SITE_OP_OMP_EBARRIER
                                                                            : WS_SITE_OP_OMP_IBARRIER,
                                       (uint32_t)i, p.stack[depth - 1].enter_event, err)))
                    goto done;
            }
            if ((fn == WS_MPIFN_INIT || fn == WS_MPIFN_FINALIZE) && t->locations[loc].rank != WS_NONE32) {
                if (add_site(s, &p) != 0) {
                    rc = ws_error_nomem(err, "collective sites");
                    goto done;
                }
                uint32_t k = s->n_sites++;
                uint32_t seq = fn == WS_MPIFN_INIT ? n_init++ : n_finalize++;
                s->sites[k] = (ws_site){
                    .comm = t->n_comms + (fn == WS_MPIFN_INIT ? 0u : 1u),
                    .seq = seq,
                    .event = (uint32_t)i,
                    .cls = fn == WS_MPIFN_INIT ? WS_SITE_INIT : WS_SITE_FINALIZE,
                    .op = 0xff,
                    .enter_event = p.stack[depth - 1].enter_event,
                    .leave_event = (uint32_t)i,
                };
            }
            depth--;
            break;
        }
        case WS_EV_SEND:
        case WS_EV_ISEND:
        case WS_EV_RECV:
        case WS_EV_IRECV: {
            uint32_t m = e->ref[i];
            int is_send = kind == WS_EV_SEND || kind == WS_EV_ISEND;
            int nonblocking = kind == WS_EV_ISEND || kind == WS_EV_IRECV;
            uint64_t req = nonblocking ? request_at(e, &req_cursor, i) : WS_NONE64;
            uint8_t flags = (uint8_t)((is_send ? WS_MSG_SEND : 0) | (nonblocking ? WS_MSG_NONBLOCKING : 0));
            ws_msg *r = &s->msgs[m];
            if (!top)
                flags |= WS_MSG_NO_CALL | WS_MSG_NO_DONE_CALL;
            r->call = top ? top->enter_event : (uint32_t)i;
            p.leave[m] = (uint32_t)i;
            r->other_call = r->call;
            r->done_leave = (uint32_t)i;
            if (kind == WS_EV_SEND && top_fn == WS_MPIFN_SEND_BLOCKING)
                flags |= WS_MSG_MAY_BLOCK;
            if (kind == WS_EV_RECV && top_fn == WS_MPIFN_RECV_BLOCKING)
                flags |= WS_MSG_MAY_BLOCK;
            if (kind == WS_EV_IRECV) {
                if (top_fn == WS_MPIFN_WAIT || top_fn == WS_MPIFN_WAIT_MULTI)
                    flags |= WS_MSG_MAY_BLOCK;
                if (top_fn == WS_MPIFN_WAIT_MULTI)
                    flags |= WS_MSG_MULTI;
                uint64_t k;
                if (req != WS_NONE64 && ws_map64_get(&irecv_posts, req, &k)) {
                    ws_map64_remove(&irecv_posts, req);
                    r->other_call = posts[k].call;
                    flags |= WS_MSG_CH1_APART;
                    if (add_ch1(&p, posts[k].event, m) != 0) {
                        rc = ws_error_nomem(err, "request table");
                        goto done;
                    }
                }
            }
            if (kind == WS_EV_ISEND && req != WS_NONE64) {
                if (ws_map64_put(&isend_row, req, m) != 0) {
                    rc = ws_error_nomem(err, "request table");
                    goto done;
                }
            }
            r->flags = flags;
            if (depth && push_pending(&p, depth, 0, m) != 0) {
                rc = ws_error_nomem(err, "pending records");
                goto done;
            }
            break;
        }
        case WS_EV_IRECV_REQUEST: {
            uint64_t req = request_at(e, &req_cursor, i);
            if (req != WS_NONE64) {
                if (ws_grow((void **)&posts, &cap_posts, n_posts + 1, sizeof *posts) != 0 ||
                    ws_map64_put(&irecv_posts, req, n_posts) != 0) {
                    rc = ws_error_nomem(err, "request table");
                    goto done;
                }
                posts[n_posts].call = top ? top->enter_event : (uint32_t)i;
                posts[n_posts].event = (uint32_t)i;
                n_posts++;
            }
            break;
        }
        case WS_EV_ISEND_COMPLETE: {
            uint64_t req = request_at(e, &req_cursor, i);
            if (req != WS_NONE64) {
                uint64_t row;
                if (ws_map64_get(&isend_row, req, &row)) {
                    ws_map64_remove(&isend_row, req);
                    ws_msg *r = &s->msgs[row];
                    r->other_call = top ? top->enter_event : (uint32_t)i;
                    r->done_leave = (uint32_t)i;
                    r->flags |= WS_MSG_CH1_APART;
                    if (top)
                        r->flags &= (uint8_t)~WS_MSG_NO_DONE_CALL;
                    else
                        r->flags |= WS_MSG_NO_DONE_CALL;
                    if (top_fn == WS_MPIFN_WAIT || top_fn == WS_MPIFN_WAIT_MULTI)
                        r->flags |= WS_MSG_MAY_BLOCK;
                    if (top_fn == WS_MPIFN_WAIT_MULTI)
                        r->flags |= WS_MSG_MULTI;
                    if (add_ch1(&p, (uint32_t)i, (uint32_t)row) != 0 ||
                        (depth && push_pending(&p, depth, 2, row) != 0)) {
                        rc = ws_error_nomem(err, "pending records");
                        goto done;
                    }
                }
            }
            break;
        }
        case WS_EV_REQUEST_CANCELLED: {
            uint64_t req = request_at(e, &req_cursor, i);
            if (req != WS_NONE64) {
                uint64_t row;
                if (ws_map64_get(&isend_row, req, &row)) {
                    ws_map64_remove(&isend_row, req);
                    s->msgs[row].flags |= WS_MSG_CANCELLED;
                }
                ws_map64_remove(&irecv_posts, req);
            }
            break;
        }
        case WS_EV_COLL_END: {
            uint32_t c = e->ref[i];
            uint32_t comm = e->coll_comm[c];
            const ws_comm *cm = &t->comms[comm];
            comm_counter *cc = &comms[comm];
            if (!cc->known) {
                cc->rank = ws_sync_comm_rank(t, ranks, comm, loc);
                cc->known = 1;
            }
            if (cc->rank == WS_NONE32) {
                rc = ws_error_set(err, WS_ERR_MATCH,
                                  "location %u: collective operation at event %llu on communicator '%s', of which "
                                  "the location is not a member",
                                  (unsigned)loc, (unsigned long long)i, ws_trace_string(t, cm->name));
                ws_trace_error_at(t, loc, err);
                goto done;
            }
            if (comm >= (1u << 19)) {
                rc = ws_error_set(err, WS_ERR_ARGUMENT, "more than 2^19 communicators are not supported");
                goto done;
            }
            if (add_site(s, &p) != 0) {
                rc = ws_error_nomem(err, "collective sites");
                goto done;
            }
            uint32_t k = s->n_sites++;
            s->sites[k] = (ws_site){
                .comm = comm,
                .seq = (uint32_t)cc->count++,
                .event = (uint32_t)i,
                .cls = site_class_of(e->coll_op[c]),
                .op = e->coll_op[c],
                .enter_event = top ? top->enter_event : (uint32_t)i,
                .leave_event = (uint32_t)i,
            };
            if (depth && push_pending(&p, depth, 1, k) != 0) {
                rc = ws_error_nomem(err, "pending records");
                goto done;
            }
            break;
        }
        case WS_EV_THREAD_TEAM_BEGIN:
            team = e->thr_comm[e->ref[i]];
            fork_pending = team != WS_NONE32;
            break;
        case WS_EV_THREAD_TEAM_END:
            team = WS_NONE32;
            fork_pending = 0;
            break;
        default:
            break;
        }
    }
    if (sort_ch1(&p) != 0) {
        rc = ws_error_nomem(err, "request table");
        goto done;
    }
    if (e->n_messages > WS_SYNC_INDEX || s->n_sites > WS_SYNC_INDEX) {
        rc = ws_error_set(err, WS_ERR_ARGUMENT, "location %u: more than 2^30 messages or collectives",
                          (unsigned)loc);
        goto done;
    }
    /* merge the three ascending lists of exchange events (both arrays in
     * one block: one allocation, large enough for huge pages sooner) */
    size_t n_exchanges = e->n_messages + p.n_ch1 + s->n_sites + 1;
    s->sync_events = ws_malloc_array(2 * n_exchanges, sizeof *s->sync_events);
    if (!s->sync_events) {
        rc = ws_error_nomem(err, "synchronization events");
        goto done;
    }
    s->sync_what = s->sync_events + n_exchanges;
    {
        uint64_t i = 0, j = 0, k = 0, n = 0;
        while (i < e->n_messages || j < p.n_ch1 || k < s->n_sites) {
            uint32_t a = i < e->n_messages ? e->msg_event[i] : UINT32_MAX;
            uint32_t b = j < p.n_ch1 ? p.ch1_event[j] : UINT32_MAX;
            uint32_t c = k < s->n_sites ? s->sites[k].event : UINT32_MAX;
            uint32_t m = a < b ? (a < c ? a : c) : (b < c ? b : c);
            /* one event is at most one of them */
            if (a == m)
                s->sync_what[n] = WS_SYNC_RECORD | (uint32_t)i++;
            else if (b == m)
                s->sync_what[n] = WS_SYNC_CH1 | p.ch1_row[j++];
            else
                s->sync_what[n] = WS_SYNC_SITE | (uint32_t)k++;
            s->sync_events[n++] = m;
        }
        s->n_sync_events = n;
    }
    pack_leaves(s, &p);
    if (member_table(t, s, &p, loc, comms, n_init, n_finalize) != 0) {
        rc = ws_error_nomem(err, "collective sites");
        goto done;
    }
    *init_count = n_init;
    *finalize_count = n_finalize;
done:
    free(p.stack);
    free(p.pend);
    free(p.ch1_event);
    free(p.ch1_row);
    free(p.leave);
    free(posts);
    ws_map64_free(&irecv_posts);
    ws_map64_free(&isend_row);
    return rc;
}
