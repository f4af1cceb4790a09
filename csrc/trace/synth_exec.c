/* Synthetic programs, pass 5: timed execution (see synth.c). */
#include "synth_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- pass 5: timed execution ------------------------------------------------- */

static inline void emit_message(synth *s, ws_events *ev, int64_t time, uint8_t kind, uint32_t peer, uint32_t comm,
                                uint32_t tag, uint64_t bytes)
{
    uint64_t m = ev->n_messages++;
    uint64_t e = emit(s, ev, time, kind, (uint32_t)m);
    ev->msg_event[m] = (uint32_t)e;
    ev->msg_peer[m] = peer;
    ev->msg_comm[m] = comm;
    ev->msg_tag[m] = tag;
    ev->msg_bytes[m] = bytes;
}

/* request row for the event just emitted, or (event == WS_NONE64) a new
 * event of `kind` whose ref is the row */
static inline void emit_request(synth *s, ws_events *ev, int64_t time, uint8_t kind, uint64_t id, uint64_t event)
{
    uint64_t q = ev->n_requests++;
    if (event == WS_NONE64)
        event = emit(s, ev, time, kind, (uint32_t)q);
    ev->req_event[q] = (uint32_t)event;
    ev->req_id[q] = id;
}

static void wake(synth *s, uint32_t r)
{
    rank_state *st = &s->st[r];
    if (st->wait_kind == WAIT_NOTHING)
        return;
    st->wait_kind = WAIT_NOTHING;
    s->queue[(s->q_head + s->q_count) % s->n] = r;
    s->q_count++;
}

/* p2p operation gi got its post time: wake its partner's rank if it
 * waits for exactly that */
static void notify_post(synth *s, uint64_t gi, int64_t time)
{
    s->post[gi] = time;
    const int64_t *op = op_row(s, gi);
    uint32_t q = s->comm[op[4]].members[op[1]];
    const rank_state *st = &s->st[q];
    if (st->wait_kind == WAIT_OP && st->wait_id == gi)
        wake(s, q);
}

static void wake_blocked_members(synth *s, uint64_t i)
{
    const xcomm *x = &s->comm[s->inst[i].comm];
    for (uint32_t k = 0; k < x->size; k++) {
        uint32_t q = x->members[k];
        if (s->st[q].wait_kind == WAIT_INSTANCE && s->st[q].wait_id == i)
            wake(s, q);
    }
}

static void arrive(synth *s, uint64_t i, uint32_t cr, int64_t time)
{
    instance *in = &s->inst[i];
    const xcomm *x = &s->comm[in->comm];
    s->slot_time[in->slot + cr] = time;
    in->arrived++;
    if (time > in->max_enter)
        in->max_enter = time;
    switch (sync_class(in->kind)) {
    case SYNC_ALL:
        if (in->arrived == x->size)
            wake_blocked_members(s, i);
        break;
    case SYNC_ONE2ALL:
        if (cr == in->root)
            wake_blocked_members(s, i);
        break;
    case SYNC_ALL2ONE:
        if (in->arrived == x->size) {
            uint32_t q = x->members[in->root];
            if (s->st[q].wait_kind == WAIT_INSTANCE && s->st[q].wait_id == i)
                wake(s, q);
        }
        break;
    case SYNC_SCAN:
        while (in->prefix < x->size && s->slot_time[in->slot + in->prefix] >= 0) {
            int64_t *slot = &s->slot_time[in->slot + in->prefix];
            in->prefix_max = max64(in->prefix_max, *slot);
            *slot = in->prefix_max; /* from now on: the prefix maximum */
            uint32_t q = x->members[in->prefix];
            if (s->st[q].wait_kind == WAIT_INSTANCE && s->st[q].wait_id == i)
                wake(s, q);
            in->prefix++;
        }
        break;
    }
}

/* Leave time of comm rank cr (entered at t) in instance i, or -1 if it
 * is not known yet. */
static int64_t collective_leave(const synth *s, uint64_t i, uint32_t cr, int64_t t)
{
    const instance *in = &s->inst[i];
    uint32_t size = s->comm[in->comm].size;
    switch (sync_class(in->kind)) {
    case SYNC_ONE2ALL:
        if (cr == in->root)
            return t + s->o;
        if (s->slot_time[in->slot + in->root] < 0)
            return -1;
        return max64(t, s->slot_time[in->slot + in->root] + s->L) + s->o;
    case SYNC_ALL2ONE:
        if (cr != in->root)
            return t + s->o;
        return in->arrived == size ? in->max_enter + s->L + s->o : -1;
    case SYNC_SCAN:
        return cr < in->prefix ? s->slot_time[in->slot + cr] + s->L + s->o : -1;
    default:
        return in->arrived == size ? in->max_enter + s->L + s->o : -1;
    }
}

/* bytes sent/received by comm rank cr of n in a collective of `size`
 * bytes per rank (the conventions are documented in synth.py) */
static void collective_bytes(int kind, uint32_t cr, uint32_t root, uint32_t n, uint64_t size, uint64_t *sent,
                             uint64_t *received)
{
    uint64_t all = size * n;
    switch (kind) {
    case WS_SYNTH_BCAST:
    case WS_SYNTH_SCATTER:
        *sent = cr == root ? all : 0;
        *received = size;
        break;
    case WS_SYNTH_REDUCE:
    case WS_SYNTH_GATHER:
        *sent = size;
        *received = cr == root ? all : 0;
        break;
    case WS_SYNTH_SCAN:
        *sent = size * (uint64_t)(n - cr);
        *received = size * (uint64_t)(cr + 1);
        break;
    case WS_SYNTH_BARRIER:
        *sent = *received = 0;
        break;
    default:
        *sent = *received = all;
        break;
    }
}

static int time_check(synth *s, uint32_t r, int64_t time)
{
    if (time < TICKS_MAX)
        return WS_OK;
    char what[300];
    synth_describe(s, r, s->st[r].pc, what, sizeof what);
    return ARG_FAIL("%s: time exceeds the clock's range", what);
}

static int request_error(synth *s, uint32_t r, int64_t entry, const char *problem)
{
    char what[300];
    synth_describe(s, r, s->st[r].pc, what, sizeof what);
    if (entry < 0) {
        uint64_t x = (uint64_t)(-(entry + 1));
        return MATCH_FAIL("%s: request %llu was started by rank %llu, not by this rank", what,
                          (unsigned long long)(x & 0xffffffffu), (unsigned long long)(x >> 32));
    }
    return MATCH_FAIL("%s: request %lld %s", what, (long long)entry, problem);
}

/* Nonzero (and r blocked on it) when operation `partner` has not posted yet. */
static int partner_not_posted(const synth *s, rank_state *st, uint64_t partner, int *blocked)
{
    if (s->post[partner] >= 0)
        return 0;
    st->wait_kind = WAIT_OP;
    st->wait_id = partner;
    *blocked = 1;
    return 1;
}

/* When the message of send operation `send` arrives at a receive posted
 * at `recv_post`: an eager send's data leaves at its post, a rendezvous
 * send's when both sides are there. */
static int64_t receive_arrival(const synth *s, uint64_t send, int64_t recv_post)
{
    const int64_t *sop = op_row(s, send);
    uint64_t size = (uint64_t)sop[3];
    int eager = sop[0] != WS_SYNTH_SSEND && size <= s->eager;
    return (eager ? s->post[send] : max64(s->post[send], recv_post)) + s->L + xfer(s, size);
}

/* Executes the current operation of rank r as far as possible.  Sets
 * *blocked when it needs a time that is not known yet. */
static int step(synth *s, uint32_t r, int *blocked)
{
    rank_state *st = &s->st[r];
    ws_events *ev = &s->t->locations[loc_of(s, r, 0)].events;
    uint64_t n_user = n_user_ops(s, r);

    if (st->pc == 0 || st->pc == n_user + 1) { /* MPI_Init, MPI_Finalize */
        int init = st->pc == 0;
        uint64_t i = init ? s->comm[0].inst_base : s->comm[0].inst_base + s->comm[0].n_inst - 1;
        uint32_t region = s->mpi_region[init ? F_INIT : F_FINALIZE];
        if (st->phase == 0) {
            if (!init) {
                /* MPI requires every request to be completed before
                 * MPI_Finalize; an open one would leave a message unmatched */
                uint64_t base = s->req_base[r];
                for (uint64_t k = 0; k < s->req_base[r + 1] - base; k++)
                    if (s->req_state[base + k] != REQ_DONE) {
                        char what[300];
                        synth_describe(s, r, s->req_op[base + k] - (uint64_t)s->p->rank_ptr[r] + 1, what, sizeof what);
                        return MATCH_FAIL("rank %u, MPI_Finalize: request %llu of %s was never completed by "
                                          "MPI_Wait/MPI_Waitall",
                                          (unsigned)r, (unsigned long long)(k + 1), what);
                    }
            }
            if (init) {
                emit(s, ev, st->t, WS_EV_ENTER, s->program_region);
                emit(s, ev, st->t, WS_EV_ENTER, 0); /* main */
            }
            emit(s, ev, st->t, WS_EV_ENTER, region);
            st->t_enter = st->t;
            st->phase = 1;
            arrive(s, i, r, st->t);
        }
        int64_t leave = collective_leave(s, i, r, st->t_enter);
        if (leave < 0) {
            st->wait_kind = WAIT_INSTANCE;
            st->wait_id = i;
            *blocked = 1;
            return WS_OK;
        }
        int rc = time_check(s, r, leave);
        if (rc)
            return rc;
        emit(s, ev, leave, WS_EV_LEAVE, region);
        st->t = leave;
        st->phase = 0;
        if (init) {
            st->pc++;
        } else {
            emit(s, ev, leave, WS_EV_LEAVE, 0); /* main */
            emit(s, ev, leave, WS_EV_LEAVE, s->program_region);
            st->done = 1;
        }
        return WS_OK;
    }

    uint64_t gi = (uint64_t)s->p->rank_ptr[r] + st->pc - 1;
    const int64_t *op = op_row(s, gi);
    int kind = (int)op[0];
    int f = function_of(kind);
    uint32_t region = f >= 0 ? s->mpi_region[f] : WS_NONE32;
    int64_t leave = 0;
    int rc;

    switch (kind) {
    case WS_SYNTH_COMPUTE: {
        uint32_t u = s->user_region[op[1]];
        double d = s->p->durations[s->p->dur_ptr[r] + op[2]];
        leave = st->t + ticks(s, d);
        if ((rc = time_check(s, r, leave)))
            return rc;
        emit(s, ev, st->t, WS_EV_ENTER, u);
        emit(s, ev, leave, WS_EV_LEAVE, u);
        st->t = leave;
        break;
    }
    case WS_SYNTH_ENTER:
    case WS_SYNTH_LEAVE:
        emit(s, ev, st->t, kind == WS_SYNTH_ENTER ? WS_EV_ENTER : WS_EV_LEAVE, s->user_region[op[1]]);
        break;
    case WS_SYNTH_PARALLEL:
        /* the whole team at once: its threads wait for nothing outside the process */
        if ((rc = synth_run_team(s, r, (uint64_t)op[1], st->t, &leave)))
            return rc;
        st->t = leave;
        break;
    case WS_SYNTH_SEND:
    case WS_SYNTH_SSEND: {
        uint64_t size = (uint64_t)op[3];
        if (st->phase == 0) {
            emit(s, ev, st->t, WS_EV_ENTER, region);
            emit_message(s, ev, st->t, WS_EV_SEND, (uint32_t)op[1], s->comm[op[4]].trace_comm, (uint32_t)op[2], size);
            st->t_enter = st->t;
            notify_post(s, gi, st->t);
            if (kind == WS_SYNTH_SEND && size <= s->eager) {
                leave = st->t + s->o;
                break;
            }
            st->phase = 1;
        }
        uint64_t partner = s->link[gi];
        if (partner_not_posted(s, st, partner, blocked))
            return WS_OK;
        leave = max64(st->t_enter, s->post[partner]) + s->L + xfer(s, size) + s->o;
        break;
    }
    case WS_SYNTH_RECV: {
        if (st->phase == 0) {
            emit(s, ev, st->t, WS_EV_ENTER, region);
            st->t_enter = st->t;
            notify_post(s, gi, st->t);
            st->phase = 1;
        }
        uint64_t partner = s->link[gi];
        if (partner_not_posted(s, st, partner, blocked))
            return WS_OK;
        uint64_t size = (uint64_t)op_row(s, partner)[3];
        leave = max64(st->t_enter, receive_arrival(s, partner, st->t_enter)) + s->o;
        if ((rc = time_check(s, r, leave)))
            return rc;
        emit_message(s, ev, leave, WS_EV_RECV, (uint32_t)op[1], s->comm[op[4]].trace_comm, (uint32_t)op[2], size);
        break;
    }
    case WS_SYNTH_ISEND:
    case WS_SYNTH_IRECV: {
        uint64_t id = ++st->n_started;
        s->req_state[s->req_base[r] + id - 1] = REQ_PENDING;
        emit(s, ev, st->t, WS_EV_ENTER, region);
        if (kind == WS_SYNTH_ISEND) {
            emit_message(s, ev, st->t, WS_EV_ISEND, (uint32_t)op[1], s->comm[op[4]].trace_comm, (uint32_t)op[2],
                         (uint64_t)op[3]);
            emit_request(s, ev, st->t, WS_EV_ISEND, id, ev->n - 1);
        } else {
            emit_request(s, ev, st->t, WS_EV_IRECV_REQUEST, id, WS_NONE64);
        }
        notify_post(s, gi, st->t);
        leave = st->t + s->o;
        break;
    }
    case WS_SYNTH_WAIT:
    case WS_SYNTH_WAITALL: {
        const int64_t *list = s->p->requests + s->p->req_ptr[r] + op[1];
        uint64_t count = (uint64_t)op[2];
        uint64_t base = s->req_base[r];
        if (st->phase == 0) {
            for (uint64_t k = 0; k < count; k++) {
                int64_t id = list[k];
                if (id < 0)
                    return request_error(s, r, id, "");
                if (id == 0 || (uint64_t)id > st->n_started)
                    return request_error(s, r, id, "is unknown: no isend/irecv of this rank started it");
                uint8_t *state = &s->req_state[base + (uint64_t)id - 1];
                if (*state == REQ_DONE)
                    return request_error(s, r, id, "was already completed by an earlier wait");
                if (*state == REQ_IN_WAIT)
                    return request_error(s, r, id, "is listed twice");
                *state = REQ_IN_WAIT;
            }
            emit(s, ev, st->t, WS_EV_ENTER, region);
            st->t_enter = st->t;
            st->acc = st->t;
            st->cursor = 0;
            st->phase = 1;
        }
        for (; st->cursor < count; st->cursor++) {
            uint64_t q = s->req_op[base + (uint64_t)list[st->cursor] - 1];
            const int64_t *qop = op_row(s, q);
            uint64_t partner = s->link[q];
            int64_t done;
            if (qop[0] == WS_SYNTH_ISEND) {
                uint64_t size = (uint64_t)qop[3];
                if (size <= s->eager) {
                    done = s->post[q] + s->o;
                } else {
                    if (partner_not_posted(s, st, partner, blocked))
                        return WS_OK;
                    done = max64(s->post[q], s->post[partner]) + s->L + xfer(s, size);
                }
            } else {
                if (partner_not_posted(s, st, partner, blocked))
                    return WS_OK;
                done = receive_arrival(s, partner, s->post[q]);
            }
            st->acc = max64(st->acc, done);
        }
        leave = st->acc + s->o;
        if ((rc = time_check(s, r, leave)))
            return rc;
        for (uint64_t k = 0; k < count; k++) {
            uint64_t id = (uint64_t)list[k];
            uint64_t q = s->req_op[base + id - 1];
            const int64_t *qop = op_row(s, q);
            s->req_state[base + id - 1] = REQ_DONE;
            if (qop[0] == WS_SYNTH_ISEND) {
                emit_request(s, ev, leave, WS_EV_ISEND_COMPLETE, id, WS_NONE64);
            } else {
                const int64_t *sop = op_row(s, s->link[q]);
                emit_message(s, ev, leave, WS_EV_IRECV, (uint32_t)qop[1], s->comm[qop[4]].trace_comm,
                             (uint32_t)qop[2], (uint64_t)sop[3]);
                emit_request(s, ev, leave, WS_EV_IRECV, id, ev->n - 1);
            }
        }
        break;
    }
    default: { /* collectives */
        uint64_t i = s->link[gi];
        uint32_t c = (uint32_t)op[4];
        uint32_t cr = comm_rank(s, c, r);
        if (st->phase == 0) {
            emit(s, ev, st->t, WS_EV_ENTER, region);
            emit(s, ev, st->t, WS_EV_COLL_BEGIN, WS_NONE32);
            st->t_enter = st->t;
            st->phase = 1;
            arrive(s, i, cr, st->t);
        }
        leave = collective_leave(s, i, cr, st->t_enter);
        if (leave < 0) {
            st->wait_kind = WAIT_INSTANCE;
            st->wait_id = i;
            *blocked = 1;
            return WS_OK;
        }
        if ((rc = time_check(s, r, leave)))
            return rc;
        uint64_t row = ev->n_collectives++;
        uint32_t root = has_root(kind) ? (uint32_t)op[1] : WS_NONE32;
        ev->coll_event[row] = (uint32_t)emit(s, ev, leave, WS_EV_COLL_END, (uint32_t)row);
        ev->coll_comm[row] = s->comm[c].trace_comm;
        ev->coll_root[row] = root;
        ev->coll_op[row] = otf2_collective_op(kind);
        collective_bytes(kind, cr, root, s->comm[c].size, (uint64_t)op[3], &ev->coll_sent[row],
                         &ev->coll_received[row]);
        break;
    }
    }
    if (kind != WS_SYNTH_COMPUTE && kind != WS_SYNTH_ENTER && kind != WS_SYNTH_LEAVE && kind != WS_SYNTH_PARALLEL) {
        if ((rc = time_check(s, r, leave)))
            return rc;
        emit(s, ev, leave, WS_EV_LEAVE, region);
        st->t = leave;
    }
    st->phase = 0;
    st->pc++;
    return WS_OK;
}

/* Explains a deadlock: which ranks wait for what. */
static int deadlock_error(synth *s)
{
    char msg[900];
    size_t used = 0;
    unsigned shown = 0, blocked = 0;
    for (uint32_t r = 0; r < s->n; r++) {
        const rank_state *st = &s->st[r];
        if (st->done)
            continue;
        blocked++;
        if (shown >= 3 || used >= sizeof msg - 1)
            continue;
        char what[300], cause[400];
        synth_describe(s, r, st->pc, what, sizeof what);
        if (st->wait_kind == WAIT_OP) {
            char other[300];
            synth_describe_op(s, st->wait_id, other, sizeof other);
            snprintf(cause, sizeof cause, "waits for %s to be reached", other);
        } else {
            const instance *in = &s->inst[st->wait_id];
            const xcomm *x = &s->comm[in->comm];
            uint32_t missing = WS_NONE32;
            for (uint32_t k = 0; k < x->size && missing == WS_NONE32; k++)
                if (s->slot_time[in->slot + k] < 0)
                    missing = x->members[k];
            if (missing != WS_NONE32)
                snprintf(cause, sizeof cause, "waits for rank %u to enter the collective on %s", (unsigned)missing,
                         x->name);
            else
                snprintf(cause, sizeof cause, "waits in a collective on %s", x->name);
        }
        int n = snprintf(msg + used, sizeof msg - used, "%s%s %s", shown ? "; " : "", what, cause);
        if (n > 0)
            used += (size_t)n < sizeof msg - used ? (size_t)n : sizeof msg - used - 1;
        shown++;
    }
    return MATCH_FAIL("deadlock: %u rank(s) can never proceed: %s%s", blocked, msg, blocked > shown ? "; ..." : "");
}

int synth_execute(synth *s)
{
    for (uint32_t r = 0; r < s->n; r++)
        s->queue[r] = r;
    s->q_head = 0;
    s->q_count = s->n;
    s->next_report = 1u << 20;
    uint32_t finished = 0;
    while (s->q_count) {
        uint32_t r = s->queue[s->q_head];
        s->q_head = (s->q_head + 1) % s->n;
        s->q_count--;
        rank_state *st = &s->st[r];
        while (!st->done) {
            int blocked = 0;
            int rc = step(s, r, &blocked);
            if (rc)
                return rc;
            if (s->produced >= s->next_report) {
                s->next_report = s->produced + (1u << 20);
                if (s->progress && s->progress->callback &&
                    s->progress->callback(s->progress->context, "synth", s->produced, s->total_events))
                    return ws_error_set(s->err, WS_ERR_INTERRUPTED, "trace generation interrupted");
            }
            if (blocked)
                break;
        }
        if (st->done)
            finished++;
    }
    if (finished < s->n)
        return deadlock_error(s);
    if (s->progress && s->progress->callback &&
        s->progress->callback(s->progress->context, "synth", s->produced, s->total_events))
        return ws_error_set(s->err, WS_ERR_INTERRUPTED, "trace generation interrupted");
    return WS_OK;
}

