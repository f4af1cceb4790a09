/* Synthetic MPI program executor (see synth.h and pkg/waitscope/synth.py).
 *
 * Work is done in passes over the packed operations, each O(operations)
 * (pass 0, the communicators, and 1 in synth_validate.c, 2 and 3 in
 * synth_match.c, 4 in synth_defs.c, 5 in synth_exec.c, 6 here; OpenMP
 * parallel regions in synth_omp.c):
 *   1. validation and exact event/record counts per rank;
 *   2. message matching: the n-th send from s to d with tag T on comm C
 *      matches the n-th receive by d from s with tag T on C (MPI's
 *      non-overtaking rule without wildcards, independent of timing);
 *   3. collective instances: the k-th collective call of every member of a
 *      communicator forms one instance; kinds and roots must agree;
 *   4. definitions and exactly sized event columns;
 *   5. timed execution: every rank runs until it needs a time that is not
 *      known yet (the post time of a matching operation, or the arrival
 *      of other members of a collective), then waits on a ready queue; a
 *      rank is woken exactly when that time becomes known.  An empty queue
 *      with unfinished ranks is a deadlock;
 *   6. call paths, in location order like the OTF2 reader creates them
 *      (the regions a worker thread enters in a team below the call path
 *      of its master's fork).
 * Apart from the tables sized in passes 1-4 nothing is allocated per
 * event.
 */
#include "synth_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const synth_function synth_mpi_functions[F_COUNT] = {
    [F_ALLGATHER] = {"MPI_Allgather", OTF2_REGION_ROLE_COLL_ALL2ALL},
    [F_ALLREDUCE] = {"MPI_Allreduce", OTF2_REGION_ROLE_COLL_ALL2ALL},
    [F_ALLTOALL] = {"MPI_Alltoall", OTF2_REGION_ROLE_COLL_ALL2ALL},
    [F_BARRIER] = {"MPI_Barrier", OTF2_REGION_ROLE_BARRIER},
    [F_BCAST] = {"MPI_Bcast", OTF2_REGION_ROLE_COLL_ONE2ALL},
    [F_FINALIZE] = {"MPI_Finalize", OTF2_REGION_ROLE_FUNCTION},
    [F_GATHER] = {"MPI_Gather", OTF2_REGION_ROLE_COLL_ALL2ONE},
    [F_INIT] = {"MPI_Init", OTF2_REGION_ROLE_FUNCTION},
    [F_IRECV] = {"MPI_Irecv", OTF2_REGION_ROLE_POINT2POINT},
    [F_ISEND] = {"MPI_Isend", OTF2_REGION_ROLE_POINT2POINT},
    [F_RECV] = {"MPI_Recv", OTF2_REGION_ROLE_POINT2POINT},
    [F_REDUCE] = {"MPI_Reduce", OTF2_REGION_ROLE_COLL_ALL2ONE},
    [F_SCAN] = {"MPI_Scan", OTF2_REGION_ROLE_COLL_OTHER},
    [F_SCATTER] = {"MPI_Scatter", OTF2_REGION_ROLE_COLL_ONE2ALL},
    [F_SEND] = {"MPI_Send", OTF2_REGION_ROLE_POINT2POINT},
    [F_SSEND] = {"MPI_Ssend", OTF2_REGION_ROLE_POINT2POINT},
    [F_WAIT] = {"MPI_Wait", OTF2_REGION_ROLE_FUNCTION},
    [F_WAITALL] = {"MPI_Waitall", OTF2_REGION_ROLE_FUNCTION},
};

/* "rank 3, operation 5 (MPI_Recv from rank 0, tag 1 on MPI_COMM_WORLD)" */
void synth_describe(const synth *s, uint32_t r, uint64_t pc, char *buf, size_t size)
{
    uint64_t n_user = n_user_ops(s, r);
    if (pc == 0) {
        snprintf(buf, size, "rank %u, MPI_Init", (unsigned)r);
        return;
    }
    if (pc == n_user + 1) {
        snprintf(buf, size, "rank %u, MPI_Finalize", (unsigned)r);
        return;
    }
    const int64_t *op = op_row(s, (uint64_t)s->p->rank_ptr[r] + pc - 1);
    int kind = (int)op[0];
    int n = snprintf(buf, size, "rank %u, operation %llu (", (unsigned)r, (unsigned long long)(pc - 1));
    if (n < 0 || (size_t)n >= size)
        return;
    char *b = buf + n;
    size_t room = size - (size_t)n;
    int f = function_of(kind);
    switch (kind) {
    case WS_SYNTH_COMPUTE:
        snprintf(b, room, "compute in '%s')", region_name(s, op[1]));
        break;
    case WS_SYNTH_ENTER:
        snprintf(b, room, "enter region '%s')", region_name(s, op[1]));
        break;
    case WS_SYNTH_LEAVE:
        snprintf(b, room, "leave region '%s')", region_name(s, op[1]));
        break;
    case WS_SYNTH_PARALLEL:
        snprintf(b, room, "parallel region '%s')",
                 op[1] >= 0 && (uint64_t)op[1] < s->p->n_teams
                     ? parallel_name(s, s->p->teams[(size_t)op[1] * WS_SYNTH_FIELDS + 1])
                     : "?");
        break;
    case WS_SYNTH_SEND:
    case WS_SYNTH_SSEND:
    case WS_SYNTH_ISEND:
        snprintf(b, room, "%s to rank %lld, tag %lld, %lld bytes on %s)", synth_mpi_functions[f].name, (long long)op[1],
                 (long long)op[2], (long long)op[3], comm_name(s, op[4]));
        break;
    case WS_SYNTH_RECV:
    case WS_SYNTH_IRECV:
        snprintf(b, room, "%s from rank %lld, tag %lld on %s)", synth_mpi_functions[f].name, (long long)op[1],
                 (long long)op[2], comm_name(s, op[4]));
        break;
    case WS_SYNTH_WAIT:
    case WS_SYNTH_WAITALL:
        snprintf(b, room, "%s of %lld request(s))", synth_mpi_functions[f].name, (long long)op[2]);
        break;
    default:
        if (f >= 0 && has_root(kind))
            snprintf(b, room, "%s, root %lld, on %s)", synth_mpi_functions[f].name, (long long)op[1],
                     comm_name(s, op[4]));
        else if (f >= 0)
            snprintf(b, room, "%s on %s)", synth_mpi_functions[f].name, comm_name(s, op[4]));
        else
            snprintf(b, room, "unknown kind %d)", kind);
        break;
    }
}

void synth_describe_op(const synth *s, uint64_t gi, char *buf, size_t size)
{
    uint32_t r = rank_of_op(s, gi);
    synth_describe(s, r, gi - (uint64_t)s->p->rank_ptr[r] + 1, buf, size);
}

/* ---- pass 6: call paths --------------------------------------------------------- */

/* The call path of master location m at each of its ThreadTeamBegin
 * records, in order, with the team (the reader's otf2_threads.c). */
typedef struct team_paths {
    uint32_t *comm, *cp;
    uint64_t n;
} team_paths;

static int finish(synth *s)
{
    ws_trace *t = s->t;
    uint32_t *stack = ws_malloc_array(s->max_depth, sizeof *stack);
    team_paths tp = {NULL, NULL, 0};
    if (s->max_teams) {
        tp.comm = ws_malloc_array(s->max_teams, sizeof *tp.comm);
        tp.cp = ws_malloc_array(s->max_teams, sizeof *tp.cp);
    }
    int rc = WS_OK;
    if (!stack || (s->max_teams && (!tp.comm || !tp.cp))) {
        rc = ws_error_nomem(s->err, "call stack");
        goto done;
    }
    if (s->times_failed) {
        rc = ws_error_nomem(s->err, "event times");
        goto done;
    }
    int64_t end = 0;
    for (uint32_t l = 0; l < t->n_locations; l++) {
        ws_location *loc = &t->locations[l];
        ws_events *ev = &loc->events;
        uint32_t thread = l % s->T;
        /* pass 1 counted exactly what pass 5 wrote */
        if ((rc = WS_CHECK(ev->n == s->loc_events[l] && ev->n_threads == s->loc_threads[l], s->err)) != WS_OK)
            goto done;
        if (ws_events_narrow(ev) != 0) {
            rc = ws_error_nomem(s->err, "events");
            goto done;
        }
        if (thread == 0)
            tp.n = 0;
        uint64_t next_team = 0;
        uint32_t depth = 0, base = WS_NONE32;
        for (uint64_t e = 0; e < ev->n; e++) {
            uint8_t kind = ev->kind[e];
            if (kind == WS_EV_ENTER) {
                uint32_t parent = depth ? stack[depth - 1] : base;
                uint32_t cp = ws_callpath_child(&t->callpaths, parent, ev->ref[e]);
                if (cp == WS_NONE32 || depth >= s->max_depth) {
                    rc = ws_error_nomem(s->err, "call paths");
                    goto done;
                }
                stack[depth++] = cp;
                ev->ref[e] = cp;
            } else if (kind == WS_EV_LEAVE) {
                ev->ref[e] = stack[--depth];
            } else if (kind == WS_EV_THREAD_TEAM_BEGIN) {
                uint32_t comm = ev->thr_comm[ev->ref[e]];
                if (thread == 0) {
                    if ((rc = WS_CHECK(tp.n < s->max_teams, s->err)) != WS_OK)
                        goto done;
                    tp.comm[tp.n] = comm;
                    tp.cp[tp.n++] = depth ? stack[depth - 1] : WS_NONE32;
                } else {
                    /* the master's next begin of the same team */
                    while (next_team < tp.n && tp.comm[next_team] != comm)
                        next_team++;
                    if ((rc = WS_CHECK(next_team < tp.n, s->err)) != WS_OK)
                        goto done;
                    base = tp.cp[next_team++];
                }
            } else if (kind == WS_EV_THREAD_TEAM_END) {
                base = WS_NONE32;
            }
        }
        loc->loaded = 1;
        loc->n_events_defined = ev->n;
        t->n_events += ev->n;
    }
    for (uint32_t r = 0; r < s->n; r++)
        if (s->st[r].t > end)
            end = s->st[r].t;
    t->clock.length = (uint64_t)end;
done:
    free(stack);
    free(tp.comm);
    free(tp.cp);
    return rc;
}

/* ---- entry point ------------------------------------------------------------------ */

static void synth_free(synth *s)
{
    if (s->comm)
        for (uint32_t c = 0; c < s->n_xcomm; c++)
            free(s->comm[c].members);
    free(s->comm);
    ws_map64_free(&s->comm_rank);
    free(s->link);
    free(s->post);
    free(s->req_base);
    free(s->req_op);
    free(s->req_state);
    free(s->counts);
    free(s->inst);
    free(s->slot_time);
    free(s->st);
    free(s->queue);
    free(s->user_region);
    free(s->loc_events);
    free(s->loc_threads);
    free(s->team_rank);
    free(s->team_base);
    free(s->team_comm);
    free(s->omp_used);
    free(s->omp_region);
    free(s->th);
    free(s->locks);
    ws_map64_free(&s->lock_index);
}

int ws_synth_run(const ws_synth_program *program, const ws_synth_params *params, const ws_progress *progress,
                 ws_trace **out, ws_error *err)
{
    *out = NULL;
    const ws_synth_program *p = program;
    if (!p || !params)
        return ws_error_set(err, WS_ERR_ARGUMENT, "no synthetic program");
    if (p->n_ranks == 0 || p->n_ranks >= WS_NONE32 - 1)
        return ws_error_set(err, WS_ERR_ARGUMENT, "a program needs 1 to 2^32-2 ranks, not %u", (unsigned)p->n_ranks);
    if (params->resolution == 0 || params->resolution > ((uint64_t)1 << 53))
        return ws_error_set(err, WS_ERR_ARGUMENT, "invalid clock resolution %llu",
                            (unsigned long long)params->resolution);
    if (!(params->latency >= 0.0) || !(params->overhead >= 0.0) || !(params->bandwidth >= 0.0) ||
        !isfinite(params->latency) || !isfinite(params->overhead))
        return ws_error_set(err, WS_ERR_ARGUMENT, "latency, overhead and bandwidth must be non-negative numbers");

    synth s;
    memset(&s, 0, sizeof s);
    s.p = p;
    s.err = err;
    s.progress = progress;
    s.n = p->n_ranks;
    s.res = (double)params->resolution;
    s.inv = 1.0 / (double)params->resolution;
    s.bandwidth = isinf(params->bandwidth) ? 0.0 : params->bandwidth;
    s.eager = params->eager_limit;
    s.T = p->n_threads ? p->n_threads : 1;
    s.hybrid = s.T > 1 || p->n_teams > 0;
    ws_map64_init(&s.comm_rank);
    ws_map64_init(&s.lock_index);
    int rc;
    if (params->latency * s.res >= (double)COST_MAX || params->overhead * s.res >= (double)COST_MAX) {
        rc = ws_error_set(err, WS_ERR_ARGUMENT, "latency or overhead too large for the clock");
        goto fail;
    }
    s.L = ticks(&s, params->latency);
    s.o = ticks(&s, params->overhead);

    if ((rc = synth_check_offsets(&s, p->rank_ptr, s.n, "operation")) || (rc = synth_check_offsets(&s, p->dur_ptr, s.n, "duration")) ||
        (rc = synth_check_offsets(&s, p->req_ptr, s.n, "request list")))
        goto fail;
    s.n_ops = (uint64_t)p->rank_ptr[s.n];
    if (s.n_ops && !p->ops) {
        rc = ws_error_set(err, WS_ERR_ARGUMENT, "synthetic program: missing operations");
        goto fail;
    }
    if ((uint64_t)s.n * s.T >= WS_NONE32 - 1) {
        rc = ws_error_set(err, WS_ERR_ARGUMENT, "%u ranks of %u threads are more than 2^32-2 locations",
                          (unsigned)s.n, (unsigned)s.T);
        goto fail;
    }
    s.st = ws_calloc(s.n, sizeof *s.st);
    s.th = ws_malloc_array(s.T, sizeof *s.th);
    s.queue = ws_malloc_array(s.n, sizeof *s.queue);
    s.link = ws_malloc_array(s.n_ops ? s.n_ops : 1, sizeof *s.link);
    s.post = ws_malloc_array(s.n_ops ? s.n_ops : 1, sizeof *s.post);
    if (!s.st || !s.th || !s.queue || !s.link || !s.post) {
        rc = ws_error_nomem(err, "program tables");
        goto fail;
    }
    for (uint64_t i = 0; i < s.n_ops; i++)
        s.post[i] = -1;

    if ((rc = synth_setup_comms(&s)) || (rc = synth_validate(&s)) || (rc = synth_match_messages(&s)) || (rc = synth_build_collectives(&s)) ||
        (rc = synth_build_definitions(&s)) || (rc = synth_execute(&s)) || (rc = finish(&s)))
        goto fail;
    synth_free(&s);
    *out = s.t;
    return WS_OK;
fail:
    ws_trace_free(s.t);
    synth_free(&s);
    return rc;
}

