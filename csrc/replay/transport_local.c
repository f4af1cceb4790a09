/* In-process transport: all locations live in this process.  Payloads
 * wait in a mailbox until the addressed location takes them. */
#include "transport.h"

#include <stdlib.h>
#include <string.h>

#include "../common/util.h"

enum { INLINE_BYTES = 48 };

/* A payload above INLINE_BYTES lives in the slot's heap block, which the
 * slot keeps when it is released: recycled slots reuse it, so that the
 * replays allocate no memory per payload. */
typedef struct slot {
    size_t size;
    unsigned char *heap; /* used when size > INLINE_BYTES */
    size_t heap_cap;
    unsigned char inline_data[INLINE_BYTES];
    uint64_t next_free;
} slot;

typedef struct channel_maps {
    ws_map64 mail;    /* message id -> slot */
    ws_map64 waiters; /* message id -> waiting location */
    uint32_t *dense;  /* with a layout: per message 0 (empty), WAITING, slot + 1, or BULK | entry */
} channel_maps;

#define WAITING UINT32_MAX
/* Payloads posted while t->bulk is set (a join's first phase, which keeps
 * every payload of the replay until the second phase takes it) go to one
 * arena instead of slots: BULK | (offset / 8) of the entry, a size_t and
 * the data padded to 8 bytes.  The arena is freed once every entry was
 * released (or when the replay finishes). */
#define BULK 0x80000000u
#define BULK_LIMIT ((size_t)(BULK - 1) * 8)

/* A collective instance is one heap block: this header, then the
 * per-member arrays, the handler's cache and room for
 * the contributions (one per member, of the size of the first).
 * Contributions that do not fit there go to `spill`.  Neither moves once
 * the instance is complete (no member posts to it any more), so the view's
 * pointers stay valid.  A join keeps every instance of a replay alive at
 * once: one allocation each, no more. */
typedef struct instance {
    uint64_t seq; /* the instance's sequence number (its key's low 40 bits) */
    uint32_t n_members;
    uint32_t expected_local; /* members that take and release it here */
    uint32_t count;
    uint32_t released;
    uint32_t cap_members; /* capacity of the block's per-member arrays */
    size_t cap_cache, cap_inline;
    size_t used_inline;
    size_t *offset;   /* per member, SIZE_MAX if absent; at or past cap_inline: in spill */
    size_t *size;
    unsigned char **data;
    void *cache;
    unsigned char *inline_data;
    ws_buffer spill;
    uint32_t *waiters;
    size_t n_waiters, cap_waiters;
    ws_coll_view view;
} instance;

/* The live instances of one communicator (key >> 40), a ring indexed by
 * sequence number modulo its capacity (a power of two): it grows only
 * when two live instances would share a slot, so it holds about as many
 * slots as instances are alive at once (a handful in a scheduled replay,
 * every instance in a join), not one per instance of the trace. */
typedef struct inst_table {
    uint64_t hi;     /* key >> 40 */
    instance **slot; /* slot[seq & (cap - 1)]; NULL: no live instance */
    size_t cap;
} inst_table;

/* finished instances kept for reuse (no allocation per instance; the
 * engine keeps up to 64 instances per location open when it produces
 * ahead in one process, 256 when its peers are other threads or
 * processes) */
enum { SPARE_INSTANCES = 512 };

typedef struct local_transport {
    ws_transport base;
    channel_maps *channels;
    size_t n_channels;
    slot *slots;
    size_t n_slots, cap_slots;
    uint64_t free_slot; /* index + 1, 0 = none */
    /* live instances: per communicator and handler (the key's bits from
     * 40 on) a table indexed by the instance's sequence number (the low
     * 40 bits), so that a join, which keeps every instance of a replay
     * alive, finds one without hashing */
    inst_table *tables;
    size_t n_tables, cap_tables;
    ws_map64 table_of; /* key >> 40 -> index into tables */
    size_t last_table; /* the table used last (index + 1, 0: none) */
    instance *spare[SPARE_INSTANCES];
    uint32_t n_spare;
    ws_buffer bulk;      /* see BULK */
    uint64_t bulk_live;  /* entries of `bulk` not released yet */
    /* optional dense layout: message (location, row) -> offset[location] + row */
    uint64_t *offset;
    uint32_t n_layout;
    uint64_t total;
} local_transport;

/* Dense index of a message id, or WS_NONE64 without a layout. */
static uint64_t dense_index(const local_transport *lt, uint64_t id, ws_error *err, int *bad)
{
    *bad = 0;
    if (!lt->offset)
        return WS_NONE64;
    uint32_t loc = ws_message_location(id), row = ws_message_row(id);
    if (loc >= lt->n_layout || (uint64_t)row >= lt->offset[loc + 1] - lt->offset[loc]) {
        *bad = 1;
        ws_error_set(err, WS_ERR_INTERNAL, "message %u/%u outside the message layout", (unsigned)loc, (unsigned)row);
        return WS_NONE64;
    }
    return lt->offset[loc] + row;
}

static uint32_t *dense_channel(local_transport *lt, channel_maps *cm)
{
    if (!cm->dense)
        cm->dense = ws_calloc_dense(lt->total ? lt->total : 1, sizeof *cm->dense);
    return cm->dense;
}

static channel_maps *channel_of(local_transport *lt, int channel)
{
    if (channel < 0)
        return NULL;
    if ((size_t)channel >= lt->n_channels) {
        size_t n = (size_t)channel + 1;
        channel_maps *c = ws_realloc(lt->channels, n * sizeof *c);
        if (!c)
            return NULL;
        for (size_t i = lt->n_channels; i < n; i++) {
            ws_map64_init(&c[i].mail);
            ws_map64_init(&c[i].waiters);
            c[i].dense = NULL;
        }
        lt->channels = c;
        lt->n_channels = n;
    }
    return &lt->channels[channel];
}

static uint64_t new_slot(local_transport *lt)
{
    if (lt->free_slot) {
        uint64_t k = lt->free_slot - 1;
        lt->free_slot = lt->slots[k].next_free;
        return k;
    }
    if (ws_grow((void **)&lt->slots, &lt->cap_slots, lt->n_slots + 1, sizeof *lt->slots) != 0)
        return WS_NONE64;
    lt->slots[lt->n_slots].heap = NULL;
    lt->slots[lt->n_slots].heap_cap = 0;
    return lt->n_slots++;
}

/* Puts slot k back for new_slot. */
static void recycle_slot(local_transport *lt, uint64_t k)
{
    lt->slots[k].next_free = lt->free_slot;
    lt->free_slot = k + 1;
}

/* A slot holding a copy of the payload (WS_NONE64: out of memory, err
 * says so). */
static uint64_t store_slot(local_transport *lt, const void *data, size_t size, ws_error *err)
{
    uint64_t k = new_slot(lt);
    if (k == WS_NONE64) {
        ws_error_nomem(err, "transport mailbox");
        return WS_NONE64;
    }
    slot *s = &lt->slots[k];
    s->size = size;
    if (size > INLINE_BYTES) {
        if (s->heap_cap < size) {
            unsigned char *p = ws_realloc(s->heap, size);
            if (!p) {
                s->size = 0;
                recycle_slot(lt, k);
                ws_error_nomem(err, "payload");
                return WS_NONE64;
            }
            s->heap = p;
            s->heap_cap = size;
        }
        memcpy(s->heap, data, size);
    } else if (size) {
        memcpy(s->inline_data, data, size);
    }
    return k;
}

static int posted_twice(uint64_t id, int channel, ws_error *err)
{
    return ws_error_set(err, WS_ERR_MATCH, "message %u/%u posted twice on channel %d",
                        (unsigned)ws_message_location(id), (unsigned)ws_message_row(id), channel);
}

static int local_post(ws_transport *t, uint32_t dst, uint64_t id, int channel, const void *data, size_t size,
                      ws_error *err)
{
    local_transport *lt = (local_transport *)t;
    channel_maps *cm = channel_of(lt, channel);
    if (!cm)
        return ws_error_nomem(err, "transport channels");
    int bad;
    uint64_t di = dense_index(lt, id, err, &bad);
    if (bad)
        return err->code;
    uint32_t *dense = di == WS_NONE64 ? NULL : dense_channel(lt, cm);
    if (di != WS_NONE64 && !dense)
        return ws_error_nomem(err, "transport mailbox");
    if (dense && dense[di] != 0 && dense[di] != WAITING)
        return posted_twice(id, channel, err);
    if (dense && t->bulk && lt->bulk.size < BULK_LIMIT) {
        size_t at = lt->bulk.size, padded = (size + 7) & ~(size_t)7;
        unsigned char *entry = ws_buffer_extend(&lt->bulk, sizeof(size_t) + padded);
        if (!entry)
            return ws_error_nomem(err, "payloads");
        memcpy(entry, &size, sizeof size);
        if (size)
            memcpy(entry + sizeof size, data, size);
        int waiting = dense[di] == WAITING;
        dense[di] = BULK | (uint32_t)(at / 8);
        lt->bulk_live++;
        if (waiting && t->wake)
            t->wake(t->scheduler, dst);
        return WS_OK;
    }
    uint64_t k = store_slot(lt, data, size, err);
    if (k == WS_NONE64)
        return err->code;
    if (dense) {
        int waiting = dense[di] == WAITING;
        dense[di] = (uint32_t)(k + 1);
        if (waiting && t->wake)
            t->wake(t->scheduler, dst);
        return WS_OK;
    }
    /* (one probe of the mailbox: it holds every payload in flight) */
    int put = ws_map64_put_new(&cm->mail, id, k);
    if (put != 0) {
        recycle_slot(lt, k);
        return put < 0 ? ws_error_nomem(err, "transport mailbox") : posted_twice(id, channel, err);
    }
    uint64_t waiter;
    if (ws_map64_pop(&cm->waiters, id, &waiter) && t->wake)
        t->wake(t->scheduler, (uint32_t)waiter);
    (void)dst;
    return WS_OK;
}

static int local_take(ws_transport *t, uint32_t loc, uint64_t id, int channel, const void **data, size_t *size,
                      ws_error *err)
{
    local_transport *lt = (local_transport *)t;
    channel_maps *cm = channel_of(lt, channel);
    if (!cm)
        return ws_error_nomem(err, "transport channels");
    uint64_t k;
    int bad;
    uint64_t di = dense_index(lt, id, err, &bad);
    if (bad)
        return err->code;
    if (di != WS_NONE64) {
        uint32_t *dense = dense_channel(lt, cm);
        if (!dense)
            return ws_error_nomem(err, "transport mailbox");
        if (dense[di] == 0 || dense[di] == WAITING) {
            dense[di] = WAITING;
            return WS_BLOCKED;
        }
        if (dense[di] & BULK) {
            const unsigned char *entry = lt->bulk.data + (size_t)(dense[di] & ~BULK) * 8;
            memcpy(size, entry, sizeof *size);
            *data = entry + sizeof *size;
            return WS_OK;
        }
        slot *s = &lt->slots[dense[di] - 1];
        *data = s->size > INLINE_BYTES ? s->heap : s->inline_data;
        *size = s->size;
        return WS_OK;
    }
    if (!ws_map64_get(&cm->mail, id, &k)) {
        if (ws_map64_put(&cm->waiters, id, loc) != 0)
            return ws_error_nomem(err, "transport waiters");
        return WS_BLOCKED;
    }
    slot *s = &lt->slots[k];
    *data = s->size > INLINE_BYTES ? s->heap : s->inline_data;
    *size = s->size;
    return WS_OK;
}

static void local_release(ws_transport *t, uint32_t loc, uint64_t id, int channel)
{
    (void)loc;
    local_transport *lt = (local_transport *)t;
    if (channel < 0 || (size_t)channel >= lt->n_channels)
        return;
    channel_maps *cm = &lt->channels[channel];
    uint64_t k;
    ws_error ignored;
    int bad;
    uint64_t di = dense_index(lt, id, &ignored, &bad);
    if (bad)
        return;
    if (di != WS_NONE64) {
        if (!cm->dense || cm->dense[di] == 0 || cm->dense[di] == WAITING)
            return;
        if (cm->dense[di] & BULK) {
            cm->dense[di] = 0;
            if (--lt->bulk_live == 0)
                ws_buffer_free(&lt->bulk);
            return;
        }
        k = cm->dense[di] - 1;
        cm->dense[di] = 0;
    } else {
        if (!ws_map64_pop(&cm->mail, id, &k))
            return;
    }
    recycle_slot(lt, k);
}

static void free_instance(instance *in)
{
    if (!in)
        return;
    free(in->waiters);
    free(in->view.shared);
    ws_buffer_free(&in->spill);
    free(in);
}

static size_t align8(size_t n)
{
    return (n + 7) & ~(size_t)7;
}

/* A reset instance (a spare one when it is large enough). */
static instance *instance_get(local_transport *lt, uint32_t n_members, size_t cache_size, size_t first_size)
{
    size_t inline_bytes = first_size <= SIZE_MAX / (n_members ? n_members : 1) ? first_size * n_members : 0;
    if (inline_bytes > (1u << 16))
        inline_bytes = 1u << 16; /* larger contributions go to the spill buffer */
    instance *in = NULL;
    while (lt->n_spare && !in) {
        instance *sp = lt->spare[--lt->n_spare];
        /* (contributions beyond its inline room go to its spill buffer) */
        if (sp->cap_members >= n_members && sp->cap_cache >= cache_size)
            in = sp;
        else
            free_instance(sp);
    }
    if (!in) {
        size_t m = n_members ? n_members : 1;
        size_t bytes = align8(sizeof *in);
        size_t at_offset = bytes;
        bytes += m * sizeof(size_t);
        size_t at_size = bytes;
        bytes += m * sizeof(size_t);
        size_t at_data = bytes;
        bytes += m * sizeof(unsigned char *);
        size_t at_cache = bytes;
        bytes += align8(cache_size);
        size_t at_inline = bytes;
        bytes += inline_bytes;
        if (m > SIZE_MAX / 64)
            return NULL;
        unsigned char *block = ws_malloc(bytes);
        if (!block)
            return NULL;
        in = (instance *)block;
        memset(in, 0, sizeof *in);
        in->offset = (size_t *)(block + at_offset);
        in->size = (size_t *)(block + at_size);
        in->data = (unsigned char **)(block + at_data);
        in->cache = block + at_cache;
        in->inline_data = block + at_inline;
        in->cap_members = (uint32_t)m;
        in->cap_cache = cache_size;
        in->cap_inline = inline_bytes;
        ws_buffer_init(&in->spill);
    }
    if (cache_size)
        memset(in->cache, 0, cache_size);
    /* no contribution yet; a member's size and data are written when it
     * contributes and when the last one does (complete: every member has
     * contributed once), before anybody reads them */
    for (uint32_t k = 0; k < n_members; k++)
        in->offset[k] = SIZE_MAX;
    in->n_members = n_members;
    in->expected_local = 0;
    in->count = 0;
    in->released = 0;
    in->n_waiters = 0;
    in->used_inline = 0;
    in->spill.size = 0;
    memset(&in->view, 0, sizeof in->view);
    in->view.cache = in->cache;
    in->view.cache_size = cache_size;
    return in;
}

static void instance_put(local_transport *lt, instance *in)
{
    free(in->view.shared);
    in->view.shared = NULL;
    if (lt->n_spare < SPARE_INSTANCES)
        lt->spare[lt->n_spare++] = in;
    else
        free_instance(in);
}

/* Stores member's contribution in the instance. */
static int instance_store(instance *in, uint32_t member, const void *data, size_t size)
{
    if (size <= in->cap_inline - in->used_inline) {
        in->offset[member] = in->used_inline;
        if (size)
            memcpy(in->inline_data + in->used_inline, data, size);
        in->used_inline += size;
    } else {
        in->offset[member] = in->cap_inline + in->spill.size;
        if (ws_buffer_append(&in->spill, data, size) != 0) {
            in->offset[member] = SIZE_MAX;
            return -1;
        }
    }
    in->size[member] = size;
    return 0;
}

/* Rebuilds tb's ring with at least twice its slots (more while two live
 * instances, or one and `seq`, would share a slot): 0, or -1 out of
 * memory (tb unchanged). */
static int ring_grow(inst_table *tb, uint64_t seq)
{
    for (size_t cap = tb->cap ? tb->cap * 2 : 64; cap && cap <= SIZE_MAX / sizeof(instance *); cap *= 2) {
        instance **slot = ws_calloc(cap, sizeof *slot);
        if (!slot)
            return -1;
        int clash = 0;
        for (size_t k = 0; k < tb->cap && !clash; k++) {
            instance *in = tb->slot[k];
            if (!in)
                continue;
            instance **to = &slot[in->seq & (cap - 1)];
            clash = *to != NULL || (in->seq & (cap - 1)) == (seq & (cap - 1));
            *to = in;
        }
        if (clash) {
            free(slot);
            continue;
        }
        free(tb->slot);
        tb->slot = slot;
        tb->cap = cap;
        return 0;
    }
    return -1;
}

/* The slot of instance `key`: with `create`, its slot in the ring (empty,
 * or holding the live instance), grown to make room, or NULL out of
 * memory; else the slot of the live instance, or NULL if it is not
 * alive. */
static instance **instance_slot_slow(local_transport *lt, uint64_t key, int create)
{
    uint64_t hi = key >> 40, seq = key & ((1ULL << 40) - 1);
    inst_table *tb = NULL;
    if (lt->last_table && lt->tables[lt->last_table - 1].hi == hi) {
        tb = &lt->tables[lt->last_table - 1];
    } else {
        uint64_t index;
        if (ws_map64_get(&lt->table_of, hi, &index)) {
            tb = &lt->tables[index];
        } else {
            if (!create)
                return NULL;
            if (ws_grow((void **)&lt->tables, &lt->cap_tables, lt->n_tables + 1, sizeof *lt->tables) != 0 ||
                ws_map64_put(&lt->table_of, hi, lt->n_tables) != 0)
                return NULL;
            tb = &lt->tables[lt->n_tables++];
            memset(tb, 0, sizeof *tb);
            tb->hi = hi;
        }
        lt->last_table = (size_t)(tb - lt->tables) + 1;
    }
    if (tb->cap) {
        instance **slot = &tb->slot[seq & (tb->cap - 1)];
        if (*slot ? (*slot)->seq == seq : create)
            return slot;
    }
    if (!create || ring_grow(tb, seq) != 0)
        return NULL;
    return &tb->slot[seq & (tb->cap - 1)];
}

/* instance_slot_slow's common case inline: the communicator used last,
 * the slot holding the instance (or empty, to create it). */
static inline instance **instance_slot(local_transport *lt, uint64_t key, int create)
{
    if (lt->last_table) {
        inst_table *tb = &lt->tables[lt->last_table - 1];
        uint64_t seq = key & ((1ULL << 40) - 1);
        if (tb->hi == key >> 40 && tb->cap) {
            instance **slot = &tb->slot[seq & (tb->cap - 1)];
            if (*slot ? (*slot)->seq == seq : create)
                return slot;
        }
    }
    return instance_slot_slow(lt, key, create);
}

static int local_coll_post(ws_transport *t, uint64_t key, uint32_t n_members, uint32_t expected_local,
                           uint32_t member, uint32_t loc, const void *data, size_t size, size_t cache_size,
                           ws_error *err)
{
    (void)loc;
    local_transport *lt = (local_transport *)t;
    instance **slot = instance_slot(lt, key, 1);
    if (!slot)
        return ws_error_nomem(err, "collective instances");
    instance *in = *slot;
    if (!in) {
        in = instance_get(lt, n_members, cache_size, size);
        if (!in)
            return ws_error_nomem(err, "collective instance");
        in->seq = key & ((1ULL << 40) - 1);
        *slot = in;
    }
    /* contributions forwarded from other processes carry no local count */
    if (expected_local > in->expected_local)
        in->expected_local = expected_local;
    if (in->n_members != n_members)
        return ws_error_set(err, WS_ERR_MATCH, "collective instance %llu: members disagree on its size",
                            (unsigned long long)(key & ((1ULL << 60) - 1)));
    if (member >= n_members || in->offset[member] != SIZE_MAX)
        return ws_error_set(err, WS_ERR_MATCH, "collective instance %llu: member %u contributes twice",
                            (unsigned long long)(key & ((1ULL << 60) - 1)), (unsigned)member);
    if (instance_store(in, member, data, size) != 0)
        return ws_error_nomem(err, "collective contribution");
    in->count++;
    if (in->count == n_members) {
        /* complete (every member contributed once): fix pointers, wake
         * everybody */
        for (uint32_t m = 0; m < n_members; m++)
            in->data[m] = in->size[m] == 0 || in->offset[m] < in->cap_inline
                              ? in->inline_data + (in->size[m] ? in->offset[m] : 0)
                              : in->spill.data + (in->offset[m] - in->cap_inline);
        in->view.n_members = n_members;
        in->view.data = (const unsigned char *const *)in->data;
        in->view.size = in->size;
        for (size_t w = 0; w < in->n_waiters; w++)
            if (t->wake)
                t->wake(t->scheduler, in->waiters[w]);
        in->n_waiters = 0;
    }
    return WS_OK;
}

static int local_coll_take(ws_transport *t, uint64_t key, uint32_t loc, ws_coll_view **view, ws_error *err)
{
    local_transport *lt = (local_transport *)t;
    instance **slot = instance_slot(lt, key, 0);
    if (!slot || !*slot)
        return ws_error_set(err, WS_ERR_INTERNAL, "collective instance taken before any contribution");
    instance *in = *slot;
    if (in->count < in->n_members) {
        if (ws_grow((void **)&in->waiters, &in->cap_waiters, in->n_waiters + 1, sizeof *in->waiters) != 0)
            return ws_error_nomem(err, "collective waiters");
        in->waiters[in->n_waiters++] = loc;
        return WS_BLOCKED;
    }
    *view = &in->view;
    return WS_OK;
}

static void local_coll_release(ws_transport *t, uint64_t key, uint32_t loc)
{
    (void)loc;
    local_transport *lt = (local_transport *)t;
    instance **slot = instance_slot(lt, key, 0);
    if (!slot || !*slot)
        return;
    instance *in = *slot;
    uint32_t takers = in->expected_local ? in->expected_local : in->n_members;
    if (++in->released < takers)
        return;
    *slot = NULL;
    instance_put(lt, in);
}

static int local_progress(ws_transport *t, int wait, int *woken, ws_error *err)
{
    (void)t;
    (void)wait;
    (void)err;
    *woken = 0;
    return WS_OK;
}

/* Payloads nobody took (e.g. of a message the other side does not use)
 * must not leak into the next replay. */
static int local_finish(ws_transport *t, ws_error *err)
{
    (void)err;
    local_transport *lt = (local_transport *)t;
    for (size_t c = 0; c < lt->n_channels; c++) {
        channel_maps *cm = &lt->channels[c];
        if (cm->dense) {
            for (uint64_t i = 0; i < lt->total; i++) {
                uint32_t e = cm->dense[i];
                if (e == 0)
                    continue; /* (not written: its page may still be unmapped) */
                if (e != WAITING && !(e & BULK))
                    recycle_slot(lt, e - 1);
                cm->dense[i] = 0;
            }
        }
    }
    ws_buffer_free(&lt->bulk);
    lt->bulk_live = 0;
    /* tables of finished instances hold nothing (those of instances still
     * alive, which a process's members have not all released, stay) */
    for (size_t i = 0; i < lt->n_tables; i++) {
        inst_table *tb = &lt->tables[i];
        size_t k = 0;
        while (k < tb->cap && !tb->slot[k])
            k++;
        if (k == tb->cap) {
            free(tb->slot);
            tb->slot = NULL;
            tb->cap = 0;
        }
    }
    return WS_OK;
}

/* Moves the payloads the mailboxes indexed by message hold to the maps
 * by message id, before they go: between processes, a faster process's
 * first payloads of the next replay may already be here when this one
 * changes the layout.  (Between replays nobody waits for a payload.) */
static int dense_to_maps(local_transport *lt, ws_error *err)
{
    for (size_t c = 0; c < lt->n_channels; c++) {
        channel_maps *cm = &lt->channels[c];
        if (!cm->dense)
            continue;
        for (uint32_t loc = 0; loc < lt->n_layout; loc++)
            for (uint64_t di = lt->offset[loc]; di < lt->offset[loc + 1]; di++) {
                uint32_t e = cm->dense[di];
                if (e == 0 || e == WAITING)
                    continue;
                uint64_t k;
                if (e & BULK) {
                    const unsigned char *entry = lt->bulk.data + (size_t)(e & ~BULK) * 8;
                    size_t size;
                    memcpy(&size, entry, sizeof size);
                    if ((k = store_slot(lt, entry + sizeof size, size, err)) == WS_NONE64)
                        return err->code;
                    lt->bulk_live--;
                } else {
                    k = e - 1;
                }
                cm->dense[di] = 0;
                if (ws_map64_put(&cm->mail, ws_message_id(loc, (uint32_t)(di - lt->offset[loc])), k) != 0)
                    return ws_error_nomem(err, "transport mailbox");
            }
    }
    if (lt->bulk_live == 0)
        ws_buffer_free(&lt->bulk);
    return WS_OK;
}

static int local_set_layout(ws_transport *t, const uint64_t *counts, uint32_t n_locations, ws_error *err)
{
    local_transport *lt = (local_transport *)t;
    if (lt->offset) {
        int rc = dense_to_maps(lt, err);
        if (rc)
            return rc;
    }
    uint64_t *offset = NULL;
    if (counts) {
        offset = ws_malloc_array((size_t)n_locations + 1, sizeof *offset);
        if (!offset)
            return ws_error_nomem(err, "message layout");
        offset[0] = 0;
        for (uint32_t l = 0; l < n_locations; l++)
            offset[l + 1] = offset[l] + counts[l];
    } else {
        n_locations = 0;
    }
    for (size_t c = 0; c < lt->n_channels; c++) {
        free(lt->channels[c].dense);
        lt->channels[c].dense = NULL;
    }
    free(lt->offset);
    lt->offset = offset;
    lt->n_layout = n_locations;
    lt->total = offset ? offset[n_locations] : 0;
    return WS_OK;
}

static int local_agree(ws_transport *t, int failed, ws_error *err)
{
    (void)t;
    (void)err;
    return failed != 0;
}

static void local_fail(ws_transport *t, const ws_error *err)
{
    (void)t;
    (void)err;
}

static int local_allreduce_u64(ws_transport *t, uint64_t *values, size_t n, int op, ws_error *err)
{
    (void)t;
    (void)values;
    (void)n;
    (void)op;
    (void)err;
    return WS_OK;
}

static int local_allreduce_f64(ws_transport *t, double *values, size_t n, int op, ws_error *err)
{
    (void)t;
    (void)values;
    (void)n;
    (void)op;
    (void)err;
    return WS_OK;
}

static int local_exchange(ws_transport *t, const void *records, size_t record_size, const uint32_t *dest, size_t n,
                          void **out, size_t *n_out, ws_error *err)
{
    (void)t;
    (void)dest;
    void *copy = ws_malloc_array(n ? n : 1, record_size);
    if (!copy)
        return ws_error_nomem(err, "record exchange");
    if (n)
        memcpy(copy, records, n * record_size);
    *out = copy;
    *n_out = n;
    return WS_OK;
}

static void local_destroy(ws_transport *t)
{
    local_transport *lt = (local_transport *)t;
    if (!lt)
        return;
    for (size_t c = 0; c < lt->n_channels; c++) {
        ws_map64_free(&lt->channels[c].mail);
        ws_map64_free(&lt->channels[c].waiters);
        free(lt->channels[c].dense);
    }
    free(lt->channels);
    free(lt->offset);
    for (size_t k = 0; k < lt->n_slots; k++)
        free(lt->slots[k].heap);
    free(lt->slots);
    for (size_t i = 0; i < lt->n_tables; i++) {
        for (size_t k = 0; k < lt->tables[i].cap; k++)
            free_instance(lt->tables[i].slot[k]);
        free(lt->tables[i].slot);
    }
    free(lt->tables);
    ws_map64_free(&lt->table_of);
    ws_buffer_free(&lt->bulk);
    for (uint32_t i = 0; i < lt->n_spare; i++)
        free_instance(lt->spare[i]);
    free(lt);
}

static int local_gather(ws_transport *t, const void *data, size_t size, int to_all, void **out, size_t *sizes,
                        ws_error *err);
static int local_gather_apply(ws_transport *t, const void *data, size_t size, ws_gather_fn fn, void *ctx,
                              ws_error *err);

static const ws_transport_ops local_ops = {
    .post = local_post,
    .take = local_take,
    .release = local_release,
    .coll_post = local_coll_post,
    .coll_take = local_coll_take,
    .coll_release = local_coll_release,
    .progress = local_progress,
    .finish = local_finish,
    .agree = local_agree,
    .fail = local_fail,
    .allreduce_u64 = local_allreduce_u64,
    .allreduce_f64 = local_allreduce_f64,
    .exchange = local_exchange,
    .gather = local_gather,
    .gather_apply = local_gather_apply,
    .reduce_f64 = local_allreduce_f64, /* one process: the same */
    .set_layout = local_set_layout,
    .destroy = local_destroy,
};

ws_transport *ws_transport_local_new(uint32_t n_locations)
{
    local_transport *lt = ws_calloc(1, sizeof *lt);
    if (!lt)
        return NULL;
    lt->base.ops = &local_ops;
    lt->base.n_locations = n_locations;
    lt->base.process = 0;
    lt->base.n_processes = 1;
    ws_map64_init(&lt->table_of);
    return &lt->base;
}

/* One process: the concatenation is this process's data. */
static int local_gather(ws_transport *t, const void *data, size_t size, int to_all, void **out, size_t *sizes,
                        ws_error *err)
{
    (void)t;
    (void)to_all;
    *out = ws_malloc(size ? size : 1);
    if (!*out)
        return ws_error_nomem(err, "gathered data");
    if (size)
        memcpy(*out, data, size);
    sizes[0] = size;
    return WS_OK;
}

/* One process: its own data, in place. */
static int local_gather_apply(ws_transport *t, const void *data, size_t size, ws_gather_fn fn, void *ctx,
                              ws_error *err)
{
    (void)t;
    const void *pieces[1] = {data};
    size_t sizes[1] = {size};
    return fn(ctx, pieces, sizes, err);
}
