/* The line-number decoder of csrc/pmpi/dwarf_line.c on an ELF file's
 * .debug_line (built and run by tests/test_pmpi_dwarf_line.py).
 *
 *   dwarf_line_check ELF QUERY...
 *       a line "QUERY FILE:LINE" or "QUERY ??" a query; a query is a
 *       link-time address (0x...) or the name of a function in .symtab
 *   dwarf_line_check ELF --prefixes QUERY...
 *       every prefix of .debug_line, as it is and with the unit it ends in
 *       cut there (its length field made to end at the prefix): prints
 *       "prefixes N found F differing D", D the lookups that found
 *       something other than the whole section does (there must be none)
 *   dwarf_line_check ELF --flips SEED ROUNDS QUERY...
 *       .debug_line with a few random bytes changed, ROUNDS times (and
 *       .debug_line_str cut short now and then): "flips ROUNDS found F"
 *
 * Every section is handed over in a buffer of its own exact size, so
 * that AddressSanitizer sees a read past its end.  Exits 2 on bad usage
 * or a file without .debug_line. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pmpi/dwarf_line.h"
#include "pmpi/elf_file.h"

typedef struct section {
    unsigned char *data;
    size_t size;
} section;

static section copy_of(const unsigned char *data, size_t size)
{
    section s = {malloc(size ? size : 1), size};
    if (!s.data) {
        fprintf(stderr, "out of memory\n");
        exit(2);
    }
    if (size)
        memcpy(s.data, data, size);
    return s;
}

static section named(const ws_elf *e, const char *name)
{
    const Elf64_Shdr *sh = ws_elf_section(e, name, 0);
    size_t size = 0;
    const unsigned char *data = sh && !(sh->sh_flags & SHF_COMPRESSED) ? ws_elf_data(e, sh, &size) : NULL;
    return data ? copy_of(data, size) : (section){NULL, 0};
}

/* A function's link-time address from .symtab; 0 if it has none. */
static uint64_t symbol(const ws_elf *e, const char *name)
{
    const Elf64_Shdr *table = ws_elf_section(e, ".symtab", SHT_SYMTAB);
    size_t n = 0, n_str = 0;
    const unsigned char *syms = ws_elf_data(e, table, &n);
    const unsigned char *str = syms && table->sh_link < e->eh->e_shnum ? ws_elf_data(e, &e->sh[table->sh_link], &n_str)
                                                                      : NULL;
    for (size_t i = 0; str && i + sizeof(Elf64_Sym) <= n; i += sizeof(Elf64_Sym)) {
        Elf64_Sym y;
        memcpy(&y, syms + i, sizeof y);
        if (ELF64_ST_TYPE(y.st_info) == STT_FUNC && y.st_shndx != SHN_UNDEF && y.st_name < n_str &&
            memchr(str + y.st_name, 0, n_str - y.st_name) && strcmp((const char *)str + y.st_name, name) == 0)
            return y.st_value;
    }
    return 0;
}

static void result(const section *line, const section *line_str, const section *str, uint64_t addr, char *out,
                   size_t size)
{
    char file[256];
    unsigned lineno = 0;
    if (ws_dwarf_line(line->data, line->size, line_str->data, line_str->size, str->data, str->size, addr, file,
                      sizeof file, &lineno) == 0)
        snprintf(out, size, "%s:%u", file, lineno);
    else
        snprintf(out, size, "??");
}

/* Where the unit that `n` falls in starts its length field, and the
 * field's size (4, or 12 for 64-bit DWARF); 0 when n is at no unit's inside. */
static size_t unit_at(const section *s, size_t n, size_t *start)
{
    size_t o = 0;
    while (o + 4 <= s->size) {
        uint32_t len32;
        memcpy(&len32, s->data + o, 4);
        size_t field = 4;
        uint64_t len = len32;
        if (len32 == 0xffffffffu) {
            if (o + 12 > s->size)
                return 0;
            memcpy(&len, s->data + o + 4, 8);
            field = 12;
        }
        if (len > s->size - o - field)
            return 0;
        if (n > o && n < o + field + len) {
            *start = o;
            return n >= o + field ? field : 0;
        }
        o += field + (size_t)len;
    }
    return 0;
}

static uint64_t next_random(uint64_t *state)
{
    uint64_t x = *state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    return x * 0x2545f4914f6cdd1dull;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: dwarf_line_check ELF [--prefixes | --flips SEED ROUNDS] QUERY...\n");
        return 2;
    }
    ws_elf e;
    if (ws_elf_open(&e, argv[1]) != 0) {
        fprintf(stderr, "%s: not a 64-bit ELF file\n", argv[1]);
        return 2;
    }
    int first = 2, prefixes = 0;
    long rounds = -1;
    uint64_t seed = 1;
    if (strcmp(argv[2], "--prefixes") == 0) {
        prefixes = 1;
        first = 3;
    } else if (strcmp(argv[2], "--flips") == 0 && argc >= 5) {
        seed = strtoull(argv[3], NULL, 0) | 1;
        rounds = strtol(argv[4], NULL, 0);
        first = 5;
    }
    section line = named(&e, ".debug_line"), line_str = named(&e, ".debug_line_str"), str = named(&e, ".debug_str");
    if (!line.data) {
        fprintf(stderr, "%s: no .debug_line\n", argv[1]);
        return 2;
    }
    int n = argc - first;
    uint64_t *addrs = calloc((size_t)(n ? n : 1), sizeof *addrs);
    char (*full)[300] = calloc((size_t)(n ? n : 1), sizeof *full);
    if (!addrs || !full)
        return 2;
    for (int i = 0; i < n; i++) {
        const char *q = argv[first + i];
        addrs[i] = strncmp(q, "0x", 2) == 0 ? strtoull(q, NULL, 16) : symbol(&e, q);
        result(&line, &line_str, &str, addrs[i], full[i], sizeof full[i]);
    }
    ws_elf_close(&e);

    if (prefixes) {
        long found = 0, differing = 0, runs = 0;
        for (size_t k = 0; k <= line.size; k++) {
            for (int cut = 0; cut < 2; cut++) {
                section p = copy_of(line.data, k);
                size_t start = 0, field = cut ? unit_at(&line, k, &start) : 0;
                if (cut && !field) {
                    free(p.data);
                    continue;
                }
                if (field == 4) {
                    uint32_t len = (uint32_t)(k - start - 4);
                    memcpy(p.data + start, &len, 4);
                } else if (field == 12) {
                    uint64_t len = k - start - 12;
                    memcpy(p.data + start + 4, &len, 8);
                }
                runs++;
                for (int i = 0; i < n; i++) {
                    char out[300];
                    result(&p, &line_str, &str, addrs[i], out, sizeof out);
                    if (strcmp(out, "??") != 0) {
                        found++;
                        differing += strcmp(out, full[i]) != 0;
                    }
                }
                free(p.data);
            }
        }
        printf("prefixes %ld found %ld differing %ld\n", runs, found, differing);
    } else if (rounds >= 0) {
        long found = 0;
        uint64_t state = seed;
        for (long r = 0; r < rounds; r++) {
            section p = copy_of(line.data, line.size);
            int flips = 1 + (int)(next_random(&state) % 4);
            for (int f = 0; f < flips && p.size; f++)
                p.data[next_random(&state) % p.size] ^= (unsigned char)(1 + next_random(&state) % 255);
            size_t kept = line_str.size;
            if (kept && next_random(&state) % 4 == 0)
                kept = (size_t)(next_random(&state) % kept);
            section ls = copy_of(line_str.data, kept);
            for (int i = 0; i < n; i++) {
                char out[300];
                result(&p, line_str.data ? &ls : &line_str, &str, addrs[i], out, sizeof out);
                found += strcmp(out, "??") != 0;
            }
            free(p.data);
            free(ls.data);
        }
        printf("flips %ld found %ld\n", rounds, found);
    } else {
        for (int i = 0; i < n; i++)
            printf("%s %s\n", argv[first + i], full[i]);
    }
    free(addrs);
    free(full);
    free(line.data);
    free(line_str.data);
    free(str.data);
    return 0;
}
