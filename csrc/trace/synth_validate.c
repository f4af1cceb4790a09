/* Synthetic programs, passes 0 and 1: communicators, validation and exact sizes (see synth.c). */
#include "synth_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- pass 0: structure, communicators -------------------------------------- */

int synth_check_offsets(synth *s, const int64_t *ptr, uint64_t count, const char *what)
{
    if (!ptr)
        return ARG_FAIL("synthetic program: missing %s offsets", what);
    if (ptr[0] != 0)
        return ARG_FAIL("synthetic program: %s offsets must start at 0", what);
    for (uint64_t i = 0; i < count; i++)
        if (ptr[i + 1] < ptr[i])
            return ARG_FAIL("synthetic program: %s offsets decrease at %llu", what, (unsigned long long)i);
    return WS_OK;
}

int synth_setup_comms(synth *s)
{
    const ws_synth_program *p = s->p;
    if (p->n_comms > UINT32_MAX - 3)
        return ARG_FAIL("synthetic program: too many communicators");
    s->n_xcomm = p->n_comms + 1;
    s->comm = ws_calloc(s->n_xcomm, sizeof *s->comm);
    if (!s->comm)
        return ws_error_nomem(s->err, "communicators");
    xcomm *w = &s->comm[0];
    w->size = s->n;
    w->members = ws_malloc_array(s->n, sizeof *w->members);
    if (!w->members)
        return ws_error_nomem(s->err, "communicators");
    for (uint32_t r = 0; r < s->n; r++)
        w->members[r] = r;
    w->trace_comm = 0;
    w->name = "MPI_COMM_WORLD";
    if (p->n_comms) {
        int rc = synth_check_offsets(s, p->comm_ptr, p->n_comms, "communicator");
        if (rc)
            return rc;
    }
    for (uint32_t i = 0; i < p->n_comms; i++) {
        xcomm *c = &s->comm[i + 1];
        int64_t size = p->comm_ptr[i + 1] - p->comm_ptr[i];
        c->name = p->comm_names && p->comm_names[i] ? p->comm_names[i] : "communicator";
        if (size <= 0 || size > (int64_t)s->n)
            return ARG_FAIL("communicator '%s' has %lld members (world has %u ranks)", c->name, (long long)size,
                            (unsigned)s->n);
        c->size = (uint32_t)size;
        c->trace_comm = i + 2; /* after MPI_COMM_WORLD and MPI_COMM_SELF */
        c->members = ws_malloc_array(c->size, sizeof *c->members);
        if (!c->members)
            return ws_error_nomem(s->err, "communicators");
        for (uint32_t k = 0; k < c->size; k++) {
            int64_t w_rank = p->comm_members[p->comm_ptr[i] + k];
            if (w_rank < 0 || w_rank >= (int64_t)s->n)
                return ARG_FAIL("communicator '%s': member %lld is not a world rank", c->name, (long long)w_rank);
            uint64_t key = ((uint64_t)(i + 1) << 32) | (uint64_t)w_rank;
            if (ws_map64_get(&s->comm_rank, key, NULL))
                return ARG_FAIL("communicator '%s': rank %lld is listed twice", c->name, (long long)w_rank);
            if (ws_map64_put(&s->comm_rank, key, k) != 0)
                return ws_error_nomem(s->err, "communicators");
            c->members[k] = (uint32_t)w_rank;
        }
    }
    return WS_OK;
}

/* ---- pass 1: validation and sizes ------------------------------------------- */

int synth_validate(synth *s)
{
    const ws_synth_program *p = s->p;
    int rc;
    char what[256];
    /* per (comm, member) collective call counters */
    uint64_t n_counts = 0;
    for (uint32_t c = 0; c < s->n_xcomm; c++) {
        s->comm[c].count_base = n_counts;
        n_counts += s->comm[c].size;
    }
    s->n_counts = n_counts;
    s->counts = ws_calloc(n_counts, sizeof *s->counts);
    s->req_base = ws_calloc((size_t)s->n + 1, sizeof *s->req_base);
    size_t n_loc = (size_t)s->n * s->T;
    s->loc_events = ws_calloc(n_loc, sizeof *s->loc_events);
    s->loc_threads = ws_calloc(n_loc, sizeof *s->loc_threads);
    if (!s->counts || !s->req_base || !s->loc_events || !s->loc_threads)
        return ws_error_nomem(s->err, "program tables");
    if ((rc = synth_setup_teams(s)))
        return rc;
    for (uint32_t r = 0; r < s->n; r++)
        s->counts[s->comm[0].count_base + r] = 2; /* MPI_Init and MPI_Finalize */

    uint32_t *stack = NULL;
    size_t stack_cap = 0;
    uint64_t n_requests = 0;
    for (uint32_t r = 0; r < s->n; r++) {
        rank_state *st = &s->st[r];
        uint64_t first = (uint64_t)p->rank_ptr[r], n_user = n_user_ops(s, r);
        int64_t n_dur = p->dur_ptr[r + 1] - p->dur_ptr[r];
        int64_t n_req = p->req_ptr[r + 1] - p->req_ptr[r];
        uint32_t depth = 0;
        /* ProgramBegin, Enter main, Enter/Leave MPI_Init, Enter/Leave
         * MPI_Finalize, Leave main, ProgramEnd */
        uint64_t n_ev = 8, n_msg = 0, n_rq = 0, n_coll = 0;
        for (uint64_t k = 0; k < n_user; k++) {
            const int64_t *op = op_row(s, first + k);
            int kind = (int)op[0];
            int64_t a = op[1], b = op[2], size = op[3], c = op[4];
#define OP_FAIL(...)                                                                      \
    do {                                                                                  \
        synth_describe(s, r, k + 1, what, sizeof what);                                         \
        char detail__[512];                                                               \
        snprintf(detail__, sizeof detail__, __VA_ARGS__);                                 \
        rc = ARG_FAIL("%s: %s", what, detail__);                                          \
        goto fail;                                                                        \
    } while (0)
            if (kind < WS_SYNTH_COMPUTE || kind >= WS_SYNTH_OP_END)
                OP_FAIL("unknown operation kind %d", kind);
            if (kind > WS_SYNTH_PARALLEL)
                OP_FAIL("operation kind %d belongs to a thread of a parallel region", kind);
            if (kind == WS_SYNTH_COMPUTE || kind == WS_SYNTH_ENTER || kind == WS_SYNTH_LEAVE) {
                if (a < 0 || (uint64_t)a >= p->n_regions)
                    OP_FAIL("unknown region %lld", (long long)a);
            }
            if (is_p2p(kind) || is_collective(kind)) {
                if (c < 0 || (uint64_t)c >= s->n_xcomm)
                    OP_FAIL("unknown communicator %lld", (long long)c);
                if (comm_rank(s, (uint32_t)c, r) == WS_NONE32)
                    OP_FAIL("rank %u is not a member of %s", (unsigned)r, s->comm[c].name);
                if (size < 0)
                    OP_FAIL("negative message size %lld", (long long)size);
            }
            switch (kind) {
            case WS_SYNTH_COMPUTE: {
                if (b < 0 || b >= n_dur)
                    OP_FAIL("duration index %lld out of range", (long long)b);
                double d = p->durations[p->dur_ptr[r] + b];
                if (!(d >= 0.0) || !(d * s->res < (double)TICKS_MAX))
                    OP_FAIL("invalid duration %g s", d);
                n_ev += 2;
                if (depth + 1 > s->max_depth)
                    s->max_depth = depth + 1;
                break;
            }
            case WS_SYNTH_ENTER:
                if (ws_grow((void **)&stack, &stack_cap, (size_t)depth + 1, sizeof *stack) != 0) {
                    rc = ws_error_nomem(s->err, "region stack");
                    goto fail;
                }
                stack[depth++] = (uint32_t)a;
                if (depth > s->max_depth)
                    s->max_depth = depth;
                n_ev += 1;
                break;
            case WS_SYNTH_LEAVE:
                if (depth == 0 || stack[depth - 1] != (uint32_t)a)
                    OP_FAIL("region '%s' is not the innermost open region", region_name(s, a));
                depth--;
                n_ev += 1;
                break;
            case WS_SYNTH_PARALLEL:
                if ((rc = synth_validate_team(s, r, k + 1, a, depth)))
                    goto fail;
                st->n_teams++;
                break;
            case WS_SYNTH_SEND:
            case WS_SYNTH_SSEND:
            case WS_SYNTH_RECV:
            case WS_SYNTH_ISEND:
            case WS_SYNTH_IRECV:
                if (a < 0 || a >= (int64_t)s->comm[c].size)
                    OP_FAIL("peer rank %lld is outside %s of size %u", (long long)a, s->comm[c].name,
                            (unsigned)s->comm[c].size);
                if (b < 0 || b > (int64_t)UINT32_MAX)
                    OP_FAIL("tag %lld is not a valid OTF2 tag", (long long)b);
                n_ev += 3;
                if (kind == WS_SYNTH_IRECV) {
                    n_rq += 1;
                } else {
                    n_msg += 1;
                    if (kind == WS_SYNTH_ISEND)
                        n_rq += 1;
                }
                if (kind == WS_SYNTH_ISEND || kind == WS_SYNTH_IRECV)
                    n_requests++;
                break;
            case WS_SYNTH_WAIT:
            case WS_SYNTH_WAITALL:
                if (a < 0 || b < 0 || a > n_req || b > n_req - a)
                    OP_FAIL("request list [%lld, %lld) out of range", (long long)a, (long long)(a + b));
                if (kind == WS_SYNTH_WAIT && b != 1)
                    OP_FAIL("MPI_Wait needs exactly one request");
                /* completions: one record each; MpiIrecv also carries a
                 * message (counted as an upper bound) */
                n_ev += 2 + (uint64_t)b;
                n_rq += (uint64_t)b;
                n_msg += (uint64_t)b;
                break;
            default: /* collectives */
                if (has_root(kind) && (a < 0 || a >= (int64_t)s->comm[c].size))
                    OP_FAIL("root %lld is outside %s of size %u", (long long)a, s->comm[c].name,
                            (unsigned)s->comm[c].size);
                n_ev += 4;
                n_coll += 1;
                s->counts[s->comm[c].count_base + comm_rank(s, (uint32_t)c, r)]++;
                break;
            }
#undef OP_FAIL
        }
        if (depth) {
            rc = ARG_FAIL("rank %u: region '%s' is entered but never left", (unsigned)r,
                          region_name(s, stack[depth - 1]));
            goto fail;
        }
        uint32_t master = loc_of(s, r, 0);
        s->loc_events[master] += n_ev;
        for (uint32_t k = 0; k < s->T; k++)
            if (s->loc_events[master + k] > UINT32_MAX) {
                rc = ARG_FAIL("rank %u, thread %u: more than 2^32 events on one location are not supported",
                              (unsigned)r, (unsigned)k);
                goto fail;
            }
        if (st->n_teams > s->max_teams)
            s->max_teams = st->n_teams;
        st->n_events = s->loc_events[master];
        st->n_messages = n_msg;
        st->n_requests = n_rq;
        st->n_collectives = n_coll;
        for (uint32_t k = 0; k < s->T; k++)
            s->total_events += s->loc_events[master + k];
        s->req_base[r + 1] = n_requests;
    }
    free(stack);
    stack = NULL;
    for (uint32_t j = 0; j < s->p->n_teams; j++)
        if (s->team_rank[j] == WS_NONE32)
            return ARG_FAIL("parallel region %u ('%s') is executed by no rank", (unsigned)j,
                            parallel_name(s, s->p->teams[(size_t)j * WS_SYNTH_FIELDS + 1]));
    s->max_depth += 4; /* the program, main, MPI function */

    /* request slots: the k-th isend/irecv of a rank is its request k+1 */
    s->req_op = ws_malloc_array(n_requests ? n_requests : 1, sizeof *s->req_op);
    s->req_state = ws_calloc(n_requests ? n_requests : 1, sizeof *s->req_state);
    if (!s->req_op || !s->req_state)
        return ws_error_nomem(s->err, "requests");
    for (uint32_t r = 0; r < s->n; r++) {
        uint64_t slot = s->req_base[r];
        for (uint64_t gi = (uint64_t)p->rank_ptr[r]; gi < (uint64_t)p->rank_ptr[r + 1]; gi++) {
            int kind = (int)op_row(s, gi)[0];
            if (kind == WS_SYNTH_ISEND || kind == WS_SYNTH_IRECV)
                s->req_op[slot++] = gi;
        }
    }
    return WS_OK;
fail:
    free(stack);
    return rc;
}

