/* Reading DWARF data (dwarf.c, dwarf_line.c): a cursor over a byte range
 * whose reads are bounds-checked.  A read past the end, or an LEB128
 * number longer than 64 bits, sets `bad`, returns 0 and makes every
 * later read fail too: a reader checks `bad` once after a group of reads. */
#ifndef WS_PMPI_DWARF_CURSOR_H
#define WS_PMPI_DWARF_CURSOR_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef struct cursor {
    const unsigned char *p, *end;
    int bad;
} cursor;

/* An n-byte little-endian number (x86-64 and AArch64 DWARF), n <= 8. */
static inline uint64_t fixed(cursor *c, unsigned n)
{
    if (c->bad || (size_t)(c->end - c->p) < n) {
        c->bad = 1;
        return 0;
    }
    uint64_t v = 0;
    for (unsigned i = 0; i < n; i++)
        v |= (uint64_t)c->p[i] << (8 * i);
    c->p += n;
    return v;
}

static inline uint64_t uleb(cursor *c)
{
    uint64_t v = 0;
    for (unsigned shift = 0; !c->bad; shift += 7) {
        if (c->p >= c->end || shift > 63) {
            c->bad = 1;
            break;
        }
        unsigned char b = *c->p++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            break;
    }
    return v;
}

static inline int64_t sleb(cursor *c)
{
    int64_t v = 0;
    unsigned shift = 0;
    unsigned char b = 0x80;
    while (!c->bad && (b & 0x80)) {
        if (c->p >= c->end || shift > 63) {
            c->bad = 1;
            return 0;
        }
        b = *c->p++;
        v |= (int64_t)((uint64_t)(b & 0x7f) << shift);
        shift += 7;
    }
    if (shift < 64 && (b & 0x40))
        v |= -(int64_t)((uint64_t)1 << shift);
    return v;
}

static inline void skip(cursor *c, uint64_t n)
{
    if (c->bad || (uint64_t)(c->end - c->p) < n)
        c->bad = 1;
    else
        c->p += n;
}

/* A NUL-terminated string in the range; NULL (and bad) without its NUL. */
static inline const char *cstring(cursor *c)
{
    const char *s = (const char *)c->p;
    const unsigned char *nul = c->bad ? NULL : memchr(c->p, 0, (size_t)(c->end - c->p));
    if (!nul) {
        c->bad = 1;
        return NULL;
    }
    c->p = nul + 1;
    return s;
}

/* The string at offset `off` of a string section (.debug_str,
 * .debug_line_str); NULL if the section is absent or has none there. */
static inline const char *section_string(const unsigned char *data, size_t size, uint64_t off)
{
    if (!data || off >= size || !memchr(data + off, 0, size - off))
        return NULL;
    return (const char *)data + off;
}

/* A unit's length field: 32-bit DWARF, or 0xffffffff and a 64-bit length
 * (64-bit DWARF, *offset_size 8).  Leaves `all` at the unit's contents and
 * sets `unit` to them; -1 when the length is reserved or out of range. */
static inline int unit_range(cursor *all, cursor *unit, unsigned *offset_size)
{
    *offset_size = 4;
    uint64_t length = fixed(all, 4);
    if (length == 0xffffffffu) {
        length = fixed(all, 8);
        *offset_size = 8;
    } else if (length >= 0xfffffff0u) {
        return -1;
    }
    if (all->bad || length > (uint64_t)(all->end - all->p))
        return -1;
    *unit = (cursor){all->p, all->p + length, 0};
    all->p += length;
    return 0;
}

#endif
