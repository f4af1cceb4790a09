#include "util.h"

#include <stdlib.h>
#include <string.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

void ws_release_memory(void)
{
#if defined(__GLIBC__)
    malloc_trim(0);
#endif
}

int ws_grow_slow(void **array, size_t *capacity, size_t needed, size_t size)
{
    if (needed <= *capacity)
        return 0;
    size_t cap = *capacity ? *capacity : 16;
    while (cap < needed) {
        if (cap > SIZE_MAX / 2)
            return -1;
        cap *= 2;
    }
    if (size && cap > SIZE_MAX / size)
        return -1;
    void *p = ws_realloc(*array, cap * size);
    if (!p)
        return -1;
    *array = p;
    *capacity = cap;
    return 0;
}

void *ws_malloc_array(size_t count, size_t size)
{
    if (count == 0 || size == 0)
        return ws_malloc(1);
    if (count > SIZE_MAX / size)
        return NULL;
    return ws_malloc(count * size);
}

char *ws_strdup(const char *s)
{
    if (!s)
        s = "";
    size_t n = strlen(s) + 1;
    char *p = ws_malloc(n);
    if (p)
        memcpy(p, s, n);
    return p;
}

/* ---- hash map ---------------------------------------------------------- */

void ws_map64_init(ws_map64 *m)
{
    m->keys = NULL;
    m->values = NULL;
    m->capacity = 0;
    m->count = 0;
}

void ws_map64_free(ws_map64 *m)
{
    free(m->keys);
    free(m->values);
    ws_map64_init(m);
}

static int map_rehash(ws_map64 *m, size_t new_capacity)
{
    uint64_t *keys = ws_malloc_array(new_capacity, sizeof *keys);
    uint64_t *values = ws_malloc_array(new_capacity, sizeof *values);
    if (!keys || !values) {
        free(keys);
        free(values);
        return -1;
    }
    memset(keys, 0xff, new_capacity * sizeof *keys);
    size_t mask = new_capacity - 1;
    for (size_t i = 0; i < m->capacity; i++) {
        uint64_t k = m->keys[i];
        if (k == UINT64_MAX)
            continue;
        size_t j = (size_t)ws_hash64(k) & mask;
        while (keys[j] != UINT64_MAX)
            j = (j + 1) & mask;
        keys[j] = k;
        values[j] = m->values[i];
    }
    free(m->keys);
    free(m->values);
    m->keys = keys;
    m->values = values;
    m->capacity = new_capacity;
    return 0;
}

/* Puts (overwrite) or puts unless present; see ws_map64_put_new. */
static int map_put(ws_map64 *m, uint64_t key, uint64_t value, int overwrite)
{
    if ((m->count + 1) * 10 > m->capacity * 7) {
        size_t cap = m->capacity ? m->capacity * 2 : 64;
        if (cap < m->capacity || map_rehash(m, cap) != 0)
            return -1;
    }
    size_t mask = m->capacity - 1;
    size_t j = (size_t)ws_hash64(key) & mask;
    while (m->keys[j] != UINT64_MAX) {
        if (m->keys[j] == key) {
            if (!overwrite)
                return 1;
            m->values[j] = value;
            return 0;
        }
        j = (j + 1) & mask;
    }
    m->keys[j] = key;
    m->values[j] = value;
    m->count++;
    return 0;
}

int ws_map64_put(ws_map64 *m, uint64_t key, uint64_t value)
{
    return map_put(m, key, value, 1);
}

int ws_map64_put_new(ws_map64 *m, uint64_t key, uint64_t value)
{
    return map_put(m, key, value, 0);
}

int ws_map64_get(const ws_map64 *m, uint64_t key, uint64_t *value)
{
    if (m->capacity == 0)
        return 0;
    size_t mask = m->capacity - 1;
    size_t j = (size_t)ws_hash64(key) & mask;
    while (m->keys[j] != UINT64_MAX) {
        if (m->keys[j] == key) {
            if (value)
                *value = m->values[j];
            return 1;
        }
        j = (j + 1) & mask;
    }
    return 0;
}

int ws_map64_remove(ws_map64 *m, uint64_t key)
{
    return ws_map64_pop(m, key, NULL);
}

int ws_map64_pop(ws_map64 *m, uint64_t key, uint64_t *value)
{
    if (m->capacity == 0)
        return 0;
    size_t mask = m->capacity - 1;
    size_t j = (size_t)ws_hash64(key) & mask;
    while (m->keys[j] != UINT64_MAX) {
        if (m->keys[j] == key)
            break;
        j = (j + 1) & mask;
    }
    if (m->keys[j] == UINT64_MAX)
        return 0;
    if (value)
        *value = m->values[j];
    /* backward-shift deletion keeps probe sequences intact */
    size_t hole = j;
    size_t k = (j + 1) & mask;
    while (m->keys[k] != UINT64_MAX) {
        size_t home = (size_t)ws_hash64(m->keys[k]) & mask;
        /* can the entry at k move into the hole? */
        int movable = (hole <= k) ? (home <= hole || home > k) : (home <= hole && home > k);
        if (movable) {
            m->keys[hole] = m->keys[k];
            m->values[hole] = m->values[k];
            hole = k;
        }
        k = (k + 1) & mask;
    }
    m->keys[hole] = UINT64_MAX;
    m->count--;
    return 1;
}

/* ---- byte buffer ------------------------------------------------------- */

void ws_buffer_init(ws_buffer *b)
{
    b->data = NULL;
    b->size = 0;
    b->capacity = 0;
}

void ws_buffer_free(ws_buffer *b)
{
    free(b->data);
    ws_buffer_init(b);
}

void *ws_buffer_extend_slow(ws_buffer *b, size_t n)
{
    if (n > SIZE_MAX - b->size)
        return NULL;
    if (ws_grow((void **)&b->data, &b->capacity, b->size + n, 1) != 0)
        return NULL;
    void *p = b->data + b->size;
    b->size += n;
    return p;
}

