/* Sort-merge message matching (see match.h). */
#include "match.h"

#include <stdlib.h>
#include <string.h>

#include "alloc.h"

static int cmp_channel(const uint32_t *a, const uint32_t *b)
{
    /* two 64-bit comparisons instead of four 32-bit ones */
    uint64_t a0 = (uint64_t)a[0] << 32 | a[1], b0 = (uint64_t)b[0] << 32 | b[1];
    if (a0 != b0)
        return a0 < b0 ? -1 : 1;
    uint64_t a1 = (uint64_t)a[2] << 32 | a[3], b1 = (uint64_t)b[2] << 32 | b[3];
    return (a1 > b1) - (a1 < b1);
}

static int cmp_key(const void *x, const void *y)
{
    const ws_match_key *a = x, *b = y;
    int c = cmp_channel(a->channel, b->channel);
    if (c)
        return c;
    return (a->order > b->order) - (a->order < b->order);
}

/* a distinct channel of the keys being sorted, found through a hash table */
typedef struct channel_slot {
    uint32_t channel[4];
    uint32_t group; /* UINT32_MAX: empty */
    uint32_t rank;  /* its place among the sorted channels */
} channel_slot;

static uint64_t channel_hash(const uint32_t *c)
{
    uint64_t h = ((uint64_t)c[0] << 32 | c[1]) * 0x9e3779b97f4a7c15ull;
    h ^= ((uint64_t)c[2] << 32 | c[3]) * 0xc2b2ae3d27d4eb4full;
    return h ^ (h >> 29);
}

static int cmp_slot(const void *x, const void *y)
{
    const channel_slot *a = *(const channel_slot *const *)x, *b = *(const channel_slot *const *)y;
    return cmp_channel(a->channel, b->channel);
}

/* Sorts keys by (channel, order) in O(n) when the order ascends within
 * every channel (as a location's records come) and the channels are few:
 * the distinct channels are sorted, then the keys placed by a stable
 * counting sort.  Returns -1 (nothing changed) otherwise or without
 * memory (the caller then sorts by comparison). */
static int sort_by_channel(ws_match_key *keys, size_t n)
{
    size_t cap = 16;
    while (cap < 2 * n)
        cap *= 2;
    channel_slot *table = ws_calloc(cap, sizeof *table);
    uint32_t *group = ws_calloc(n, sizeof *group);
    channel_slot **groups = NULL;
    size_t *pos = NULL;
    uint64_t *next_order = NULL;
    ws_match_key *sorted = NULL;
    int rc = -1;
    if (!table || !group)
        goto done;
    for (size_t i = 0; i < cap; i++)
        table[i].group = UINT32_MAX;
    size_t n_groups = 0, limit = n / 4 + 1;
    for (size_t i = 0; i < n; i++) {
        const uint32_t *c = keys[i].channel;
        size_t h = (size_t)channel_hash(c) & (cap - 1);
        while (table[h].group != UINT32_MAX && memcmp(table[h].channel, c, sizeof table[h].channel) != 0)
            h = (h + 1) & (cap - 1);
        if (table[h].group == UINT32_MAX) {
            if (n_groups == limit)
                goto done; /* many channels: a comparison sort is as good */
            memcpy(table[h].channel, c, sizeof table[h].channel);
            table[h].group = (uint32_t)n_groups++;
        }
        group[i] = (uint32_t)h; /* its slot, for now */
    }
    groups = ws_calloc(n_groups, sizeof *groups);
    pos = ws_calloc(n_groups + 1, sizeof *pos);
    next_order = ws_calloc(n_groups, sizeof *next_order);
    sorted = ws_calloc(n, sizeof *sorted);
    if (!groups || !pos || !next_order || !sorted)
        goto done;
    for (size_t h = 0; h < cap; h++)
        if (table[h].group != UINT32_MAX)
            groups[table[h].group] = &table[h];
    qsort(groups, n_groups, sizeof *groups, cmp_slot);
    for (size_t g = 0; g < n_groups; g++)
        groups[g]->rank = (uint32_t)g;
    /* the order must ascend within each channel (then the stable placing
     * below sorts by order too) */
    for (size_t i = 0; i < n; i++) {
        uint32_t r = table[group[i]].rank;
        if (keys[i].order < next_order[r] || keys[i].order == UINT64_MAX)
            goto done;
        next_order[r] = keys[i].order + 1;
    }
    for (size_t i = 0; i < n; i++)
        pos[table[group[i]].rank + 1]++;
    for (size_t g = 0; g < n_groups; g++)
        pos[g + 1] += pos[g];
    for (size_t i = 0; i < n; i++)
        sorted[pos[table[group[i]].rank]++] = keys[i];
    memcpy(keys, sorted, n * sizeof *keys);
    rc = 0;
done:
    free(table);
    free(group);
    free(groups);
    free(pos);
    free(next_order);
    free(sorted);
    return rc;
}

static void sort_keys(ws_match_key *keys, size_t n)
{
    if (n > 1 && sort_by_channel(keys, n) != 0)
        qsort(keys, n, sizeof *keys, cmp_key);
}

int ws_match_fifo(ws_match_key *sends, size_t n_sends, ws_match_key *recvs, size_t n_recvs, ws_match_pair_fn pair,
                  ws_match_unmatched_fn unmatched, void *context)
{
    /* within one channel the keys are then in program order, which is
     * MPI's matching order */
    sort_keys(sends, n_sends);
    sort_keys(recvs, n_recvs);
    size_t i = 0, j = 0;
    while (i < n_sends || j < n_recvs) {
        int c = i == n_sends ? 1 : j == n_recvs ? -1 : cmp_channel(sends[i].channel, recvs[j].channel);
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
