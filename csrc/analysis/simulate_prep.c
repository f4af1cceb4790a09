/* What-if simulation, preparations: the work of every balanced visit and
 * its share of the mean, and which sends are synchronous. */
#include "simulate_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- balance ------------------------------------------------------------ */

/* Non-MPI time inside every visit of a balanced call path, in the order
 * of the visits' Enter events: the time between two events belongs to
 * the innermost open visit when no MPI call is open; a visit's work
 * includes that of the visits nested in it. */
static int visit_work(sim *s, uint32_t loc, const int32_t *bal_id, uint32_t *count, uint32_t *vis_b,
                      uint32_t *vis_i, double *work, uint64_t *n_out, ws_error *err)
{
    const ws_trace *t = s->t;
    const ws_events *e = &t->locations[loc].events;
    /* open balanced visits (indices into vis_*) */
    uint64_t *open = ws_malloc_array(e->n ? e->n : 1, sizeof *open);
    if (!open)
        return ws_error_nomem(err, "balance");
    uint64_t n_open = 0, n = 0;
    uint32_t mpi_depth = 0;
    for (uint64_t i = 0; i < e->n; i++) {
        if (i > 0 && mpi_depth == 0 && n_open)
            work[open[n_open - 1]] += ws_ev_time(e, i) - ws_ev_time(e, i - 1);
        uint8_t kind = e->kind[i];
        if (kind != WS_EV_ENTER && kind != WS_EV_LEAVE)
            continue;
        uint32_t cp = e->ref[i];
        if (cp >= t->callpaths.n)
            continue;
        if (s->cp_mpi[cp]) {
            if (kind == WS_EV_ENTER)
                mpi_depth++;
            else if (mpi_depth)
                mpi_depth--;
            continue;
        }
        if (bal_id[cp] < 0)
            continue;
        if (kind == WS_EV_ENTER) {
            uint32_t b = (uint32_t)bal_id[cp];
            vis_b[n] = b;
            vis_i[n] = count[b]++;
            work[n] = 0.0;
            open[n_open++] = n++;
        } else if (n_open) {
            uint64_t v = open[--n_open];
            if (n_open)
                work[open[n_open - 1]] += work[v];
        }
    }
    free(open);
    *n_out = n;
    return WS_OK;
}

int ws_sim_balance(sim *s, ws_transport *tr, ws_error *err)
{
    const ws_trace *t = s->t;
    uint32_t C = t->callpaths.n;
    int32_t *bal_id = ws_malloc_array(C ? C : 1, sizeof *bal_id);
    if (!bal_id)
        return ws_error_nomem(err, "balance");
    uint32_t B = 0;
    for (uint32_t cp = 0; cp < C; cp++)
        bal_id[cp] = s->o.balance && s->o.balance[cp] && !s->cp_mpi[cp] ? (int32_t)B++ : -1;
    /* every process takes part in the reductions, even without work */
    uint64_t *kmax = ws_calloc(B ? B : 1, sizeof *kmax);
    uint32_t *count = ws_calloc(B ? B : 1, sizeof *count);
    uint32_t **vb = ws_calloc(s->n_local ? s->n_local : 1, sizeof *vb);
    uint32_t **vi = ws_calloc(s->n_local ? s->n_local : 1, sizeof *vi);
    double **vw = ws_calloc(s->n_local ? s->n_local : 1, sizeof *vw);
    uint64_t *offset = ws_calloc((size_t)B + 1, sizeof *offset);
    double *sums = NULL;
    int rc = WS_OK;
    if (!kmax || !count || !vb || !vi || !vw || !offset)
        rc = ws_error_nomem(err, "balance");
    for (uint32_t k = 0; k < s->n_local && rc == WS_OK && B; k++) {
        uint32_t loc = s->local[k];
        uint64_t n = t->locations[loc].events.n;
        vb[k] = ws_malloc_array(n ? n : 1, sizeof **vb);
        vi[k] = ws_malloc_array(n ? n : 1, sizeof **vi);
        vw[k] = ws_malloc_array(n ? n : 1, sizeof **vw);
        if (!vb[k] || !vi[k] || !vw[k]) {
            rc = ws_error_nomem(err, "balance");
            break;
        }
        memset(count, 0, B * sizeof *count);
        rc = visit_work(s, loc, bal_id, count, vb[k], vi[k], vw[k], &s->locs[loc].n_visits, err);
        for (uint32_t b = 0; b < B && rc == WS_OK; b++)
            if (count[b] > kmax[b])
                kmax[b] = count[b];
    }
    /* agree on failure before the reductions, so that no process waits */
    rc = ws_agree_status(tr, rc, err);
    if (rc == WS_OK && B)
        rc = tr->ops->allreduce_u64(tr, kmax, B, WS_MAX, err);
    if (rc == WS_OK && B) {
        for (uint32_t b = 0; b < B; b++)
            offset[b + 1] = offset[b] + kmax[b];
        uint64_t K = offset[B];
        sums = ws_calloc(K ? 2 * K : 1, sizeof *sums);
        if (!sums)
            rc = ws_error_nomem(err, "balance");
        for (uint32_t k = 0; k < s->n_local && rc == WS_OK; k++) {
            const sim_loc *st = &s->locs[s->local[k]];
            for (uint64_t v = 0; v < st->n_visits; v++) {
                uint64_t slot = offset[vb[k][v]] + vi[k][v];
                sums[slot] += vw[k][v];
                sums[K + slot] += 1.0;
            }
        }
        rc = ws_agree_status(tr, rc, err);
        if (rc == WS_OK && K)
            rc = tr->ops->allreduce_f64(tr, sums, 2 * K, WS_SUM, err);
        for (uint32_t k = 0; k < s->n_local && rc == WS_OK; k++) {
            sim_loc *st = &s->locs[s->local[k]];
            size_t nv = st->n_visits ? st->n_visits : 1;
            st->visit_factor = ws_malloc_array(nv, sizeof *st->visit_factor);
            st->visit_extra = ws_malloc_array(nv, sizeof *st->visit_extra);
            if (!st->visit_factor || !st->visit_extra) {
                rc = ws_error_nomem(err, "balance");
                break;
            }
            for (uint64_t v = 0; v < st->n_visits; v++) {
                uint64_t slot = offset[vb[k][v]] + vi[k][v];
                double mean = sums[slot] / sums[K + slot], own = vw[k][v];
                st->visit_factor[v] = own > 0.0 ? mean / own : 1.0;
                st->visit_extra[v] = own > 0.0 ? 0.0 : mean;
            }
            s->stats.balanced_visits += st->n_visits;
        }
    }
    for (uint32_t k = 0; vb && k < s->n_local; k++) {
        free(vb[k]);
        free(vi[k]);
        free(vw[k]);
    }
    free(vb);
    free(vi);
    free(vw);
    free(sums);
    free(offset);
    free(count);
    free(kmax);
    free(bal_id);
    return rc;
}

/* ---- synchronous sends -------------------------------------------------- */

/* What the receiver needs to decide whether a send is synchronous. */
typedef struct send_facts {
    double done_enter; /* enter of the call that completed the send */
    double done_leave; /* its leave */
    uint64_t bytes;
    uint32_t may_block;
    uint32_t ssend;
} send_facts;

static int s1_produce(void *state, const ws_replay_env *env, uint32_t loc, uint32_t row, int channel,
                      ws_buffer *out, ws_error *err)
{
    (void)channel;
    sim *s = state;
    const ws_msg *m = &env->sync->locs[loc].msgs[row];
    const ws_events *e = &env->trace->locations[loc].events;
    send_facts f;
    memset(&f, 0, sizeof f);
    f.done_enter = ws_msg_done_enter(e, m);
    f.done_leave = ws_msg_done(e, m);
    f.bytes = ws_msg_bytes(e, row);
    f.may_block = (m->flags & WS_MSG_MAY_BLOCK) != 0;
    uint32_t cp = ws_msg_callpath(e, m);
    f.ssend = cp < env->trace->callpaths.n && s->cp_ssend[cp];
    if (ws_buffer_append(out, &f, sizeof f) != 0)
        return ws_error_nomem(err, "payload");
    return WS_OK;
}

/* A send is synchronous when it was completed by a call that can wait
 * (MPI_Send, MPI_Ssend, MPI_Wait*) and it was MPI_Ssend/MPI_Issend, or
 * its completion recorded a Late Receiver (its completing call was
 * entered before the receive was posted and left after that) and it is
 * larger than the eager limits MPI libraries use by default: a small
 * send that seems to wait for its receive only took long (two ranks
 * that send to each other before receiving show it on both sides, and
 * taking both as synchronous would make them wait for each other). */
static int s1_consume(void *state, const ws_replay_env *env, uint32_t loc, uint32_t row, int channel,
                      const void *data, size_t size, ws_error *err)
{
    (void)channel;
    sim *s = state;
    if (size != sizeof(send_facts))
        return ws_error_set(err, WS_ERR_INTERNAL, "unexpected payload size %zu", size);
    send_facts f;
    memcpy(&f, data, sizeof f);
    double post = ws_msg_post(&env->trace->locations[loc].events, &env->sync->locs[loc].msgs[row]);
    int late_receiver = f.done_enter < post && f.done_leave >= post;
    s->locs[loc].sync[row] = f.may_block && (f.ssend || (late_receiver && f.bytes > WS_SIM_EAGER_LIMIT));
    return WS_OK;
}

static int s2_produce(void *state, const ws_replay_env *env, uint32_t loc, uint32_t row, int channel,
                      ws_buffer *out, ws_error *err)
{
    (void)env;
    (void)channel;
    sim *s = state;
    uint8_t v = s->locs[loc].sync[row];
    if (ws_buffer_append(out, &v, 1) != 0)
        return ws_error_nomem(err, "payload");
    return WS_OK;
}

static int s2_consume(void *state, const ws_replay_env *env, uint32_t loc, uint32_t row, int channel,
                      const void *data, size_t size, ws_error *err)
{
    (void)env;
    (void)channel;
    sim *s = state;
    if (size != 1)
        return ws_error_set(err, WS_ERR_INTERNAL, "unexpected payload size %zu", size);
    uint8_t v = *(const uint8_t *)data;
    s->locs[loc].sync[row] = v;
    s->stats.sync_sends += v;
    return WS_OK;
}

void ws_sim_sync_handlers(sim *s, int pass, ws_handler *h)
{
    memset(h, 0, sizeof *h);
    h->state = s;
    h->sparse = 1;
    h->msg_produce = pass == 1 ? s1_produce : s2_produce;
    h->msg_consume = pass == 1 ? s1_consume : s2_consume;
}
