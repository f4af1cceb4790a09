/* MPI message matching, the one implementation: the n-th send on a
 * channel (e.g. source, destination, communicator, tag) matches the n-th
 * receive on it (MPI's non-overtaking rule without wildcards).  Used by
 * the replay's synchronization structure (sync.c), the synthesizer
 * (synth_match.c) and, through waitscope._core, the timeline's messages. */
#ifndef WS_COMMON_MATCH_H
#define WS_COMMON_MATCH_H

#include <stddef.h>
#include <stdint.h>

typedef struct ws_match_key {
    uint32_t channel[4]; /* keys with equal channels are candidates */
    uint64_t order;      /* program order within the channel; unique per side and channel;
                            also the caller's reference to the record */
} ws_match_key;

/* Called for every matched pair. */
typedef void (*ws_match_pair_fn)(void *context, const ws_match_key *send, const ws_match_key *recv);
/* Called for every key without a partner, in (channel, order) order;
 * a nonzero return stops the matching and is returned. */
typedef int (*ws_match_unmatched_fn)(void *context, const ws_match_key *key, int is_send);

/* Sorts both arrays by (channel, order) and pairs them: in O(n) when the
 * order ascends within each channel and the channels are few (scratch
 * memory of about 2.5 times the keys), else in O(n log n).  `unmatched` may be NULL (keys without partner are
 * skipped).  Returns 0, or what `unmatched` returned to stop. */
int ws_match_fifo(ws_match_key *sends, size_t n_sends, ws_match_key *recvs, size_t n_recvs, ws_match_pair_fn pair,
                  ws_match_unmatched_fn unmatched, void *context);

#endif
