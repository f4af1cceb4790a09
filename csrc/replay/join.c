/* A replay whose handlers need no causal order (every one `unordered`,
 * see replay.h), executed as a join over the matched pairs instead of a
 * scheduled replay:
 *
 *   phase A: every local location, over its synchronization events only,
 *            produces and posts all its payloads and contributions
 *            (transports never block on a post; between processes they
 *            travel in large batches, tr->bulk);
 *   exchange: one progress call delivers what is still buffered;
 *   phase B: each local location in turn is walked once, from its first
 *            event to its last (or back), calling begin, consume,
 *            combine (once per collective instance), event and end in
 *            the scheduled replay's order.  No location is ever
 *            suspended: in one process every payload is there; between
 *            processes a take that finds nothing waits for the transport
 *            (the other processes produce everything before they wait).
 *
 * Per location the handlers see the calls of the scheduled replay in the
 * same order, with the same payloads, so the results are bitwise the
 * same.  What a join cannot do is notice a trace whose communication is
 * causally inconsistent (a cycle of waits stalls the scheduled replay but
 * not a join); the analysis's first replay therefore stays scheduled
 * (ws_replay_env.join).
 *
 * A message whose both ends are locations of the join is not stored at
 * all for a handler whose msg_produce may run at any time (msg_pure): in
 * phase B the consuming side calls the producer for it (the partner's row
 * is ws_msg.match_row on both sides).  Then a join in one process keeps
 * no payload of those handlers alive: no memory per message, no copy.
 *
 * Collective instances with a single member (MPI_COMM_SELF-like
 * communicators, whose instance keys repeat on every location) are
 * produced and consumed at their site in phase B, as the scheduled replay
 * does. */
#include "replay.h"

#include <stdlib.h>
#include <string.h>

typedef struct join {
    const ws_replay_env *env;
    ws_transport *tr;
    const ws_handler *handlers;
    uint32_t n_handlers;
    int sparse;
    int coll_none;  /* no handler takes part in collectives: sites produce nothing */
    int sites_idle; /* ... and none sees events either: sites are steps that do nothing */
    ws_buffer out;
    uint64_t processed, next_report, total;
    const ws_progress *progress;
    uint8_t *local; /* per trace location: one of the join's (NULL: every payload goes through the transport) */
    int pure_all;   /* with local: every handler that produces on messages is msg_pure */
    int any_event;  /* some handler sees events */
    int produced_channels, consumed_channels; /* bit c: some handler may produce (consume) on channel c */
} join;

static void join_wake(void *scheduler, uint32_t location)
{
    (void)scheduler;
    (void)location; /* a join never suspends a location: nothing to wake */
}

/* A take that finds nothing: the replay cannot get through this event
 * (the same message as the scheduled replay's). */
static int stalled(const join *j, uint32_t loc, uint64_t ev, int message, ws_error *err)
{
    const ws_replay_env *env = j->env;
    const ws_events *e = &env->trace->locations[loc].events;
    ws_error_set(err, WS_ERR_MATCH,
                 "the %s replay cannot continue: location %u waits at event %llu (t=%.9f s) for %s that never "
                 "arrives; the trace's communication is inconsistent",
                 env->backward ? "backward" : "forward", (unsigned)loc, (unsigned long long)ev, ws_ev_time(e, ev),
                 message ? "a message" : "the other members of a collective");
    return ws_trace_error_at(env->trace, loc, err);
}

/* Lets the transport move data until something arrived (WS_OK) or
 * nothing can arrive any more (WS_BLOCKED). */
static int wait_for_data(join *j, ws_error *err)
{
    int woken = 0;
    int rc = j->tr->ops->progress(j->tr, 1, &woken, err);
    if (rc)
        return rc;
    return woken ? WS_OK : WS_BLOCKED;
}

/* With j->local: whether both ends of message `msg` are locations of
 * this join and know each other's rows.  Both ends answer alike (a send
 * knows the receive's row exactly when the receive's location was built
 * with it, see ws_msg.match_row). */
static inline int both_ends_here(const join *j, const ws_msg *msg)
{
    return msg->match_row != WS_NONE32 && j->local[msg->partner];
}

/* Whether the consuming side of message `msg` calls the producer for
 * handler hd's payloads instead of taking them from the transport. */
static int pulled(const join *j, const ws_handler *hd, const ws_msg *msg)
{
    return j->local && hd->msg_pure && both_ends_here(j, msg);
}

/* The handlers' payloads of message `row` on `channel`, which this side
 * produces on. */
static int produce_on(join *j, uint32_t loc, uint32_t row, const ws_msg *msg, int channel, ws_error *err)
{
    uint64_t id = ws_msg_id(loc, row, msg);
    for (uint32_t h = 0; h < j->n_handlers; h++) {
        const ws_handler *hd = &j->handlers[h];
        if (!hd->msg_produce || pulled(j, hd, msg))
            continue;
        if (!ws_replay_msg_uses(j->env, hd, loc, row, channel))
            continue;
        j->out.size = 0;
        int rc = hd->msg_produce(hd->state, j->env, loc, row, channel, &j->out, err);
        if (rc == WS_OK)
            rc = j->tr->ops->post(j->tr, msg->partner, id, (int)(2 * h) + channel, j->out.data, j->out.size, err);
        if (rc)
            return rc;
    }
    return WS_OK;
}

/* The payloads of message `row` on `channel`, which the partner produces
 * on, taken or pulled and consumed by each handler. */
static int consume_on(join *j, uint32_t loc, uint32_t row, const ws_msg *msg, int channel, uint64_t ev, ws_error *err)
{
    ws_transport *tr = j->tr;
    for (uint32_t h = 0; h < j->n_handlers; h++) {
        const ws_handler *hd = &j->handlers[h];
        if (!hd->msg_consume)
            continue;
        if (!ws_replay_msg_uses(j->env, hd, loc, row, channel))
            continue;
        int rc;
        if (pulled(j, hd, msg)) {
            j->out.size = 0;
            rc = hd->msg_produce(hd->state, j->env, msg->partner, msg->match_row, channel, &j->out, err);
            if (rc == WS_OK)
                rc = hd->msg_consume(hd->state, j->env, loc, row, channel, j->out.data, j->out.size, err);
            if (rc)
                return rc;
            continue;
        }
        uint64_t id = ws_msg_id(loc, row, msg);
        int key = (int)(2 * h) + channel;
        const void *data;
        size_t size;
        while ((rc = tr->ops->take(tr, loc, id, key, &data, &size, err)) == WS_BLOCKED)
            if ((rc = wait_for_data(j, err)) != WS_OK)
                return rc == WS_BLOCKED ? stalled(j, loc, ev, 1, err) : rc;
        if (rc)
            return rc;
        rc = hd->msg_consume(hd->state, j->env, loc, row, channel, data, size, err);
        tr->ops->release(tr, loc, id, key);
        if (rc)
            return rc;
    }
    return WS_OK;
}

/* Message `row` of `loc` at its record or channel-1 point (at_record): the
 * checks that most often find nothing to do, made where the walks call
 * them. */
static inline int produce_message(join *j, uint32_t loc, uint32_t row, int at_record, ws_error *err)
{
    const ws_msg *msg = &j->env->sync->locs[loc].msgs[row];
    int channel = ws_msg_produced_channel(msg, j->env->backward);
    if (channel < 0 || !(ws_msg_channels_at(msg, at_record) & j->produced_channels & (1 << channel)))
        return WS_OK;
    return produce_on(j, loc, row, msg, channel, err);
}

static inline int consume_message(join *j, uint32_t loc, uint32_t row, int at_record, uint64_t ev, ws_error *err)
{
    const ws_msg *msg = &j->env->sync->locs[loc].msgs[row];
    int channel = ws_msg_produced_channel(msg, j->env->backward);
    if (channel < 0)
        return WS_OK;
    channel = !channel; /* the one the partner produces on */
    if (!(ws_msg_channels_at(msg, at_record) & j->consumed_channels & (1 << channel)))
        return WS_OK;
    return consume_on(j, loc, row, msg, channel, ev, err);
}

static int produce_site(join *j, uint32_t loc, uint32_t site, uint32_t h, ws_error *err)
{
    return ws_replay_post_site(j->env, j->tr, &j->handlers[h], h, loc, site, &j->out, err);
}

/* single-member instances are produced in phase B, at their site */
static int produced_ahead(const ws_sync *s, const ws_loc_sync *ls, uint32_t site)
{
    return ws_site_members(s, &ls->sites[site]) > 1;
}

static int consume_site(join *j, uint32_t loc, uint32_t site, uint64_t ev, ws_error *err)
{
    const ws_replay_env *env = j->env;
    const ws_loc_sync *ls = &env->sync->locs[loc];
    ws_transport *tr = j->tr;
    int rc;
    if (!produced_ahead(j->env->sync, ls, site))
        for (uint32_t h = 0; h < j->n_handlers; h++)
            if (ws_replay_site_takes_part(j->env, &j->handlers[h], loc, site) && (rc = produce_site(j, loc, site, h, err)))
                return rc;
    for (uint32_t h = 0; h < j->n_handlers; h++) {
        const ws_handler *hd = &j->handlers[h];
        if (!ws_replay_site_takes_part(j->env, hd, loc, site))
            continue;
        uint64_t key = ws_replay_handler_key(ws_site_instance(&ls->sites[site]), h);
        ws_coll_view *view = NULL;
        while ((rc = tr->ops->coll_take(tr, key, loc, &view, err)) == WS_BLOCKED)
            if ((rc = wait_for_data(j, err)) != WS_OK)
                return rc == WS_BLOCKED ? stalled(j, loc, ev, 0, err) : rc;
        if (rc || (rc = ws_replay_consume_site(env, tr, hd, key, loc, site, view, err)))
            return rc;
    }
    return WS_OK;
}

/* Phase A for one location: every payload and contribution it produces,
 * in replay order. */
static int produce_location(join *j, uint32_t loc, int with_sites, ws_error *err)
{
    const ws_loc_sync *ls = &j->env->sync->locs[loc];
    const int backward = j->env->backward;
    const int64_t n = (int64_t)ls->n_sync_events;
    if (j->coll_none && ls->n_messages == 0)
        return WS_OK; /* only sites, and nobody produces there */
    for (int64_t k = backward ? n - 1 : 0; backward ? k >= 0 : k < n; k += backward ? -1 : 1) {
        uint32_t what = ls->sync_what[k], index = what & WS_SYNC_INDEX;
        int rc = WS_OK;
        uint32_t kind = what & ~(uint32_t)WS_SYNC_INDEX;
        if (kind != WS_SYNC_SITE && j->pure_all) {
            /* every handler's payloads pulled by the consuming side:
             * nothing to do (passes 2 and 3 in one process: every message) */
            if (both_ends_here(j, &ls->msgs[index]))
                continue;
        }
        switch (kind) {
        case WS_SYNC_RECORD:
            rc = produce_message(j, loc, index, 1, err);
            break;
        case WS_SYNC_CH1:
            rc = produce_message(j, loc, index, 0, err);
            break;
        default:
            if (with_sites && !j->coll_none && produced_ahead(j->env->sync, ls, index))
                for (uint32_t h = 0; h < j->n_handlers && rc == WS_OK; h++)
                    if (ws_replay_site_takes_part(j->env, &j->handlers[h], loc, index))
                        rc = produce_site(j, loc, index, h, err);
            break;
        }
        if (rc)
            return rc;
    }
    return WS_OK;
}

static int report(join *j, uint64_t done, ws_error *err)
{
    const ws_progress *p = j->progress;
    if (p && p->callback && p->callback(p->context, ws_replay_stage_name(j->env), done, j->total))
        return ws_error_set(err, WS_ERR_INTERRUPTED, "replay interrupted");
    return WS_OK;
}

/* One step of phase B done: reports every 2^20 steps. */
static int count_steps(join *j, uint64_t n, ws_error *err)
{
    j->processed += n;
    if (j->processed < j->next_report)
        return WS_OK;
    j->next_report = j->processed + (1u << 20);
    return report(j, j->processed, err);
}

static int count_step(join *j, ws_error *err)
{
    return count_steps(j, 1, err);
}

enum { PULL_AHEAD = 8 };

/* What the walk asked the cache for, per synchronization event ahead
 * (indexed by the event's position modulo PULL_AHEAD): the partner's row
 * of a pulled message, so that the second step needs no second lookup. */
typedef struct pull_ring {
    int64_t k[PULL_AHEAD];
    const ws_msg *other[PULL_AHEAD];
    uint32_t partner[PULL_AHEAD];
} pull_ring;

static void pull_ring_clear(pull_ring *r)
{
    for (int i = 0; i < PULL_AHEAD; i++)
        r->k[i] = -1;
}

/* The walk is about to pull the payloads of the messages at the
 * synchronization events ahead: ask the cache for the partner's row now,
 * in two steps (PULL_AHEAD events ahead the row itself and the handlers'
 * data of it, half as far the times of its events, whose indices the row
 * holds). */
static void prefetch_pull(const join *j, const ws_loc_sync *ls, int64_t cursor, int64_t step, pull_ring *r)
{
    const ws_replay_env *env = j->env;
    int64_t k = cursor + step * PULL_AHEAD;
    if (k >= 0 && (uint64_t)k < ls->n_sync_events) {
        uint32_t what = ls->sync_what[k];
        const ws_msg *msg = (what & ~(uint32_t)WS_SYNC_INDEX) != WS_SYNC_SITE ? &ls->msgs[what & WS_SYNC_INDEX] : NULL;
        int slot = (int)((uint64_t)k % PULL_AHEAD);
        r->k[slot] = -1;
        if (msg && both_ends_here(j, msg)) {
            const ws_msg *other = &env->sync->locs[msg->partner].msgs[msg->match_row];
            WS_PREFETCH(other);
            for (uint32_t h = 0; h < j->n_handlers; h++)
                if (j->handlers[h].msg_prefetch)
                    j->handlers[h].msg_prefetch(j->handlers[h].state, env, msg->partner, msg->match_row);
            r->k[slot] = k;
            r->other[slot] = other;
            r->partner[slot] = msg->partner;
        }
    }
    k = cursor + step * (PULL_AHEAD / 2);
    if (k < 0)
        return;
    int slot = (int)((uint64_t)k % PULL_AHEAD);
    if (r->k[slot] != k)
        return;
    const ws_msg *other = r->other[slot];
    const ws_events *pe = &env->trace->locations[r->partner[slot]].events;
    WS_PREFETCH(ws_ev_time_addr(pe, ws_msg_leave_event(&env->sync->locs[r->partner[slot]], other)));
    WS_PREFETCH(ws_ev_time_addr(pe, other->other_call));
    WS_PREFETCH(ws_ev_time_addr(pe, other->done_leave));
}

/* Phase B for one location: the walk of the scheduled replay, without
 * produce steps and without suspension. */
static int consume_location(join *j, uint32_t loc, ws_error *err)
{
    const ws_replay_env *env = j->env;
    const ws_events *e = &env->trace->locations[loc].events;
    const ws_loc_sync *ls = &env->sync->locs[loc];
    const int backward = env->backward;
    const int64_t step = backward ? -1 : 1;
    const uint32_t H = j->n_handlers;
    int rc;
    for (uint32_t h = 0; h < H; h++)
        if (j->handlers[h].begin && (rc = j->handlers[h].begin(j->handlers[h].state, env, loc, err)))
            return rc;
    int64_t limit = j->sparse ? (int64_t)ls->n_sync_events : (int64_t)e->n;
    if (j->sparse && j->sites_idle && ls->n_messages == 0) {
        /* only sites, where nothing happens (passes 2 and 3 on the 2-rank
         * barrier trace: 1.6 M sites each): counted at once, not walked */
        if ((rc = count_steps(j, (uint64_t)limit, err)))
            return rc;
        limit = 0;
    }
    /* dense walks: the next synchronization event */
    int64_t sync = backward ? (int64_t)ls->n_sync_events - 1 : 0;
    pull_ring ring;
    pull_ring_clear(&ring);
    for (int64_t cursor = backward ? limit - 1 : 0; cursor >= 0 && cursor < limit; cursor += step) {
        uint64_t ev;
        rc = WS_OK;
        int64_t at = -1;
        if (j->sparse) {
            at = cursor;
            ev = ls->sync_events[at];
        } else {
            ev = (uint64_t)cursor;
            if (sync >= 0 && (uint64_t)sync < ls->n_sync_events && ls->sync_events[sync] == ev) {
                at = sync;
                sync += step;
            }
        }
        if (at >= 0) {
            uint32_t what = ls->sync_what[at], index = what & WS_SYNC_INDEX;
            if (j->sparse && j->sites_idle && (what & ~(uint32_t)WS_SYNC_INDEX) == WS_SYNC_SITE) {
                /* nothing to do here */
                if ((rc = count_step(j, err)))
                    return rc;
                continue;
            }
            if (j->sparse && j->local)
                prefetch_pull(j, ls, cursor, step, &ring);
            switch (what & ~(uint32_t)WS_SYNC_INDEX) {
            case WS_SYNC_RECORD:
                rc = consume_message(j, loc, index, 1, ev, err);
                break;
            case WS_SYNC_CH1:
                rc = consume_message(j, loc, index, 0, ev, err);
                break;
            default:
                rc = consume_site(j, loc, index, ev, err);
                break;
            }
        }
        if (rc)
            return rc;
        for (uint32_t h = 0; h < H && j->any_event; h++)
            if (j->handlers[h].event && (rc = j->handlers[h].event(j->handlers[h].state, env, loc, ev, err)))
                return rc;
        if ((rc = count_step(j, err)))
            return rc;
    }
    for (uint32_t h = 0; h < H; h++)
        if (j->handlers[h].end && (rc = j->handlers[h].end(j->handlers[h].state, env, loc, err)))
            return rc;
    return WS_OK;
}

/* The order in which the local locations are visited: as given, or a
 * permutation derived from the schedule seed (results must not depend on
 * it). */
static uint32_t *visiting_order(const ws_replay_env *env)
{
    uint32_t n = env->n_locations;
    uint32_t *order = ws_malloc_array(n ? n : 1, sizeof *order);
    if (!order)
        return NULL;
    for (uint32_t i = 0; i < n; i++)
        order[i] = i;
    uint64_t x = env->schedule_seed;
    for (uint32_t i = n; env->schedule_seed && i > 1; i--) {
        x = ws_hash64(x + i);
        uint32_t k = (uint32_t)(x % i);
        uint32_t tmp = order[i - 1];
        order[i - 1] = order[k];
        order[k] = tmp;
    }
    return order;
}

/* The channels any handler may produce or consume on (msg_channels may
 * answer both; without it a handler uses channel 0 only). */
static void set_channels(join *j)
{
    for (uint32_t h = 0; h < j->n_handlers; h++) {
        int used = j->handlers[h].msg_channels ? 3 : 1;
        if (j->handlers[h].msg_produce)
            j->produced_channels |= used;
        if (j->handlers[h].msg_consume)
            j->consumed_channels |= used;
    }
}

int ws_replay_join(const ws_replay_env *env, ws_transport *tr, const ws_handler *handlers, uint32_t n_handlers,
                   const ws_progress *progress, ws_error *err)
{
    join j;
    memset(&j, 0, sizeof j);
    j.env = env;
    j.tr = tr;
    j.handlers = handlers;
    j.n_handlers = n_handlers;
    j.progress = progress;
    j.next_report = 1u << 20;
    j.sparse = 1;
    j.coll_none = 1;
    int no_events = 1;
    for (uint32_t h = 0; h < n_handlers; h++) {
        j.sparse &= handlers[h].sparse != 0;
        j.coll_none &= !(handlers[h].coll_produce && handlers[h].coll_consume);
        no_events &= !handlers[h].event;
    }
    j.sites_idle = j.coll_none && no_events;
    j.any_event = !no_events;
    set_channels(&j);
    ws_buffer_init(&j.out);
    const uint32_t n = env->n_locations;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t loc = env->locations[i];
        j.total += j.sparse ? env->sync->locs[loc].n_sync_events : env->trace->locations[loc].events.n;
    }
    uint32_t *order = visiting_order(env);
    int pure = 0;
    for (uint32_t h = 0; h < n_handlers; h++)
        pure |= handlers[h].msg_pure && handlers[h].msg_produce && handlers[h].msg_consume;
    if (order && pure && (j.local = ws_calloc(env->trace->n_locations ? env->trace->n_locations : 1, 1)))
        for (uint32_t i = 0; i < n; i++)
            j.local[env->locations[i]] = 1;
    j.pure_all = j.local != NULL;
    for (uint32_t h = 0; h < n_handlers; h++)
        if (handlers[h].msg_produce && !handlers[h].msg_pure)
            j.pure_all = 0;
    if (!order || (pure && !j.local)) {
        free(order);
        return ws_error_nomem(err, "replay order");
    }
    tr->wake = join_wake;
    tr->scheduler = &j;
    tr->progress = progress;
    tr->unfinished = n;
    int rc = WS_OK;
    /* phase A */
    tr->bulk = 1;
    for (uint32_t i = 0; i < n && rc == WS_OK; i++)
        rc = produce_location(&j, env->locations[order[i]], 1, err);
    tr->bulk = 0;
    int woken = 0;
    if (rc == WS_OK)
        rc = tr->ops->progress(tr, 0, &woken, err); /* sends what is still buffered */
    /* phase B */
    for (uint32_t i = 0; i < n && rc == WS_OK; i++) {
        rc = consume_location(&j, env->locations[order[i]], err);
        tr->unfinished = n - i - 1;
    }
    tr->unfinished = 0;
    if (rc == WS_OK)
        rc = tr->ops->finish(tr, err);
    if (rc == WS_OK)
        rc = report(&j, j.total, err);
    tr->wake = NULL;
    tr->scheduler = NULL;
    tr->progress = NULL;
    ws_buffer_free(&j.out);
    free(order);
    free(j.local);
    return rc;
}

int ws_replay_produce_messages(const ws_replay_env *env, ws_transport *tr, const ws_handler *handlers,
                               uint32_t n_handlers, ws_error *err)
{
    join j;
    memset(&j, 0, sizeof j);
    j.env = env;
    j.tr = tr;
    j.handlers = handlers;
    j.n_handlers = n_handlers;
    set_channels(&j);
    ws_buffer_init(&j.out);
    int rc = WS_OK;
    tr->bulk = 1;
    for (uint32_t i = 0; i < env->n_locations && rc == WS_OK; i++)
        rc = produce_location(&j, env->locations[i], 0, err);
    tr->bulk = 0;
    int woken = 0;
    if (rc == WS_OK)
        rc = tr->ops->progress(tr, 0, &woken, err); /* sends what is still buffered */
    ws_buffer_free(&j.out);
    return rc;
}
