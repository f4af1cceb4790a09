/* The name of a Fortran main program from DWARF debugging information.
 *
 * gfortran compiles `program sweep3d` into the function MAIN__ (called by
 * a generated `main`); only the debugging information keeps the name the
 * user wrote: a DW_TAG_subprogram with DW_AT_main_subprogram (DWARF 5) or
 * DW_AT_calling_convention DW_CC_program (DWARF 2-4).  This reads just
 * enough of .debug_info and .debug_abbrev to find it: the compilation
 * units of Fortran, their top-level DIEs, every attribute form of DWARF
 * 2-5 skipped by its size.  Every read is bounds-checked; anything it
 * does not understand ends the search (the caller falls back to a fixed
 * name). */
#include "pmpi.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dwarf_cursor.h"

enum {
    TAG_SUBPROGRAM = 0x2e,
    AT_NAME = 0x03,
    AT_LANGUAGE = 0x13,
    AT_CALLING_CONVENTION = 0x36,
    AT_MAIN_SUBPROGRAM = 0x6a,
    CC_PROGRAM = 0x02,
    FORM_STRING = 0x08,
    FORM_STRP = 0x0e,
    FORM_LINE_STRP = 0x1f,
    FORM_IMPLICIT_CONST = 0x21,
    FORM_INDIRECT = 0x16,
};

typedef struct unit {
    unsigned offset_size, addr_size, version;
    const ws_dwarf_sections *s;
} unit;

/* Reads (or skips) the value of one attribute; strings and constants are
 * returned through *str / *value where the form carries them. */
static void attribute(cursor *c, const unit *u, uint64_t form, int64_t implicit, const char **str, uint64_t *value)
{
    *str = NULL;
    *value = 0;
    switch (form) {
    case 0x01: skip(c, u->addr_size); break;                             /* addr */
    case 0x03: skip(c, fixed(c, 2)); break;                              /* block2 */
    case 0x04: skip(c, fixed(c, 4)); break;                              /* block4 */
    case 0x05: *value = fixed(c, 2); break;                              /* data2 */
    case 0x06: *value = fixed(c, 4); break;                              /* data4 */
    case 0x07: *value = fixed(c, 8); break;                              /* data8 */
    case FORM_STRING: *str = cstring(c); break;
    case 0x09: case 0x18: skip(c, uleb(c)); break;                       /* block, exprloc */
    case 0x0a: skip(c, fixed(c, 1)); break;                              /* block1 */
    case 0x0b: case 0x0c: case 0x11: *value = fixed(c, 1); break;        /* data1, flag, ref1 */
    case 0x0d: case 0x0f: case 0x15: *value = uleb(c); break;            /* sdata (sign ignored), udata, ref_udata */
    case FORM_STRP: *str = section_string(u->s->str, u->s->str_size, fixed(c, u->offset_size)); break;
    case FORM_LINE_STRP:
        *str = section_string(u->s->line_str, u->s->line_str_size, fixed(c, u->offset_size));
        break;
    case 0x10: skip(c, u->version <= 2 ? u->addr_size : u->offset_size); break; /* ref_addr */
    case 0x12: case 0x26: case 0x2a: skip(c, 2); break;                  /* ref2, strx2, addrx2 */
    case 0x13: case 0x1c: case 0x28: case 0x2c: skip(c, 4); break;       /* ref4, ref_sup4, strx4, addrx4 */
    case 0x14: case 0x20: case 0x24: skip(c, 8); break;                  /* ref8, ref_sig8, ref_sup8 */
    case 0x17: case 0x1d: case 0x1f20: case 0x1f21: skip(c, u->offset_size); break; /* sec_offset, strp_sup, alt */
    case 0x19: *value = 1; break;                                        /* flag_present */
    case 0x1a: case 0x1b: case 0x22: case 0x23: case 0x1f01: case 0x1f02: uleb(c); break; /* strx, addrx, ... */
    case 0x1e: skip(c, 16); break;                                       /* data16 */
    case FORM_IMPLICIT_CONST: *value = (uint64_t)implicit; break;
    case 0x25: case 0x29: skip(c, 1); break;                             /* strx1, addrx1 */
    case 0x27: case 0x2b: skip(c, 3); break;                             /* strx3, addrx3 */
    case FORM_INDIRECT: attribute(c, u, uleb(c), implicit, str, value); break;
    default: c->bad = 1; break;
    }
}

/* abbreviation code -> position of its declaration in .debug_abbrev */
typedef struct abbrevs {
    const unsigned char **at;
    size_t n;
} abbrevs;

static int read_abbrevs(const ws_dwarf_sections *s, uint64_t offset, abbrevs *a)
{
    a->at = NULL;
    a->n = 0;
    if (offset >= s->abbrev_size)
        return -1;
    cursor c = {s->abbrev + offset, s->abbrev + s->abbrev_size, 0};
    size_t cap = 0;
    for (;;) {
        const unsigned char *start = c.p;
        uint64_t code = uleb(&c);
        if (c.bad || code == 0)
            break;
        if (code > 1000000)
            return -1;
        if (code >= cap) {
            size_t grown = cap ? cap : 64;
            while (grown <= code)
                grown *= 2;
            const unsigned char **at = realloc(a->at, grown * sizeof *at);
            if (!at)
                return -1;
            memset(at + cap, 0, (grown - cap) * sizeof *at);
            a->at = at;
            cap = grown;
        }
        a->at[code] = start;
        if (code + 1 > a->n)
            a->n = code + 1;
        uleb(&c); /* tag */
        skip(&c, 1); /* children */
        for (;;) {
            uint64_t name = uleb(&c), form = uleb(&c);
            if (c.bad || (name == 0 && form == 0))
                break;
            if (form == FORM_IMPLICIT_CONST)
                sleb(&c);
        }
    }
    return c.bad ? -1 : 0;
}

static int fortran_language(uint64_t lang)
{
    return lang == 0x07 || lang == 0x08 || lang == 0x0e || lang == 0x22 || lang == 0x23 || lang == 0x2d;
}

/* Searches one compilation unit's DIEs; 1 when the main program was found. */
static int search_unit(cursor *c, const unit *u, const abbrevs *a, char *out, size_t size)
{
    int depth = 0, first = 1;
    while (!c->bad && c->p < c->end) {
        uint64_t code = uleb(c);
        if (code == 0) {
            if (--depth <= 0)
                return 0;
            continue;
        }
        if (code >= a->n || !a->at[code])
            return 0;
        cursor ab = {a->at[code], u->s->abbrev + u->s->abbrev_size, 0};
        uleb(&ab); /* the code */
        uint64_t tag = uleb(&ab);
        int children = (int)fixed(&ab, 1);
        const char *name = NULL;
        int is_main = 0;
        uint64_t language = 0;
        for (;;) {
            uint64_t at = uleb(&ab), form = uleb(&ab);
            if (ab.bad)
                return 0;
            if (at == 0 && form == 0)
                break;
            int64_t implicit = form == FORM_IMPLICIT_CONST ? sleb(&ab) : 0;
            const char *str;
            uint64_t value;
            attribute(c, u, form, implicit, &str, &value);
            if (at == AT_NAME)
                name = str;
            else if ((at == AT_MAIN_SUBPROGRAM && value) || (at == AT_CALLING_CONVENTION && value == CC_PROGRAM))
                is_main = 1;
            else if (at == AT_LANGUAGE)
                language = value;
        }
        if (c->bad)
            return 0;
        if (first) {
            first = 0;
            if (!fortran_language(language))
                return 0; /* a C or C++ unit: no Fortran main program in it */
        } else if (depth == 1 && tag == TAG_SUBPROGRAM && is_main && name && *name) {
            snprintf(out, size, "%s", name);
            return 1;
        }
        if (children)
            depth++;
    }
    return 0;
}

int ws_dwarf_main_program(const ws_dwarf_sections *s, char *out, size_t size)
{
    if (!s->info || !s->abbrev)
        return -1;
    cursor all = {s->info, s->info + s->info_size, 0};
    while (!all.bad && all.p < all.end) {
        unsigned offset_size;
        cursor c;
        if (unit_range(&all, &c, &offset_size) != 0)
            break;
        unit u = {offset_size, 0, (unsigned)fixed(&c, 2), s};
        uint64_t abbrev_offset;
        if (u.version >= 5) {
            unsigned type = (unsigned)fixed(&c, 1);
            u.addr_size = (unsigned)fixed(&c, 1);
            abbrev_offset = fixed(&c, offset_size);
            if (type != 1 && type != 3) /* only full and partial compilation units */
                continue;
        } else if (u.version >= 2) {
            abbrev_offset = fixed(&c, offset_size);
            u.addr_size = (unsigned)fixed(&c, 1);
        } else {
            continue;
        }
        abbrevs a = {NULL, 0};
        if (c.bad || read_abbrevs(s, abbrev_offset, &a) != 0) {
            free(a.at);
            continue;
        }
        int found = search_unit(&c, &u, &a, out, size);
        free(a.at);
        if (found)
            return 0;
    }
    return -1;
}
