/* Small building blocks: growable arrays, a 64-bit hash map, a byte buffer. */
#ifndef WS_COMMON_UTIL_H
#define WS_COMMON_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "alloc.h"

#define WS_NONE32 UINT32_MAX
#define WS_NONE64 UINT64_MAX

/* Grows *array (of elements of `size` bytes) so that it holds at least
 * `needed` elements; *capacity is updated.  Returns 0 or -1 on overflow
 * or allocation failure (the old array stays valid).  Inline, since most
 * calls find room (one per record appended in the replays); the growth
 * itself is ws_grow_slow. */
int ws_grow_slow(void **array, size_t *capacity, size_t needed, size_t size);
static inline int ws_grow(void **array, size_t *capacity, size_t needed, size_t size)
{
    return needed <= *capacity ? 0 : ws_grow_slow(array, capacity, needed, size);
}
/* The first index in [lo, hi) of the ascending array a whose value is at
 * least key (hi if none). */
static inline uint64_t ws_lower_bound_u32(const uint32_t *a, uint64_t lo, uint64_t hi, uint64_t key)
{
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (a[mid] < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Returns freed heap memory to the system where the C library can
 * (glibc's malloc_trim); called after an analysis, whose many small
 * blocks would otherwise stay resident. */
void ws_release_memory(void);

/* malloc with an overflow check on count*size (ws_calloc: alloc.h). */
void *ws_malloc_array(size_t count, size_t size);
char *ws_strdup(const char *s);

/* Open-addressing hash map from uint64 keys to uint64 values.
 * The key UINT64_MAX is reserved. */
typedef struct ws_map64 {
    uint64_t *keys;
    uint64_t *values;
    size_t capacity; /* power of two, 0 when empty */
    size_t count;
} ws_map64;

void ws_map64_init(ws_map64 *m);
void ws_map64_free(ws_map64 *m);
/* Inserts or overwrites; returns 0 or -1 on allocation failure. */
int ws_map64_put(ws_map64 *m, uint64_t key, uint64_t value);
/* Inserts unless the key is present (then nothing changes): 0 inserted,
 * 1 present, -1 on allocation failure. */
int ws_map64_put_new(ws_map64 *m, uint64_t key, uint64_t value);
/* Returns 1 and stores the value if found, else 0. */
int ws_map64_get(const ws_map64 *m, uint64_t key, uint64_t *value);
/* Removes the key if present; returns 1 if it was present. */
int ws_map64_remove(ws_map64 *m, uint64_t key);
/* ... and stores its value (when value is not NULL). */
int ws_map64_pop(ws_map64 *m, uint64_t key, uint64_t *value);

/* Asks the cache for the line holding *p (no effect where the compiler
 * offers no prefetch). */
#if defined(__GNUC__)
#define WS_PREFETCH(p) __builtin_prefetch(p)
#else
#define WS_PREFETCH(p) ((void)(p))
#endif
/* ... for both lines of a record of at most 64 bytes that may straddle two */
#define WS_PREFETCH_RECORD(p)                                  \
    do {                                                       \
        WS_PREFETCH(p);                                        \
        WS_PREFETCH((const char *)(p) + sizeof *(p) - 1);      \
    } while (0)

static inline uint64_t ws_hash64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

/* A growable byte buffer for payloads. */
typedef struct ws_buffer {
    unsigned char *data;
    size_t size;
    size_t capacity;
} ws_buffer;

void ws_buffer_init(ws_buffer *b);
void ws_buffer_free(ws_buffer *b);
/* Reserves n bytes at the end and returns a pointer to them (or NULL).
 * Inline when they fit (every payload of a replay goes through here);
 * else ws_buffer_extend_slow grows the buffer. */
void *ws_buffer_extend_slow(ws_buffer *b, size_t n);
static inline void *ws_buffer_extend(ws_buffer *b, size_t n)
{
    if (b->data && n <= b->capacity - b->size) {
        void *p = b->data + b->size;
        b->size += n;
        return p;
    }
    return ws_buffer_extend_slow(b, n);
}
/* Appends bytes; returns 0 or -1 on allocation failure. */
static inline int ws_buffer_append(ws_buffer *b, const void *data, size_t n)
{
    void *p = ws_buffer_extend(b, n);
    if (!p)
        return -1;
    if (n)
        memcpy(p, data, n);
    return 0;
}

#endif
