/* Wait-state analysis, point-to-point patterns: Late Sender (with its
 * wrong-order classes) in pass 1, Late Receiver at the sender in pass 2,
 * and pass 3, which tells both sides which waits count; also the message
 * counts and bytes.  Definitions: docs/metrics.md. */
#include "waitstates_int.h"

/* Keeps the leaves of the partner's calls for message `row`, which
 * waits or is waited for (analysis_int.h). */
static int keep_partner_leaves(ws_loc_data *d, uint32_t row, double leave, double second, ws_error *err)
{
    if (d->n_leaves == d->cap_leaves) {
        /* grown by a quarter: all locations grow theirs at once (pass 3) */
        size_t cap = d->cap_leaves + d->cap_leaves / 4 + 64;
        void *p = ws_realloc(d->leaves, cap * sizeof *d->leaves);
        if (!p)
            return ws_error_nomem(err, "partner calls");
        d->leaves = p;
        d->cap_leaves = cap;
    }
    ws_partner_leaves *pl = &d->leaves[d->n_leaves++];
    pl->row = row;
    pl->pad = 0;
    pl->leave = leave;
    pl->second = second;
    return WS_OK;
}

/* ---- pass 1: forward ---------------------------------------------------- */

typedef struct send_info {
    double enter;      /* enter of the send call */
    double done_enter; /* enter of the call that completed the send */
    double done_leave; /* leave of that call */
    uint64_t bytes;
    uint32_t flags;
    uint32_t pad;
} send_info;
static int p1_begin(void *state, const ws_replay_env *env, uint32_t loc, ws_error *err)
{
    (void)env;
    (void)err;
    ws_loc_data *d = data_of(state, loc);
    d->cur_callpath = WS_NONE32;
    d->last_time = NAN;
    d->multi_call = WS_NONE32;
    d->multi_row = WS_NONE32;
    d->multi_max = 0.0;
    return WS_OK;
}

static int set_ls(ws_analysis *a, uint32_t loc, uint32_t row, double v, ws_error *err)
{
    return ws_md_set_ls(data_of(a, loc), a->sync->locs[loc].n_messages, row, v) ? ws_error_nomem(err, "waits")
                                                                                : WS_OK;
}
static int set_lr(ws_analysis *a, uint32_t loc, uint32_t row, double v, ws_error *err)
{
    return ws_md_set_lr(data_of(a, loc), a->sync->locs[loc].n_messages, row, v) ? ws_error_nomem(err, "waits")
                                                                                : WS_OK;
}

/* Pass 1 only records a Late Sender; it is counted at the end of pass 2,
 * when a larger Late Receiver in the same Waitall may have replaced it.
 * Waitall/Waitsome: only the largest Late Sender of the call counts. */
static int flush_multi(ws_analysis *a, uint32_t loc, ws_error *err)
{
    ws_loc_data *d = data_of(a, loc);
    int rc = WS_OK;
    if (d->multi_call != WS_NONE32 && d->multi_max > 0.0)
        rc = set_ls(a, loc, d->multi_row, d->multi_max, err);
    d->multi_call = WS_NONE32;
    d->multi_row = WS_NONE32;
    d->multi_max = 0.0;
    return rc;
}

/* Whether the message record `row` of `loc` counts in the analysis window. */
static int message_in_window(const ws_analysis *a, const ws_replay_env *env, uint32_t loc, uint32_t row)
{
    const ws_events *e = &env->trace->locations[loc].events;
    return ws_window_has(&a->options, ws_ev_time(e, e->msg_event[row]));
}

/* The part of a Late Sender's waiting inside the analysis window: from
 * the enter of the receiving call to min(send's enter, leave) (as pass 1). */
static double late_sender_part(const ws_analysis *a, const ws_events *e, const ws_loc_sync *s, const ws_msg *m,
                               double ls, double partner_time)
{
    double leave = ws_msg_leave(e, s, m), until = partner_time < leave ? partner_time : leave;
    return ws_window_part(&a->options, ws_msg_enter(e, m), until, ls);
}

static int p1_produce(void *state, const ws_replay_env *env, uint32_t loc, uint32_t row, int channel, ws_buffer *out,
                      ws_error *err)
{
    (void)channel;
    const ws_msg *m = &env->sync->locs[loc].msgs[row];
    const ws_events *e = &env->trace->locations[loc].events;
    send_info p;
    memset(&p, 0, sizeof p);
    p.enter = ws_msg_enter(e, m);
    p.done_enter = ws_msg_done_enter(e, m);
    p.done_leave = ws_msg_done(e, m);
    p.bytes = ws_msg_bytes(e, row);
    p.flags = m->flags;
    if (ws_buffer_append(out, &p, sizeof p) != 0)
        return ws_error_nomem(err, "payload");
    /* the send is counted where it happens (in a window: when its record is in it) */
    if (message_in_window(state, env, loc, row)) {
        uint32_t cp = ws_msg_callpath(e, m);
        add(state, p.bytes == 0 ? WS_M_SYNCS_SEND : WS_M_COMMS_SEND, cp, loc, 1.0);
        add(state, WS_M_BYTES_SENT, cp, loc, (double)p.bytes);
    }
    return WS_OK;
}

static int p1_consume(void *state, const ws_replay_env *env, uint32_t loc, uint32_t row, int channel,
                      const void *data, size_t size, ws_error *err)
{
    (void)channel;
    ws_analysis *a = state;
    if (size != sizeof(send_info))
        return ws_error_set(err, WS_ERR_INTERNAL, "unexpected payload size %zu", size);
    send_info p;
    memcpy(&p, data, sizeof p);
    const ws_loc_sync *ls = &env->sync->locs[loc];
    const ws_msg *m = &ls->msgs[row];
    const ws_events *e = &env->trace->locations[loc].events;
    ws_loc_data *d = data_of(a, loc);
    uint8_t flags = m->flags;
    double enter = ws_msg_enter(e, m), leave = ws_msg_leave(e, ls, m);
    d->partner_time[row] = p.enter;
    if (p.bytes == 0)
        d->msg_bits[row] |= WS_MD_EMPTY_SEND;
    if (leave < p.enter)
        a->result->clock_violations[loc]++;
    uint32_t cp = ws_msg_callpath(e, m);
    if (message_in_window(a, env, loc, row)) {
        add(a, p.bytes == 0 ? WS_M_SYNCS_RECV : WS_M_COMMS_RECV, cp, loc, 1.0);
        add(a, WS_M_BYTES_RCVD, cp, loc, (double)p.bytes);
    }

    /* Late Receiver, decided here and charged at the sender in pass 2:
     * the send's completing call had to wait until this receive was
     * posted (a rendezvous send of zero latency leaves exactly then). */
    double post = ws_msg_post(e, m);
    if ((p.flags & WS_MSG_MAY_BLOCK) && p.done_leave >= post) {
        double lr = post - p.done_enter;
        if (lr > 0.0) {
            int rc = set_lr(a, loc, row, lr, err);
            if (rc)
                return rc;
            d->msg_bits[row] |= WS_MD_LR_CANDIDATE;
        }
    }

    /* Late Sender: the receive (or the wait completing it) was entered
     * before the send started; capped by the receive's duration. */
    double wait = 0.0;
    if (flags & WS_MSG_MAY_BLOCK) {
        double until = p.enter < leave ? p.enter : leave;
        wait = until - enter;
        if (wait < 0.0)
            wait = 0.0;
    }
    if (flags & WS_MSG_MULTI) {
        if (d->multi_call != m->call) {
            int rc = flush_multi(a, loc, err);
            if (rc)
                return rc;
        }
        d->multi_call = m->call;
        if (d->multi_row == WS_NONE32 || wait > d->multi_max) {
            d->multi_row = row;
            d->multi_max = wait;
        }
    } else if (wait > 0.0) {
        return set_ls(a, loc, row, wait, err);
    }
    return WS_OK;
}
/* Wrong-order Late Senders: a Late Sender instance is in wrong order
 * when the location later receives (in another MPI call) a message whose
 * send started before the send of the message it waited for.  The nearest such later receive
 * decides between "same" and "different" source.  With `wo`, the class of
 * every receive row (WS_WO_*) is stored there for its wait record. */
static int wrong_order(ws_analysis *a, uint32_t loc, uint8_t *wo, ws_error *err)
{
    const ws_loc_sync *ls = &a->sync->locs[loc];
    const ws_msg *msgs = ls->msgs;
    const ws_events *e = &a->trace->locations[loc].events;
    ws_loc_data *d = data_of(a, loc);
    const double *pt = d->partner_time;
    uint64_t n = ls->n_messages;
    /* stack: later receives, send enters strictly increasing towards the
     * top (a receive hides the later ones whose send started no earlier);
     * group: the receives of the current call, pushed once the call is
     * done, so that receives completed by one call (MPI_Waitall,
     * MPI_Waitsome) are never in wrong order among themselves (Scalasca
     * 2.6 records such a call's Late Sender at its Leave, after all of
     * them) */
    uint32_t *stack = ws_malloc_array(n ? n : 1, sizeof *stack);
    uint32_t *group = ws_malloc_array(n ? n : 1, sizeof *group);
    /* reproducing Scalasca 2.6 (scalasca_compat): the Late Senders that one
     * receive reveals are classified and charged as the first of them
     * (reveal[k]: the receive revealing k; first[j]: the first k revealed by j) */
    const int compat = a->options.scalasca_compat != 0;
    uint32_t *reveal = compat ? ws_malloc_array(n ? n : 1, sizeof *reveal) : NULL;
    uint32_t *first = compat ? ws_malloc_array(n ? n : 1, sizeof *first) : NULL;
    if (!stack || !group || (compat && (!reveal || !first))) {
        free(stack);
        free(group);
        free(reveal);
        free(first);
        return ws_error_nomem(err, "wrong-order analysis");
    }
    for (uint64_t k = 0; compat && k < n; k++)
        reveal[k] = first[k] = WS_NONE32;
    uint64_t depth = 0, n_group = 0;
    for (uint64_t k = n + 1; k-- > 0;) {
        int is_recv = k < n && !(msgs[k].flags & WS_MSG_SEND) && msgs[k].match_row != WS_NONE32;
        if (k < n && !is_recv)
            continue;
        if (n_group && (k == n || msgs[k].call != msgs[group[0]].call)) {
            for (uint64_t g = 0; g < n_group; g++) {
                double tg = pt[group[g]];
                while (depth && pt[stack[depth - 1]] >= tg)
                    depth--;
                stack[depth++] = group[g];
            }
            n_group = 0;
        }
        if (k == n)
            continue;
        group[n_group++] = (uint32_t)k;
        double ls_k = ws_md_ls(d, k);
        if (!(ls_k > 0.0))
            continue;
        /* the nearest later receive whose send started earlier: the
         * topmost stack entry with a send enter below ts */
        double ts = pt[k];
        uint64_t lo = 0, hi = depth;
        while (lo < hi) {
            uint64_t mid = lo + (hi - lo) / 2;
            if (pt[stack[mid]] < ts)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo == 0)
            continue;
        uint32_t j = stack[lo - 1];
        uint32_t cp = ws_msg_callpath(e, &msgs[k]);
        double part = late_sender_part(a, e, ls, &msgs[k], ls_k, pt[k]);
        add(a, WS_M_MPI_LATESENDER_WO, cp, loc, part);
        if (compat) {
            reveal[k] = j;
            first[j] = (uint32_t)k; /* k descends: the last one set is the first */
            continue;
        }
        int same = msgs[j].partner == msgs[k].partner;
        add(a, same ? WS_M_MPI_LSWO_SAME : WS_M_MPI_LSWO_DIFFERENT, cp, loc, part);
        if (wo)
            wo[k] = same ? WS_WO_SAME : WS_WO_DIFFERENT;
        if (ws_window_has(&a->options, ws_msg_enter(e, &msgs[k])))
            add(a, (d->msg_bits[k] & WS_MD_EMPTY_SEND) ? WS_M_MPI_SLSWO_COUNT : WS_M_MPI_CLSWO_COUNT, cp, loc, 1.0);
    }
    for (uint64_t k = 0; compat && k < n; k++) {
        if (reveal[k] == WS_NONE32)
            continue;
        uint32_t j = reveal[k], f = first[j];
        uint32_t cp = ws_msg_callpath(e, &msgs[f]);
        int same = msgs[j].partner == msgs[f].partner;
        add(a, same ? WS_M_MPI_LSWO_SAME : WS_M_MPI_LSWO_DIFFERENT, cp, loc,
            late_sender_part(a, e, ls, &msgs[k], ws_md_ls(d, k), pt[k]));
        if (wo)
            wo[k] = same ? WS_WO_SAME : WS_WO_DIFFERENT;
        if (ws_window_has(&a->options, ws_msg_enter(e, &msgs[k])))
            add(a, (d->msg_bits[f] & WS_MD_EMPTY_SEND) ? WS_M_MPI_SLSWO_COUNT : WS_M_MPI_CLSWO_COUNT, cp, loc, 1.0);
    }
    free(stack);
    free(group);
    free(reveal);
    free(first);
    return WS_OK;
}

static int p1_end(void *state, const ws_replay_env *env, uint32_t loc, ws_error *err)
{
    (void)env;
    return flush_multi(state, loc, err);
}

/* ---- pass 2: backward (Late Receiver at the sender) -------------------- */

typedef struct recv_info {
    double ls;   /* Late Sender wait counted at the receive */
    double lr;   /* Late Receiver wait of the send */
    double post; /* when the receive was posted */
} recv_info;

static int p2_produce(void *state, const ws_replay_env *env, uint32_t loc, uint32_t row, int channel, ws_buffer *out,
                      ws_error *err)
{
    (void)channel;
    const ws_loc_data *d = data_of(state, loc);
    const ws_msg *m = &env->sync->locs[loc].msgs[row];
    const ws_events *e = &env->trace->locations[loc].events;
    recv_info p = {ws_md_ls(d, row), ws_md_lr(d, row), ws_msg_post(e, m)};
    if (ws_buffer_append(out, &p, sizeof p) != 0)
        return ws_error_nomem(err, "payload");
    return WS_OK;
}

static int p2_consume(void *state, const ws_replay_env *env, uint32_t loc, uint32_t row, int channel,
                      const void *data, size_t size, ws_error *err)
{
    (void)env;
    (void)channel;
    if (size != sizeof(recv_info))
        return ws_error_set(err, WS_ERR_INTERNAL, "unexpected payload size %zu", size);
    ws_loc_data *d = data_of(state, loc);
    recv_info p;
    memcpy(&p, data, sizeof p);
    int rc = set_ls(state, loc, row, p.ls, err);
    if (rc == WS_OK)
        rc = set_lr(state, loc, row, p.lr, err);
    if (rc)
        return rc;
    d->partner_time[row] = p.post;
    if (p.lr > 0.0)
        d->msg_bits[row] |= WS_MD_LR_CANDIDATE;
    return WS_OK;
}

/* The rows that wait keep their partner_time for the delay analysis
 * (analysis_int.h); the other rows' goes. */
static int keep_waiting_rows(ws_loc_data *d, const ws_msg *msgs, uint64_t n, ws_error *err)
{
    size_t n_waiting = 0;
    for (uint64_t k = 0; k < n; k++)
        n_waiting += ws_md_waits(d, &msgs[k], k);
    d->waiting_row = ws_malloc_array(n_waiting ? n_waiting : 1, sizeof *d->waiting_row);
    d->waiting_time = ws_malloc_array(n_waiting ? n_waiting : 1, sizeof *d->waiting_time);
    if (!d->waiting_row || !d->waiting_time)
        return ws_error_nomem(err, "waits");
    size_t j = 0;
    for (uint64_t k = 0; k < n; k++)
        if (ws_md_waits(d, &msgs[k], k)) {
            d->waiting_row[j] = (uint32_t)k;
            d->waiting_time[j++] = d->partner_time[k];
        }
    d->n_waiting = j;
    free(d->partner_time);
    d->partner_time = NULL;
    return WS_OK;
}

/* A Waitall/Waitsome waits once.  As in Scalasca 2.6: when one of the
 * receives it completes waited for a Late Sender, that Late Sender (the
 * largest, pass 1) is its wait state and none of the sends it completes
 * counts as Late Receiver; otherwise only the largest Late Receiver of its
 * sends counts.  Then the Late Sender and Late Receiver metrics of the
 * location are added. */
static int p2_end(void *state, const ws_replay_env *env, uint32_t loc, ws_error *err)
{
    ws_analysis *a = state;
    const ws_loc_sync *ls = &env->sync->locs[loc];
    const ws_msg *msgs = ls->msgs;
    ws_loc_data *d = data_of(a, loc);
    const double *pt = d->partner_time;
    const uint64_t n = ls->n_messages;
    const ws_events *e = &env->trace->locations[loc].events;
    ws_map64 best_lr, late_sender; /* completion call -> row */
    ws_map64_init(&best_lr);
    ws_map64_init(&late_sender);
    for (uint64_t k = 0; k < n; k++)
        if (!(msgs[k].flags & WS_MSG_SEND) && (msgs[k].flags & WS_MSG_MULTI) && ws_md_ls(d, k) > 0.0 &&
            ws_map64_put(&late_sender, msgs[k].call, k) != 0)
            goto nomem;
    /* (clearing a wait needs no memory: ws_md_set_lr cannot fail here) */
    for (uint64_t k = 0; k < n; k++) {
        if (!(msgs[k].flags & WS_MSG_SEND) || !(msgs[k].flags & WS_MSG_MULTI) || ws_md_lr(d, k) <= 0.0)
            continue;
        uint64_t other;
        if (ws_map64_get(&late_sender, msgs[k].other_call, &other)) {
            (void)ws_md_set_lr(d, n, k, 0.0);
        } else if (ws_map64_get(&best_lr, msgs[k].other_call, &other)) {
            if (ws_md_lr(d, k) > ws_md_lr(d, other)) {
                (void)ws_md_set_lr(d, n, other, 0.0);
                if (ws_map64_put(&best_lr, msgs[k].other_call, k) != 0)
                    goto nomem;
            } else {
                (void)ws_md_set_lr(d, n, k, 0.0);
            }
        } else if (ws_map64_put(&best_lr, msgs[k].other_call, k) != 0) {
            goto nomem;
        }
    }
    ws_map64_free(&best_lr);
    ws_map64_free(&late_sender);
    /* the wrong-order class of each Late Sender and the event of each
     * Late Receiver, for their records */
    uint8_t *wo = NULL;
    uint32_t *ch1 = NULL;
    if (a->options.wait_records) {
        wo = ws_calloc(n ? n : 1, sizeof *wo);
        ch1 = ws_malloc_array(n ? n : 1, sizeof *ch1);
        if (!wo || !ch1) {
            free(wo);
            free(ch1);
            return ws_error_nomem(err, "wait-state records");
        }
        ws_sync_ch1_events(e, ls, ch1);
    }
    int rc = wrong_order(a, loc, wo, err);
    for (uint64_t k = 0; k < n && rc == WS_OK; k++) {
        const ws_msg *m = &msgs[k];
        if (m->flags & WS_MSG_SEND) {
            double lr = ws_md_lr(d, k);
            if (lr <= 0.0)
                continue;
            /* from the enter of the call completing the send to the post */
            uint32_t cp = ws_msg_done_callpath(e, m);
            wait_instance w = {ws_msg_done_enter(e, m), pt[k], ch1 ? ch1[k] : WS_NONE32, m->partner, WS_WO_NONE};
            rc = ws_add_wait(a, WS_WP_LATERECEIVER, cp, loc, lr, &w, err);
            if (ws_window_has(&a->options, w.start))
                add(a, ws_msg_bytes(e, k) == 0 ? WS_M_MPI_SLR_COUNT : WS_M_MPI_CLR_COUNT, cp, loc, 1.0);
        } else if (ws_md_ls(d, k) > 0.0) {
            /* from the enter of the receiving call to min(send's enter, leave) (as pass 1) */
            uint32_t cp = ws_msg_callpath(e, m);
            double leave = ws_msg_leave(e, ls, m), until = pt[k] < leave ? pt[k] : leave;
            wait_instance w = {ws_msg_enter(e, m), until, e->msg_event[k], m->partner, wo ? wo[k] : WS_WO_NONE};
            rc = ws_add_wait(a, WS_WP_LATESENDER, cp, loc, ws_md_ls(d, k), &w, err);
            if (ws_window_has(&a->options, w.start))
                add(a, (d->msg_bits[k] & WS_MD_EMPTY_SEND) ? WS_M_MPI_SLS_COUNT : WS_M_MPI_CLS_COUNT, cp, loc, 1.0);
        }
    }
    free(wo);
    free(ch1);
    if (rc == WS_OK)
        rc = keep_waiting_rows(d, msgs, n, err);
    return rc;
nomem:
    ws_map64_free(&best_lr);
    ws_map64_free(&late_sender);
    return ws_error_nomem(err, "Late Receiver selection");
}

/* ---- pass 3: forward (both sides learn which waits count) ------------- */

/* Channel 0 carries the final Late Receiver to the receiver; channel 1,
 * for messages that had a Late Sender, its final value to the sender.
 * With them go the leaves of the sender's calls (holding the record,
 * completing the send) and of the receiver's call holding the record:
 * where a wait remains, the delay analysis needs them (points.c).  When
 * reproducing Scalasca 2.6 (scalasca_compat), channel 1 also carries the
 * leave of the call that posted the receive to a sender that may have
 * waited for a Late Receiver. */
typedef struct final_lr {
    double lr;
    double leave;
    double done_leave;
} final_lr;

typedef struct final_ls {
    double ls;
    double leave;
    double post_leave;
} final_ls;

static int p3_channels(void *state, const ws_replay_env *env, uint32_t loc, uint32_t row)
{
    (void)env;
    const ws_analysis *a = state;
    const ws_loc_data *d = data_of(state, loc);
    int late_receiver = a->options.scalasca_compat && (d->msg_bits[row] & WS_MD_LR_CANDIDATE);
    return 1 | (ws_md_ls(d, row) > 0.0 || late_receiver ? 2 : 0);
}

static int p3_produce(void *state, const ws_replay_env *env, uint32_t loc, uint32_t row, int channel, ws_buffer *out,
                      ws_error *err)
{
    const ws_analysis *a = state;
    ws_loc_data *d = data_of(state, loc);
    const ws_loc_sync *ls = &env->sync->locs[loc];
    const ws_msg *m = &ls->msgs[row];
    const ws_events *e = &env->trace->locations[loc].events;
    int rc;
    if (channel == 0) {
        final_lr p = {ws_md_lr(d, row), ws_msg_leave(e, ls, m), ws_msg_done(e, m)};
        rc = ws_buffer_append(out, &p, sizeof p);
    } else {
        double post_leave = a->options.scalasca_compat ? ws_leave_of_enter(e, m->other_call) : 0.0;
        final_ls p = {ws_md_ls(d, row), ws_msg_leave(e, ls, m), post_leave};
        rc = ws_buffer_append(out, &p, sizeof p);
    }
    return rc ? ws_error_nomem(err, "payload") : WS_OK;
}

static int p3_consume(void *state, const ws_replay_env *env, uint32_t loc, uint32_t row, int channel,
                      const void *data, size_t size, ws_error *err)
{
    (void)env;
    ws_analysis *a = state;
    ws_loc_data *d = data_of(state, loc);
    int rc;
    if (channel == 0) {
        if (size != sizeof(final_lr))
            return ws_error_set(err, WS_ERR_INTERNAL, "unexpected payload size %zu", size);
        final_lr p;
        memcpy(&p, data, sizeof p);
        if ((rc = set_lr(a, loc, row, p.lr, err)))
            return rc;
        if (ws_md_ls(d, row) > 0.0 || p.lr > 0.0)
            return keep_partner_leaves(d, row, p.leave, p.done_leave, err);
        return WS_OK;
    }
    if (size != sizeof(final_ls))
        return ws_error_set(err, WS_ERR_INTERNAL, "unexpected payload size %zu", size);
    final_ls p;
    memcpy(&p, data, sizeof p);
    if ((rc = set_ls(a, loc, row, p.ls, err)))
        return rc;
    if (p.ls > 0.0 || (a->options.scalasca_compat && ws_md_lr(d, row) > 0.0))
        return keep_partner_leaves(d, row, p.leave, p.post_leave, err);
    return WS_OK;
}

/* what p2_produce and p3_produce read of a row besides the row itself */
static void p23_prefetch(void *state, const ws_replay_env *env, uint32_t loc, uint32_t row)
{
    (void)env;
    ws_loc_data *d = data_of(state, loc);
    WS_PREFETCH(&d->wait[row]);
    if (d->msg_bits)
        WS_PREFETCH(&d->msg_bits[row]);
}

void ws_waitstates_p2p_handlers(int pass, ws_handler *h)
{
    switch (pass) {
    case 1:
        h->begin = p1_begin;
        h->end = p1_end;
        h->msg_produce = p1_produce;
        h->msg_consume = p1_consume;
        break;
    case 2:
        h->msg_produce = p2_produce;
        h->msg_prefetch = p23_prefetch;
        h->msg_consume = p2_consume;
        h->end = p2_end;
        break;
    case 3:
        h->msg_channels = p3_channels;
        h->msg_produce = p3_produce;
        h->msg_prefetch = p23_prefetch;
        h->msg_consume = p3_consume;
        break;
    default:
        break;
    }
}
