/* Sort-merge message matching (see match.h). */
#include "match.h"

#include <stdlib.h>

static int cmp_channel(const ws_match_key *a, const ws_match_key *b)
{
    /* two 64-bit comparisons instead of four 32-bit ones */
    uint64_t a0 = (uint64_t)a->channel[0] << 32 | a->channel[1], b0 = (uint64_t)b->channel[0] << 32 | b->channel[1];
    if (a0 != b0)
        return a0 < b0 ? -1 : 1;
    uint64_t a1 = (uint64_t)a->channel[2] << 32 | a->channel[3], b1 = (uint64_t)b->channel[2] << 32 | b->channel[3];
    return (a1 > b1) - (a1 < b1);
}

static int cmp_key(const void *x, const void *y)
{
    const ws_match_key *a = x, *b = y;
    int c = cmp_channel(a, b);
    if (c)
        return c;
    return (a->order > b->order) - (a->order < b->order);
}

int ws_match_fifo(ws_match_key *sends, size_t n_sends, ws_match_key *recvs, size_t n_recvs, ws_match_pair_fn pair,
                  ws_match_unmatched_fn unmatched, void *context)
{
    /* within one channel the keys are then in program order, which is
     * MPI's matching order */
    if (n_sends > 1)
        qsort(sends, n_sends, sizeof *sends, cmp_key);
    if (n_recvs > 1)
        qsort(recvs, n_recvs, sizeof *recvs, cmp_key);
    size_t i = 0, j = 0;
    while (i < n_sends || j < n_recvs) {
        int c = i == n_sends ? 1 : j == n_recvs ? -1 : cmp_channel(&sends[i], &recvs[j]);
        if (c == 0) {
            pair(context, &sends[i++], &recvs[j++]);
            continue;
        }
        /* the channels differ: the smaller key has no partner */
        int is_send = c < 0;
        const ws_match_key *k = is_send ? &sends[i++] : &recvs[j++];
        if (unmatched) {
            int stop = unmatched(context, k, is_send);
            if (stop)
                return stop;
        }
    }
    return 0;
}
