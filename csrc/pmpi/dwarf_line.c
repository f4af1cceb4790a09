/* Source lines of code addresses from DWARF's line-number program
 * (dwarf_line.h): the units of .debug_line of DWARF 2-5, 32- and 64-bit,
 * each a header (the opcodes' parameters and the file names; DWARF 5
 * describes its directory and file entries by content types and forms)
 * and a program of opcodes that builds the rows of the line table.  An
 * address belongs to the row whose [address, the next row's address) of
 * the same sequence contains it, as addr2line has it: of several rows at
 * one address the last one.  The file is named by its base name
 * ("halo.c"), as Score-P's "@halo.c:63" does; line 0 (code of no source
 * line) counts as not found.  The units are decoded anew for each lookup,
 * up to the first row that covers the address: lookups are rare.  File
 * names given by string index (DW_FORM_strx*, which would need
 * .debug_str_offsets) are not read: their rows name no file.
 *
 * Every read is bounds-checked (dwarf_cursor.h): a unit whose header
 * makes no sense, or the rest of a program that breaks off, is passed
 * over; a unit length out of range ends the search; every step of a loop
 * consumes input.  Corrupt data never reads out of bounds nor loops
 * forever: it finds nothing, or what the intact rows before it say. */
#include "dwarf_line.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dwarf_cursor.h"

enum {
    LNS_COPY = 1,
    LNS_ADVANCE_PC = 2,
    LNS_ADVANCE_LINE = 3,
    LNS_SET_FILE = 4,
    LNS_SET_COLUMN = 5,
    LNS_NEGATE_STMT = 6,
    LNS_SET_BASIC_BLOCK = 7,
    LNS_CONST_ADD_PC = 8,
    LNS_FIXED_ADVANCE_PC = 9,
    LNS_SET_PROLOGUE_END = 10,
    LNS_SET_EPILOGUE_BEGIN = 11,
    LNS_SET_ISA = 12,
    LNE_END_SEQUENCE = 1,
    LNE_SET_ADDRESS = 2,
    LNE_DEFINE_FILE = 3,
    LNE_SET_DISCRIMINATOR = 4,
    LNCT_PATH = 1,
    FORM_BLOCK2 = 0x03,
    FORM_BLOCK4 = 0x04,
    FORM_DATA2 = 0x05,
    FORM_DATA4 = 0x06,
    FORM_DATA8 = 0x07,
    FORM_STRING = 0x08,
    FORM_BLOCK = 0x09,
    FORM_BLOCK1 = 0x0a,
    FORM_DATA1 = 0x0b,
    FORM_SDATA = 0x0d,
    FORM_STRP = 0x0e,
    FORM_UDATA = 0x0f,
    FORM_SEC_OFFSET = 0x17,
    FORM_STRX = 0x1a,
    FORM_DATA16 = 0x1e,
    FORM_LINE_STRP = 0x1f,
    FORM_STRX1 = 0x25,
    FORM_STRX4 = 0x28,
};

typedef struct strings {
    const unsigned char *line_str, *str;
    size_t line_str_size, str_size;
} strings;

/* One unit's header: what the program's opcodes mean, and its files. */
typedef struct header {
    unsigned version, offset_size;
    unsigned min_inst, max_ops, line_range, opcode_base;
    int line_base;
    const unsigned char *opcode_lengths; /* of opcodes 1 .. opcode_base - 1 */
    const char **files; /* path names (NULL: not readable here); DWARF 5 counts from 0, earlier from 1 */
    size_t n_files, cap;
} header;

static int add_file(header *h, const char *path)
{
    if (h->n_files == h->cap) {
        size_t cap = h->cap ? 2 * h->cap : 16;
        const char **grown = realloc(h->files, cap * sizeof *grown);
        if (!grown)
            return -1;
        h->files = grown;
        h->cap = cap;
    }
    h->files[h->n_files++] = path;
    return 0;
}

/* Reads one value of a DWARF 5 directory or file entry: the string of the
 * string forms (NULL where it cannot be resolved: the strx forms, which
 * need .debug_str_offsets), other forms skipped by their size. */
static const char *entry_value(cursor *c, uint64_t form, const header *h, const strings *s)
{
    switch (form) {
    case FORM_STRING: return cstring(c);
    case FORM_LINE_STRP: {
        uint64_t off = fixed(c, h->offset_size);
        return c->bad ? NULL : section_string(s->line_str, s->line_str_size, off);
    }
    case FORM_STRP: {
        uint64_t off = fixed(c, h->offset_size);
        return c->bad ? NULL : section_string(s->str, s->str_size, off);
    }
    case FORM_UDATA: case FORM_STRX: uleb(c); break;
    case FORM_SDATA: sleb(c); break;
    case FORM_DATA1: skip(c, 1); break;
    case FORM_DATA2: skip(c, 2); break;
    case FORM_DATA4: skip(c, 4); break;
    case FORM_DATA8: skip(c, 8); break;
    case FORM_DATA16: skip(c, 16); break; /* the MD5 of DW_LNCT_MD5 */
    case FORM_BLOCK: skip(c, uleb(c)); break;
    case FORM_BLOCK1: skip(c, fixed(c, 1)); break;
    case FORM_BLOCK2: skip(c, fixed(c, 2)); break;
    case FORM_BLOCK4: skip(c, fixed(c, 4)); break;
    case FORM_SEC_OFFSET: skip(c, h->offset_size); break;
    default:
        if (form >= FORM_STRX1 && form <= FORM_STRX4)
            skip(c, form - FORM_STRX1 + 1);
        else
            c->bad = 1; /* a form of unknown size: the rest cannot be read */
        break;
    }
    return NULL;
}

/* A DWARF 5 directory or file name table: the entry format (pairs of
 * content type and form), the number of entries, the entries; the paths
 * of file entries are added to h->files. */
static int entry_table(cursor *c, header *h, const strings *s, int files)
{
    unsigned n_formats = (unsigned)fixed(c, 1);
    cursor formats = *c;
    for (unsigned i = 0; i < 2 * n_formats; i++)
        uleb(c);
    uint64_t count = uleb(c);
    if (c->bad)
        return -1;
    if (n_formats == 0) /* entries of no content */
        return count ? -1 : 0;
    /* every entry has a value, and every value takes a byte at least */
    for (uint64_t k = 0; k < count && !c->bad; k++) {
        cursor f = formats;
        const char *path = NULL;
        for (unsigned i = 0; i < n_formats && !c->bad; i++) {
            uint64_t type = uleb(&f), form = uleb(&f);
            const char *value = entry_value(c, form, h, s);
            if (type == LNCT_PATH)
                path = value;
        }
        if (files && !c->bad && add_file(h, path) != 0)
            return -1;
    }
    return c->bad ? -1 : 0;
}

/* The header of a unit (after its length); leaves c at the program. */
static int read_header(cursor *c, header *h, unsigned offset_size, const strings *s)
{
    h->offset_size = offset_size;
    h->version = (unsigned)fixed(c, 2);
    if (c->bad || h->version < 2 || h->version > 5)
        return -1;
    if (h->version >= 5)
        skip(c, 2); /* address_size, segment_selector_size */
    uint64_t header_length = fixed(c, offset_size);
    if (c->bad || header_length > (uint64_t)(c->end - c->p))
        return -1;
    cursor hc = {c->p, c->p + header_length, 0};
    c->p += header_length;
    h->min_inst = (unsigned)fixed(&hc, 1);
    h->max_ops = h->version >= 4 ? (unsigned)fixed(&hc, 1) : 1;
    skip(&hc, 1); /* default_is_stmt: a lookup takes every row */
    h->line_base = (int)(signed char)(unsigned char)fixed(&hc, 1);
    h->line_range = (unsigned)fixed(&hc, 1);
    h->opcode_base = (unsigned)fixed(&hc, 1);
    h->opcode_lengths = hc.p;
    skip(&hc, h->opcode_base ? h->opcode_base - 1 : 0);
    if (hc.bad || h->line_range == 0 || h->opcode_base == 0)
        return -1;
    if (h->max_ops == 0)
        h->max_ops = 1;
    if (h->version >= 5)
        return entry_table(&hc, h, s, 0) != 0 || entry_table(&hc, h, s, 1) != 0 ? -1 : 0;
    while (!hc.bad && hc.p < hc.end && *hc.p) /* include_directories */
        cstring(&hc);
    skip(&hc, 1);
    while (!hc.bad && hc.p < hc.end && *hc.p) { /* file_names: name, directory, time, length */
        const char *name = cstring(&hc);
        uleb(&hc);
        uleb(&hc);
        uleb(&hc);
        if (!hc.bad && add_file(h, name) != 0)
            return -1;
    }
    skip(&hc, 1);
    return hc.bad ? -1 : 0;
}

/* The registers of the line-number state machine that a lookup needs. */
typedef struct state {
    uint64_t address, op_index, file, line;
} state;

static void advance(state *r, const header *h, uint64_t operation_advance)
{
    if (h->max_ops == 1) {
        r->address += h->min_inst * operation_advance;
    } else { /* VLIW: an operation index within the instruction */
        uint64_t ops = r->op_index + operation_advance;
        r->address += h->min_inst * (ops / h->max_ops);
        r->op_index = ops % h->max_ops;
    }
}

/* A lookup in one unit: the address, the last row of the sequence so
 * far, and the row found. */
typedef struct lookup {
    uint64_t addr;
    state prev; /* the sequence's last row */
    int have_prev;
    state found;
} lookup;

/* A new row: the previous one of its sequence covers [its address, this one's). */
static int row(lookup *l, const state *r)
{
    if (l->have_prev && l->prev.address <= l->addr && l->addr < r->address) {
        l->found = l->prev;
        return 1;
    }
    l->prev = *r;
    l->have_prev = 1;
    return 0;
}

/* Runs a unit's program up to the row that covers l->addr: 1 (the row in
 * l->found), 0 when no row does, -1 when the program or a file it defines
 * breaks off. */
static int run_program(cursor *c, header *h, lookup *l)
{
    const state initial = {0, 0, 1, 1};
    state r = initial;
    l->have_prev = 0;
    while (!c->bad && c->p < c->end) {
        unsigned op = (unsigned)fixed(c, 1);
        if (op >= h->opcode_base) { /* special opcode: advance address and line, add a row */
            unsigned adjusted = op - h->opcode_base;
            advance(&r, h, adjusted / h->line_range);
            r.line += (uint64_t)(int64_t)(h->line_base + (int)(adjusted % h->line_range));
            if (row(l, &r))
                return 1;
            continue;
        }
        switch (op) {
        case 0: { /* extended opcode: its length, then the opcode and its operands */
            uint64_t len = uleb(c);
            if (c->bad || len > (uint64_t)(c->end - c->p))
                return -1;
            cursor e = {c->p, c->p + len, 0};
            c->p += len;
            unsigned sub = len ? (unsigned)fixed(&e, 1) : 0;
            if (len && sub == LNE_END_SEQUENCE) {
                if (row(l, &r))
                    return 1;
                r = initial;
                l->have_prev = 0;
            } else if (len >= 2 && len <= 9 && sub == LNE_SET_ADDRESS) {
                r.address = fixed(&e, (unsigned)len - 1);
                r.op_index = 0;
            } else if (len && sub == LNE_DEFINE_FILE && h->version <= 4) {
                const char *name = cstring(&e);
                if (e.bad || add_file(h, name) != 0)
                    return -1;
            }
            /* DW_LNE_set_discriminator and unknown ones: skipped by their length */
            break;
        }
        case LNS_COPY:
            if (row(l, &r))
                return 1;
            break;
        case LNS_ADVANCE_PC: advance(&r, h, uleb(c)); break;
        case LNS_ADVANCE_LINE: r.line += (uint64_t)sleb(c); break;
        case LNS_SET_FILE: r.file = uleb(c); break;
        case LNS_SET_COLUMN: case LNS_SET_ISA: uleb(c); break;
        case LNS_NEGATE_STMT: case LNS_SET_BASIC_BLOCK: case LNS_SET_PROLOGUE_END: case LNS_SET_EPILOGUE_BEGIN:
            break; /* flags of the row a lookup does not need */
        case LNS_CONST_ADD_PC: advance(&r, h, (255 - h->opcode_base) / h->line_range); break;
        case LNS_FIXED_ADVANCE_PC:
            r.address += fixed(c, 2);
            r.op_index = 0;
            break;
        default: /* an opcode of a later standard: skip its operands */
            for (unsigned i = 0; i < h->opcode_lengths[op - 1] && !c->bad; i++)
                uleb(c);
            break;
        }
    }
    return c->bad ? -1 : 0;
}

int ws_dwarf_line(const unsigned char *line, size_t line_size, const unsigned char *line_str, size_t line_str_size,
                  const unsigned char *str, size_t str_size, uint64_t addr, char *file, size_t file_size,
                  unsigned *lineno)
{
    if (!line)
        return -1;
    const strings s = {line_str, str, line_str ? line_str_size : 0, str ? str_size : 0};
    cursor all = {line, line + line_size, 0};
    while (!all.bad && all.p < all.end) {
        unsigned offset_size;
        cursor c;
        if (unit_range(&all, &c, &offset_size) != 0)
            return -1;
        header h;
        memset(&h, 0, sizeof h);
        lookup l = {.addr = addr};
        if (read_header(&c, &h, offset_size, &s) == 0 && run_program(&c, &h, &l) == 1) {
            /* DWARF 5 numbers its files from 0 (the primary source file), earlier versions from 1 */
            uint64_t index = l.found.file - (h.version >= 5 ? 0 : 1);
            const char *path = index < h.n_files ? h.files[index] : NULL;
            free(h.files);
            if (!path || l.found.line == 0 || l.found.line > UINT_MAX)
                return -1;
            const char *slash = strrchr(path, '/');
            const char *base = slash ? slash + 1 : path;
            if (!*base)
                return -1;
            snprintf(file, file_size, "%s", base);
            *lineno = (unsigned)l.found.line;
            return 0;
        }
        free(h.files);
    }
    return -1;
}
