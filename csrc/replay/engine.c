/* The replay driver: a scheduler over the local locations that suspends
 * a location when it needs a payload that is not there yet and resumes
 * it when the transport delivers it. */
#include "replay.h"

#include <stdlib.h>
#include <string.h>

/* sites produced ahead at most: between processes (each batch saves
 * message latencies) and in one process (each saves location switches:
 * 800,000 two-member barriers cost 0.36 s instead of 0.44 s in pass 1) */
enum { REMOTE_WINDOW = 256, LOCAL_WINDOW = 64 };
/* locations from which the scheduler prefetches (prefetch_next): below,
 * the requests cost more than they save (64 ranks: 5 %) or nothing
 * measurable (the 1,024-rank stencil, whose runs are long) */
enum { PREFETCH_FROM = 2048 };

typedef struct loc_state {
    int64_t cursor; /* event to process next */
    int64_t site;   /* site to meet next */
    uint32_t stage; /* progress inside a synchronization event */
    int64_t sync;   /* dense walks: the next synchronization event (index into sync_events) */
    int64_t ahead;  /* with lookahead: the next site not yet produced */
    uint8_t consumed; /* channels consumed at the current stage */
    uint8_t done;
    uint8_t queued;
    uint8_t began;
} loc_state;

typedef struct scheduler {
    const ws_replay_env *env;
    int sparse; /* visit only the synchronization events */
    int messages_posted; /* every point-to-point payload was posted before the replay */
    ws_transport *tr;
    const ws_handler *handlers;
    uint32_t n_handlers;
    loc_state *states;
    uint32_t *local_index; /* location -> index in env->locations, or WS_NONE32 */
    uint32_t *queue;       /* ring buffer of local indices */
    uint32_t head, count;
    ws_buffer out;
    uint32_t lookahead; /* sites produced ahead (0: each at its site) */
    uint64_t processed;
    uint64_t next_report;
    uint64_t total;
    const ws_progress *progress;
} scheduler;

static void enqueue(scheduler *s, uint32_t local)
{
    loc_state *st = &s->states[local];
    if (st->queued || st->done)
        return;
    st->queued = 1;
    uint32_t n = s->env->n_locations;
    s->queue[(s->head + s->count) % n] = local;
    s->count++;
}

static void wake(void *scheduler_ptr, uint32_t location)
{
    scheduler *s = scheduler_ptr;
    if (location < s->env->trace->n_locations) {
        uint32_t local = s->local_index[location];
        if (local != WS_NONE32)
            enqueue(s, local);
    }
}

/* Exchanges the payloads of message `row` on the channels that meet at
 * this event (`at_record`: the message record itself, else the channel-1
 * point of a non-blocking call).  Returns WS_OK when all payloads were
 * consumed, WS_BLOCKED when one is missing. */
static int message_event(scheduler *s, uint32_t loc, loc_state *st, uint32_t row, int at_record, ws_error *err)
{
    const ws_replay_env *env = s->env;
    const ws_loc_sync *ls = &env->sync->locs[loc];
    const ws_msg *msg = &ls->msgs[row];
    /* this side produces on one channel and consumes on the other */
    int produced = ws_msg_produced_channel(msg, env->backward);
    if (produced < 0)
        return WS_OK;
    int here = ws_msg_channels_at(msg, at_record);
    uint64_t id = ws_msg_id(loc, row, msg);
    uint32_t partner = msg->partner;
    uint32_t H = s->n_handlers;
    if (s->messages_posted && st->stage < H)
        st->stage = H;
    for (; st->stage < 2 * H; st->stage++, st->consumed = 0) {
        int producing = st->stage < H;
        uint32_t h = producing ? st->stage : st->stage - H;
        int channel = producing ? produced : !produced;
        if (!(here & (1 << channel)))
            continue;
        const ws_handler *hd = &s->handlers[h];
        if (producing ? !hd->msg_produce : (!hd->msg_consume || (st->consumed & (1u << channel))))
            continue;
        if (!ws_replay_msg_uses(env, hd, loc, row, channel))
            continue;
        int key = (int)(2 * h) + channel;
        int rc;
        if (producing) {
            s->out.size = 0;
            rc = hd->msg_produce(hd->state, env, loc, row, channel, &s->out, err);
            if (rc == WS_OK)
                rc = s->tr->ops->post(s->tr, partner, id, key, s->out.data, s->out.size, err);
            if (rc)
                return rc;
            continue;
        }
        const void *data;
        size_t size;
        rc = s->tr->ops->take(s->tr, loc, id, key, &data, &size, err);
        if (rc)
            return rc; /* WS_BLOCKED: resumed at this stage */
        rc = hd->msg_consume(hd->state, env, loc, row, channel, data, size, err);
        s->tr->ops->release(s->tr, loc, id, key);
        if (rc)
            return rc;
        st->consumed |= (uint8_t)(1u << channel);
    }
    return WS_OK;
}

/* Handler h's contribution of `loc` to site `site`, if it takes part. */
static int produce_site(scheduler *s, uint32_t loc, uint32_t site, uint32_t h, ws_error *err)
{
    const ws_replay_env *env = s->env;
    const ws_handler *hd = &s->handlers[h];
    if (!ws_replay_site_takes_part(env, hd, loc, site))
        return WS_OK;
    return ws_replay_post_site(env, s->tr, hd, h, loc, site, &s->out, err);
}

int ws_replay_post_site(const ws_replay_env *env, ws_transport *tr, const ws_handler *hd, uint32_t h, uint32_t loc,
                        uint32_t site, ws_buffer *out, ws_error *err)
{
    const ws_site *st = &env->sync->locs[loc].sites[site];
    out->size = 0;
    int rc = hd->coll_produce(hd->state, env, loc, site, out, err);
    if (rc)
        return rc;
    return tr->ops->coll_post(tr, ws_replay_handler_key(ws_site_instance(st), h), ws_site_members(env->sync, st),
                              ws_site_expected_local(env->sync, st), ws_site_member(&env->sync->locs[loc], st), loc,
                              out->data, out->size, hd->coll_cache_size, err);
}

int ws_replay_consume_site(const ws_replay_env *env, ws_transport *tr, const ws_handler *hd, uint64_t key, uint32_t loc,
                           uint32_t site, ws_coll_view *view, ws_error *err)
{
    int rc = WS_OK;
    if (hd->coll_combine && !view->combined) {
        view->combined = 1;
        rc = hd->coll_combine(hd->state, env, loc, site, view, err);
    }
    if (rc == WS_OK)
        rc = hd->coll_consume(hd->state, env, loc, site, view, err);
    tr->ops->coll_release(tr, key, loc);
    return rc;
}

/* Whether every handler may produce location loc's contributions to
 * `site` ahead of the location's position. */
static int ahead_at(const scheduler *s, uint32_t loc, uint32_t site)
{
    for (uint32_t h = 0; h < s->n_handlers; h++) {
        const ws_handler *hd = &s->handlers[h];
        if (hd->coll_produce && !hd->coll_ahead && !hd->unordered &&
            !(hd->coll_ahead_at && hd->coll_ahead_at(hd->state, s->env, loc, site)))
            return 0;
    }
    return 1;
}

/* With lookahead: once the location reaches site `site`, produces the
 * contributions of up to `lookahead` sites from it on in replay order, as
 * long as they follow each other directly among the location's
 * synchronization events, belong to the same communicator and every
 * handler may make them ahead (coll_ahead, or coll_ahead_at there).  Then the
 * replay still follows the recorded causality: another member can use a
 * contribution to a later instance of the communicator only after the
 * earlier ones completed, and with them the location would have reached
 * the later site anyway (an inconsistent trace stalls exactly where it
 * stalls without lookahead). */
static int produce_ahead(scheduler *s, uint32_t loc, loc_state *st, uint32_t site, ws_error *err)
{
    const ws_loc_sync *ls = &s->env->sync->locs[loc];
    int64_t i = (int64_t)site;
    const int backward = s->env->backward;
    if (backward ? i < st->ahead : i > st->ahead)
        return ws_error_set(err, WS_ERR_INTERNAL, "location %u: a site was skipped", (unsigned)loc);
    if (i != st->ahead)
        return WS_OK; /* produced before */
    /* the site's position among the synchronization events: in a sparse
     * replay the cursor */
    uint64_t n = ls->n_sync_events;
    uint32_t ev = ls->sites[site].event;
    int64_t pos = s->sparse && st->cursor >= 0 && (uint64_t)st->cursor < n && ls->sync_events[st->cursor] == ev
                      ? st->cursor
                      : (int64_t)ws_lower_bound_u32(ls->sync_events, 0, n, ev);
    const uint32_t comm = ls->sites[site].comm;
    const int64_t step = backward ? -1 : 1;
    s->tr->burst = 1;
    for (uint32_t k = 0; k < s->lookahead; k++, i += step, pos += step) {
        if (i < 0 || i >= (int64_t)ls->n_sites || pos < 0 || pos >= (int64_t)ls->n_sync_events ||
            ls->sync_what[pos] != (WS_SYNC_SITE | (uint32_t)i) || ls->sync_events[pos] != ls->sites[i].event ||
            (k && ls->sites[i].comm != comm) || (k && !ahead_at(s, loc, (uint32_t)i)))
            break;
        for (uint32_t h = 0; h < s->n_handlers; h++) {
            int rc = produce_site(s, loc, (uint32_t)i, h, err);
            if (rc) {
                s->tr->burst = 0;
                return rc;
            }
        }
    }
    s->tr->burst = 0;
    if (i != (int64_t)site + step && i != (int64_t)site) {
        /* several sites at once: what the transport held back goes now */
        int woken = 0;
        int rc = s->tr->ops->progress(s->tr, 0, &woken, err);
        if (rc)
            return rc;
    }
    if (i == (int64_t)site) /* not found among the synchronization events: produce it alone */
        for (uint32_t h = 0; h < s->n_handlers; h++) {
            int rc = produce_site(s, loc, site, h, err);
            if (rc)
                return rc;
        }
    st->ahead = i == (int64_t)site ? i + step : i;
    return WS_OK;
}

static int site_event(scheduler *s, uint32_t loc, loc_state *st, uint32_t site, ws_error *err)
{
    const ws_replay_env *env = s->env;
    const ws_loc_sync *ls = &env->sync->locs[loc];
    uint32_t H = s->n_handlers;
    if (s->lookahead && st->stage == 0) {
        int rc = produce_ahead(s, loc, st, site, err);
        if (rc)
            return rc;
        st->stage = H;
    }
    while (st->stage < 2 * H) {
        uint32_t h = st->stage < H ? st->stage : st->stage - H;
        const ws_handler *hd = &s->handlers[h];
        if (ws_replay_site_takes_part(env, hd, loc, site)) {
            int rc;
            if (st->stage < H) {
                rc = ws_replay_post_site(env, s->tr, hd, h, loc, site, &s->out, err);
            } else {
                uint64_t key = ws_replay_handler_key(ws_site_instance(&ls->sites[site]), h);
                ws_coll_view *view = NULL;
                rc = s->tr->ops->coll_take(s->tr, key, loc, &view, err);
                if (rc == WS_OK)
                    rc = ws_replay_consume_site(env, s->tr, hd, key, loc, site, view, err);
            }
            if (rc)
                return rc; /* WS_BLOCKED included: the location waits for the instance */
        }
        st->stage++;
    }
    return WS_OK;
}

/* The site a queued location posts to in its coming run: a location
 * woken at a site it posted to consumes there and then goes on to the
 * next site (in the allreduce program: at once); one that has not posted
 * yet posts to its current site. */
static int64_t posting_next(const scheduler *s, const loc_state *st)
{
    if (st->stage < s->n_handlers)
        return st->site;
    return st->site + (s->env->backward ? -1 : 1);
}

/* Two runs ahead, for one site `x` of location loc: its record and the
 * handlers' records of it. */
static void prefetch_site(const scheduler *s, uint32_t loc, const ws_loc_sync *ls, int64_t x)
{
    if (x < 0 || x >= (int64_t)ls->n_sites)
        return;
    WS_PREFETCH_RECORD(&ls->sites[x]);
    for (uint32_t h = 0; h < s->n_handlers; h++)
        if (s->handlers[h].prefetch)
            s->handlers[h].prefetch(s->handlers[h].state, s->env, loc, x);
}

/* Asks the cache for what the locations next in the queue read first.
 * With thousands of locations their data leaves the cache between two
 * runs of one (an instance of 4,096 members runs each member once, for one
 * site), and every run would begin with a dozen misses in a row.  In three
 * steps, each finding in cache the addresses the step before asked for:
 * three runs ahead a location's state and tables (their addresses are at
 * hand); two runs ahead what it reads at its cursor and at the sites it
 * consumes at and posts to (posting_next), the handlers' records of those
 * sites included (ws_handler.prefetch); one run ahead what the records of
 * the site it posts to lead to (ws_handler.prefetch_deep: the site's
 * point, the events of its interval).  Allreduce program at 4,096 ranks:
 * 0.28 instead of 0.34 s with the first two steps for the current site
 * only; the third step and the site posted to take it from 276 to 241 ns
 * per event (bench_scale.py program; medians of 8 interleaved runs). */
static void prefetch_next(const scheduler *s)
{
    const ws_replay_env *env = s->env;
    uint32_t n = env->n_locations;
    if (s->count >= 3) {
        uint32_t far = s->queue[(s->head + 2) % n];
        const char *ls = (const char *)&env->sync->locs[env->locations[far]];
        WS_PREFETCH(&s->states[far]);
        WS_PREFETCH(ls);
        WS_PREFETCH(ls + 64);
        WS_PREFETCH(ls + 128);
        for (uint32_t h = 0; h < s->n_handlers; h++)
            if (s->handlers[h].prefetch)
                s->handlers[h].prefetch(s->handlers[h].state, env, env->locations[far], -1);
    }
    if (s->count >= 2) {
        uint32_t later = s->queue[(s->head + 1) % n];
        const loc_state *st = &s->states[later];
        uint32_t loc = env->locations[later];
        const ws_loc_sync *ls = &env->sync->locs[loc];
        if (s->sparse && st->cursor >= 0 && (uint64_t)st->cursor < ls->n_sync_events) {
            WS_PREFETCH(&ls->sync_events[st->cursor]);
            WS_PREFETCH(&ls->sync_what[st->cursor]);
        }
        int64_t then = posting_next(s, st);
        prefetch_site(s, loc, ls, st->site);
        if (then != st->site)
            prefetch_site(s, loc, ls, then);
    }
    if (s->count >= 1) {
        uint32_t next = s->queue[s->head];
        const loc_state *st = &s->states[next];
        uint32_t loc = env->locations[next];
        const ws_loc_sync *ls = &env->sync->locs[loc];
        int64_t then = posting_next(s, st);
        if (then >= 0 && then < (int64_t)ls->n_sites)
            for (uint32_t h = 0; h < s->n_handlers; h++)
                if (s->handlers[h].prefetch_deep)
                    s->handlers[h].prefetch_deep(s->handlers[h].state, env, loc, (uint32_t)then);
    }
}

/* Runs one location until it blocks or finishes. */
/* what the replay computes, for progress reports */
static int run_location(scheduler *s, uint32_t local, ws_error *err)
{
    const ws_replay_env *env = s->env;
    uint32_t loc = env->locations[local];
    loc_state *st = &s->states[local];
    const ws_events *e = &env->trace->locations[loc].events;
    const ws_loc_sync *ls = &env->sync->locs[loc];
    const int backward = env->backward;
    const int64_t n = (int64_t)e->n;
    int rc;

    if (!st->began) {
        st->began = 1;
        for (uint32_t h = 0; h < s->n_handlers; h++)
            if (s->handlers[h].begin && (rc = s->handlers[h].begin(s->handlers[h].state, env, loc, err)))
                return rc;
    }
    const int64_t limit = s->sparse ? (int64_t)ls->n_sync_events : n;
    for (;;) {
        if (st->cursor < 0 || st->cursor >= limit) {
            for (uint32_t h = 0; h < s->n_handlers; h++)
                if (s->handlers[h].end && (rc = s->handlers[h].end(s->handlers[h].state, env, loc, err)))
                    return rc;
            st->done = 1;
            return WS_OK;
        }
        uint64_t ev;
        rc = WS_OK;
        /* what happens here is known without reading the event: a sparse
         * walk visits only the synchronization events, a dense one meets
         * them on its way */
        int64_t at = s->sparse ? st->cursor : -1;
        if (s->sparse) {
            ev = ls->sync_events[at];
        } else {
            ev = (uint64_t)st->cursor;
            if (st->sync >= 0 && (uint64_t)st->sync < ls->n_sync_events && ls->sync_events[st->sync] == ev)
                at = st->sync;
        }
        if (at >= 0) {
            uint32_t what = ls->sync_what[at], index = what & WS_SYNC_INDEX;
            switch (what & ~(uint32_t)WS_SYNC_INDEX) {
            case WS_SYNC_RECORD:
                rc = message_event(s, loc, st, index, 1, err);
                break;
            case WS_SYNC_CH1:
                rc = message_event(s, loc, st, index, 0, err);
                break;
            default:
                rc = site_event(s, loc, st, index, err);
                if (rc == WS_OK)
                    st->site += backward ? -1 : 1;
                break;
            }
            if (rc == WS_OK && !s->sparse)
                st->sync += backward ? -1 : 1;
        }
        if (rc == WS_BLOCKED)
            return WS_BLOCKED;
        if (rc)
            return rc;
        for (uint32_t h = 0; h < s->n_handlers; h++)
            if (s->handlers[h].event && (rc = s->handlers[h].event(s->handlers[h].state, env, loc, ev, err)))
                return rc;
        st->stage = 0;
        st->cursor += backward ? -1 : 1;
        if (++s->processed >= s->next_report) {
            s->next_report = s->processed + (1u << 20);
            if (s->progress && s->progress->callback &&
                s->progress->callback(s->progress->context, ws_replay_stage_name(env),
                                      s->processed, s->total))
                return ws_error_set(err, WS_ERR_INTERRUPTED, "replay interrupted");
        }
    }
}

static int report_deadlock(scheduler *s, ws_error *err)
{
    const ws_replay_env *env = s->env;
    for (uint32_t i = 0; i < env->n_locations; i++) {
        const loc_state *st = &s->states[i];
        if (st->done)
            continue;
        uint32_t loc = env->locations[i];
        const ws_events *e = &env->trace->locations[loc].events;
        uint64_t ev = s->sparse ? env->sync->locs[loc].sync_events[st->cursor] : (uint64_t)st->cursor;
        const char *what = ws_is_message_kind(e->kind[ev]) ? "a message" : "the other members of a collective";
        ws_error_set(err, WS_ERR_MATCH,
                     "the %s replay cannot continue: location %u waits at event %llu (t=%.9f s) for %s that "
                     "never arrives; the trace's communication is inconsistent",
                     env->backward ? "backward" : "forward", (unsigned)loc, (unsigned long long)ev, ws_ev_time(e, ev),
                     what);
        return ws_trace_error_at(env->trace, loc, err);
    }
    return ws_error_set(err, WS_ERR_INTERNAL, "replay stalled without a waiting location");
}

int ws_replay_share_layout(ws_transport *tr, const ws_trace *t, const uint32_t *locations, uint32_t n,
                           ws_error *err)
{
    if (!tr->ops->set_layout)
        return WS_OK;
    uint64_t *counts = ws_calloc(t->n_locations ? t->n_locations : 1, sizeof *counts);
    if (!counts)
        return ws_error_nomem(err, "message layout");
    for (uint32_t i = 0; i < n; i++)
        counts[locations[i]] = t->locations[locations[i]].events.n_messages;
    int rc = tr->ops->allreduce_u64(tr, counts, t->n_locations, WS_SUM, err);
    if (rc == WS_OK)
        rc = tr->ops->set_layout(tr, counts, t->n_locations, err);
    free(counts);
    return rc;
}

int ws_replay_drop_layout(ws_transport *tr, ws_error *err)
{
    return tr->ops->set_layout ? tr->ops->set_layout(tr, NULL, 0, err) : WS_OK;
}

int ws_replay_is_join(const ws_replay_env *env, const ws_handler *handlers, size_t n_handlers)
{
    if (!env->join || n_handlers == 0)
        return 0;
    for (size_t h = 0; h < n_handlers; h++)
        if (!handlers[h].unordered)
            return 0;
    return 1;
}

int ws_replay_run(const ws_replay_env *env, ws_transport *tr, const ws_handler *handlers, size_t n_handlers,
                  const ws_progress *progress, ws_error *err)
{
    if (n_handlers == 0 || n_handlers > 15)
        return ws_error_set(err, WS_ERR_ARGUMENT, "a replay needs between 1 and 15 handlers");
    int messages_posted = 0;
    if (ws_replay_is_join(env, handlers, n_handlers)) {
        /* A join keeps every collective instance of the replay alive at
         * once (contributions, views, caches: a few hundred bytes each
         * against 16-24 bytes per payload): on a trace of many
         * collectives (800,000 barriers) that costs more memory and time
         * than the schedule, which recycles a handful.  There, only the
         * point-to-point payloads are produced ahead, and the schedule
         * suspends locations at collective sites only. */
        int collectives = 0;
        uint64_t sites = 0, messages = 0;
        for (size_t h = 0; h < n_handlers; h++)
            collectives |= handlers[h].coll_produce && handlers[h].coll_consume;
        for (uint32_t i = 0; i < env->n_locations; i++) {
            sites += env->sync->locs[env->locations[i]].n_sites;
            messages += env->sync->locs[env->locations[i]].n_messages;
        }
        if (!collectives || sites <= messages / 4 || env->join == 2)
            return ws_replay_join(env, tr, handlers, (uint32_t)n_handlers, progress, err);
        int rc = ws_replay_produce_messages(env, tr, handlers, (uint32_t)n_handlers, err);
        if (rc)
            return rc;
        messages_posted = 1;
    }
    scheduler s;
    memset(&s, 0, sizeof s);
    s.messages_posted = messages_posted;
    s.env = env;
    s.tr = tr;
    s.handlers = handlers;
    s.n_handlers = (uint32_t)n_handlers;
    s.progress = progress;
    s.next_report = 1u << 20;
    ws_buffer_init(&s.out);
    int rc = WS_OK;
    uint32_t n = env->n_locations;
    s.states = ws_calloc(n ? n : 1, sizeof *s.states);
    s.queue = ws_malloc_array(n ? n : 1, sizeof *s.queue);
    s.local_index = ws_malloc_array(env->trace->n_locations ? env->trace->n_locations : 1, sizeof *s.local_index);
    if (!s.states || !s.queue || !s.local_index) {
        rc = ws_error_nomem(err, "replay scheduler");
        goto done;
    }
    for (uint32_t l = 0; l < env->trace->n_locations; l++)
        s.local_index[l] = WS_NONE32;
    s.sparse = 1;
    for (size_t h = 0; h < n_handlers; h++)
        s.sparse &= handlers[h].sparse != 0;
    /* Between processes every instance whose members live apart costs a
     * message latency when each location produces at its site; producing
     * ahead batches them.  In one process it lets a location go on past
     * the sites its peers have not reached instead of being suspended at
     * each.  The window shrinks with the local locations, which bound the
     * instances it keeps open. */
    {
        int ahead = 1;
        for (size_t h = 0; h < n_handlers; h++)
            if (handlers[h].coll_produce && !handlers[h].coll_ahead && !handlers[h].unordered &&
                !handlers[h].coll_ahead_at)
                ahead = 0;
        uint32_t window = n ? 4096 / n : 0;
        uint32_t cap = tr->n_processes > 1 ? REMOTE_WINDOW : LOCAL_WINDOW;
        if (ahead && window > 1)
            s.lookahead = window < cap ? window : cap;
    }
    for (uint32_t i = 0; i < n; i++) {
        uint32_t loc = env->locations[i];
        const ws_events *e = &env->trace->locations[loc].events;
        uint64_t steps = s.sparse ? env->sync->locs[loc].n_sync_events : e->n;
        s.local_index[loc] = i;
        s.states[i].cursor = env->backward ? (int64_t)steps - 1 : 0;
        s.states[i].site = env->backward ? (int64_t)env->sync->locs[loc].n_sites - 1 : 0;
        s.states[i].sync = env->backward ? (int64_t)env->sync->locs[loc].n_sync_events - 1 : 0;
        s.states[i].ahead = s.states[i].site;
        s.total += steps;
    }
    tr->wake = wake;
    tr->scheduler = &s;
    tr->progress = s.progress;
    if (env->schedule_seed) {
        /* a seeded permutation of the starting order */
        uint32_t *order = ws_malloc_array(n ? n : 1, sizeof *order);
        if (!order) {
            rc = ws_error_nomem(err, "replay scheduler");
            goto done;
        }
        for (uint32_t i = 0; i < n; i++)
            order[i] = i;
        uint64_t x = env->schedule_seed;
        for (uint32_t i = n; i > 1; i--) {
            x = ws_hash64(x + i);
            uint32_t j = (uint32_t)(x % i);
            uint32_t tmp = order[i - 1];
            order[i - 1] = order[j];
            order[j] = tmp;
        }
        for (uint32_t i = 0; i < n; i++)
            enqueue(&s, order[i]);
        free(order);
    } else {
        for (uint32_t i = 0; i < n; i++)
            enqueue(&s, i);
    }
    uint32_t finished = 0;
    const int prefetch = n >= PREFETCH_FROM && !env->schedule_seed;
    while (finished < n) {
        tr->unfinished = n - finished;
        if (s.count == 0) {
            /* woken == 0: the transport knows nothing can arrive any more */
            int woken = 0;
            if ((rc = tr->ops->progress(tr, 1, &woken, err)))
                goto done;
            if (s.count == 0 && !woken) {
                rc = report_deadlock(&s, err);
                goto done;
            }
            continue;
        }
        uint32_t local;
        if (env->schedule_seed && (ws_hash64(env->schedule_seed ^ s.processed) & 1)) {
            /* take the newest entry instead of the oldest */
            uint32_t back = (s.head + s.count - 1) % n;
            local = s.queue[back];
        } else {
            local = s.queue[s.head];
            s.head = (s.head + 1) % n;
        }
        s.count--;
        s.states[local].queued = 0;
        if (prefetch)
            prefetch_next(&s);
        if (s.states[local].done)
            continue; /* woken by its own post while it was running */
        rc = run_location(&s, local, err);
        if (rc == WS_BLOCKED) {
            rc = WS_OK;
            continue;
        }
        if (rc)
            goto done;
        if (s.states[local].done)
            finished++;
    }
    tr->unfinished = 0;
    rc = tr->ops->finish(tr, err);
    if (rc == WS_OK && s.progress && s.progress->callback &&
        s.progress->callback(s.progress->context, ws_replay_stage_name(env), s.total, s.total))
        rc = ws_error_set(err, WS_ERR_INTERRUPTED, "replay interrupted");
done:
    tr->wake = NULL;
    tr->scheduler = NULL;
    tr->progress = NULL;
    ws_buffer_free(&s.out);
    free(s.states);
    free(s.queue);
    free(s.local_index);
    return rc;
}
