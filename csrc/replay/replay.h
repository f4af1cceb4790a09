/* The replay engine: traverses every local location's events forward or
 * backward and lets analyses (handlers) exchange payloads at the
 * synchronization points the trace recorded.
 *
 * A message offers two channels (see sync.h).  On channel 0 the sender
 * produces in a forward replay and the receiver in a backward replay; on
 * channel 1 it is the other way round.  A handler chooses per message
 * which channels it uses (both sides must choose alike).  At a
 * collective site every member contributes and every member receives all
 * contributions; a handler's coll_combine step processes them once per
 * instance so that each member's consume costs O(1).  A location that needs a payload not yet produced is
 * suspended and resumed when the transport delivers it, so the replay
 * order follows the recorded causality.  Handlers are written once and
 * run unchanged with the in-process and the MPI transport.
 */
#ifndef WS_REPLAY_REPLAY_H
#define WS_REPLAY_REPLAY_H

#include "../common/util.h"
#include "../waitscope.h" /* ws_progress */
#include "../trace/trace.h"
#include "sync.h"
#include "transport.h"

typedef struct ws_replay_env {
    const ws_trace *trace;
    const ws_sync *sync;
    const uint32_t *locations; /* the locations replayed here */
    uint32_t n_locations;
    int backward;
    /* what the replay computes, for progress reports (NULL: "forward
     * replay" / "backward replay") */
    const char *name;
    /* Nonzero: visit locations in a pseudo-random order derived from this
     * seed (results must not depend on it; used by the tests). */
    uint64_t schedule_seed;
    /* Nonzero: a replay whose handlers are all `unordered` may run as a
     * join (join.c) instead of a scheduled replay; 2: even when it has
     * many collective sites (see ws_replay_run).  A join does not follow
     * the recorded causality, so it does not notice a trace whose
     * communication is causally inconsistent: the replay that establishes
     * consistency (the analysis's first) leaves this 0. */
    int join;
} ws_replay_env;

typedef struct ws_handler {
    void *state;
    /* Nonzero if the handler needs no event but the synchronization
     * events: when every handler of a replay says so, the replay visits
     * only those (and calls `event` only for them). */
    int sparse;
    /* bytes of per-instance scratch the collective view offers */
    size_t coll_cache_size;
    /* Nonzero if coll_active and coll_produce depend on nothing this
     * replay changes (only on the trace and earlier replays): the engine
     * may then produce a location's contributions to later sites ahead
     * of its position, so that a transport between processes sends them
     * in batches instead of waiting once per instance. */
    int coll_ahead;
    /* Nonzero if the produce side -- msg_channels, msg_produce,
     * coll_active, coll_produce -- depends on nothing this replay changes
     * (only on the trace and earlier replays; what msg_channels answers
     * for a message may change only through that message's own consume
     * at its last exchange point), so that every payload of the replay
     * can be produced before any is consumed.  Implies
     * coll_ahead.  When every handler says so (and env->join allows it),
     * the engine runs the replay as a join (join.c): first every local
     * location produces and posts all its payloads, then each location in
     * turn is walked once, consuming; begin, event, consume, combine and
     * end see the same calls in the same order per location as in the
     * scheduled replay, so the results are the same. */
    int unordered;
    /* Nonzero if msg_produce may run at any time of the replay, before or
     * after any consume or end step of the producing location: it reads
     * nothing those steps write.  A join (join.c) then lets the consuming
     * side of a message whose ends are both its own locations call the
     * producer itself instead of taking a stored payload. */
    int msg_pure;
    /* Optional, with msg_pure: asks the cache for what msg_produce will
     * read of message `row` of `loc` (a join calls it shortly before it
     * pulls the payload). */
    void (*msg_prefetch)(void *state, const ws_replay_env *env, uint32_t loc, uint32_t row);

    int (*begin)(void *state, const ws_replay_env *env, uint32_t loc, ws_error *err);
    /* every event, after the payloads of a synchronization event */
    int (*event)(void *state, const ws_replay_env *env, uint32_t loc, uint64_t ev, ws_error *err);
    int (*end)(void *state, const ws_replay_env *env, uint32_t loc, ws_error *err);

    /* Channels message `row` of `loc` uses: bit 0 channel 0, bit 1
     * channel 1 (NULL: channel 0 only).  Both sides must answer alike,
     * so decide from data both know. */
    int (*msg_channels)(void *state, const ws_replay_env *env, uint32_t loc, uint32_t row);
    int (*msg_produce)(void *state, const ws_replay_env *env, uint32_t loc, uint32_t row, int channel,
                       ws_buffer *out, ws_error *err);
    int (*msg_consume)(void *state, const ws_replay_env *env, uint32_t loc, uint32_t row, int channel,
                       const void *data, size_t size, ws_error *err);

    /* Whether collective site `site` takes part (NULL: always).  All
     * members of an instance must answer alike. */
    int (*coll_active)(void *state, const ws_replay_env *env, uint32_t loc, uint32_t site);
    int (*coll_produce)(void *state, const ws_replay_env *env, uint32_t loc, uint32_t site, ws_buffer *out,
                        ws_error *err);
    int (*coll_consume)(void *state, const ws_replay_env *env, uint32_t loc, uint32_t site,
                        const ws_coll_view *view, ws_error *err);
    /* Optional: processes a complete instance once per process, before
     * the first coll_consume of its members here (called with that first
     * member's loc and site).  Whatever needs every contribution belongs
     * here, computed in O(members) into view->cache (coll_cache_size
     * bytes) or view->shared (malloc'ed by the handler, freed with the
     * instance), so that coll_consume reads only its own contribution and
     * the shared result and an instance costs O(members), not
     * O(members^2).  Must not depend on which member comes first. */
    int (*coll_combine)(void *state, const ws_replay_env *env, uint32_t loc, uint32_t site, ws_coll_view *view,
                        ws_error *err);
    /* Optional, for a handler without coll_ahead: whether location loc's
     * contribution to collective site `site` (coll_active and
     * coll_produce) depends on nothing this replay changes.  The engine
     * then produces such contributions ahead as with coll_ahead, but never
     * past a site where this answers 0: that one is produced at the site,
     * in order.  A member that has nothing to say at a site (e.g. did not
     * wait) so never keeps the others waiting for it. */
    int (*coll_ahead_at)(void *state, const ws_replay_env *env, uint32_t loc, uint32_t site);
    /* Optional: asks the cache for what the handler reads first when
     * location loc runs next: with site < 0 its per-location state, else
     * its data of collective site `site` (the scheduler calls the first a
     * run ahead of the second, so that the second finds the state's
     * pointers in cache). */
    void (*prefetch)(void *state, const ws_replay_env *env, uint32_t loc, int64_t site);
    /* Optional: a run after prefetch(loc, site), what the handler's data
     * of that site leads to (e.g. a point it indexes): those records are
     * in cache by then, so reading them to find the addresses costs
     * little. */
    void (*prefetch_deep)(void *state, const ws_replay_env *env, uint32_t loc, uint32_t site);
} ws_handler;

/* Tells a transport that wants it (ops->set_layout) how many message
 * records every location has: each process counts its `locations` of `t`
 * and the counts are summed over the processes.  Collective over the
 * transport's processes; a no-op for transports without set_layout. */
int ws_replay_share_layout(ws_transport *tr, const ws_trace *t, const uint32_t *locations, uint32_t n,
                           ws_error *err);
/* The transport forgets the layout (and frees its arrays indexed by
 * message): for replays that exchange on few messages.  Not collective. */
int ws_replay_drop_layout(ws_transport *tr, ws_error *err);

int ws_replay_run(const ws_replay_env *env, ws_transport *tr, const ws_handler *handlers, size_t n_handlers,
                  const ws_progress *progress, ws_error *err);

/* The transport key of handler h's contributions to a collective instance. */
static inline uint64_t ws_replay_handler_key(uint64_t instance, uint32_t h)
{
    return instance | ((uint64_t)h << 60);
}

/* The progress stage of a replay: its name, or "forward/backward replay". */
static inline const char *ws_replay_stage_name(const ws_replay_env *env)
{
    return env->name ? env->name : env->backward ? "backward replay" : "forward replay";
}

/* Whether handler hd exchanges message `row` of loc on `channel`
 * (without msg_channels: on channel 0 only). */
static inline int ws_replay_msg_uses(const ws_replay_env *env, const ws_handler *hd, uint32_t loc, uint32_t row,
                                     int channel)
{
    int mask = hd->msg_channels ? hd->msg_channels(hd->state, env, loc, row) : 1;
    return (mask >> channel) & 1;
}

/* Whether handler hd exchanges at collective site `site` of loc. */
static inline int ws_replay_site_takes_part(const ws_replay_env *env, const ws_handler *hd, uint32_t loc,
                                            uint32_t site)
{
    return hd->coll_produce && hd->coll_consume && (!hd->coll_active || hd->coll_active(hd->state, env, loc, site));
}

/* Handler h's contribution of location loc to collective site `site`:
 * coll_produce into `out` (emptied first), then coll_post (engine.c; for
 * the scheduled replay and the join). */
int ws_replay_post_site(const ws_replay_env *env, ws_transport *tr, const ws_handler *hd, uint32_t h, uint32_t loc,
                        uint32_t site, ws_buffer *out, ws_error *err);

/* Location loc's use of the completed instance `view` (transport key
 * `key`) of handler hd at collective site `site`: coll_combine if nobody
 * ran it on this view yet, coll_consume, then coll_release (engine.c; for
 * the scheduled replay and the join). */
int ws_replay_consume_site(const ws_replay_env *env, ws_transport *tr, const ws_handler *hd, uint64_t key, uint32_t loc,
                           uint32_t site, ws_coll_view *view, ws_error *err);

/* Whether ws_replay_run executes this replay as a join. */
int ws_replay_is_join(const ws_replay_env *env, const ws_handler *handlers, size_t n_handlers);

/* The join itself (join.c; called by ws_replay_run). */
int ws_replay_join(const ws_replay_env *env, ws_transport *tr, const ws_handler *handlers, uint32_t n_handlers,
                   const ws_progress *progress, ws_error *err);
/* A join's first phase for the point-to-point payloads only (join.c): the
 * scheduled replay that follows produces no message payload and suspends
 * a location only at collective sites. */
int ws_replay_produce_messages(const ws_replay_env *env, ws_transport *tr, const ws_handler *handlers,
                               uint32_t n_handlers, ws_error *err);

#endif
