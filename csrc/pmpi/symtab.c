/* Function names for code addresses, from the ELF symbol tables of the
 * executable and its shared objects.  dladdr() alone only sees exported
 * (dynamic) symbols, which leaves out the functions of an executable that
 * was not linked with -rdynamic, so each object's .symtab (or .dynsym when
 * it was stripped) is read once, lazily, the first time an address falls
 * into it.  C++ names are demangled when the program has libstdc++ loaded,
 * and lose their parameter list ("ns::solve(double*, int)" -> "ns::solve");
 * the names of gfortran objects are shown as the Fortran program wrote them
 * (fortran_name). */
#define _GNU_SOURCE
#include "pmpi.h"

#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct sym {
    uintptr_t value, size;
    uint32_t name; /* offset into names */
} sym;

typedef struct object {
    char *path;
    uintptr_t base;  /* load address (dli_fbase) */
    int relocated;   /* ET_DYN: symbol values are relative to base */
    int user;
    int fortran;     /* compiled by gfortran: its names are Fortran's */
    int has_program; /* defines MAIN__ (a Fortran main program) */
    char *program;   /* the main program's name from DWARF, NULL if unknown */
    sym *syms;
    size_t n_syms;
    char *names;
} object;

typedef struct ws_symbols {
    object *objects;
    size_t n, cap;
    char exe[4096];
    int python;
} ws_symbols;

static ws_symbols *symbols(void)
{
    ws_symbols *s = ws_pmpi_g.symbols;
    if (!s) {
        s = ws_pmpi_g.symbols = calloc(1, sizeof *s);
        if (!s)
            return NULL;
        ssize_t n = readlink("/proc/self/exe", s->exe, sizeof s->exe - 1);
        s->exe[n > 0 ? n : 0] = '\0';
        const char *base = strrchr(s->exe, '/');
        base = base ? base + 1 : s->exe;
        s->python = strncmp(base, "python", 6) == 0;
    }
    return s;
}

int ws_symbol_executable_is_python(void)
{
    ws_symbols *s = symbols();
    return s && s->python;
}

static int by_value(const void *a, const void *b)
{
    const sym *x = a, *y = b;
    return x->value < y->value ? -1 : x->value > y->value;
}

static int system_path(const char *p)
{
    return strncmp(p, "/lib/", 5) == 0 || strncmp(p, "/usr/lib/", 9) == 0 || strncmp(p, "/lib64/", 7) == 0 ||
           strncmp(p, "/usr/lib64/", 11) == 0 || strstr(p, "libwaitscope-pmpi") != NULL ||
           strstr(p, "linux-vdso") != NULL;
}

/* Section `i` of a mapped ELF file, if it lies inside the file. */
static const unsigned char *section(const unsigned char *map, size_t size, const Elf64_Shdr *sh, size_t *len)
{
    if (sh->sh_type == SHT_NOBITS || sh->sh_offset > size || sh->sh_size > size - sh->sh_offset)
        return NULL;
    *len = sh->sh_size;
    return map + sh->sh_offset;
}

/* Whether the object needs libgfortran (DT_NEEDED): its code is Fortran. */
static int links_gfortran(const unsigned char *map, size_t size, const Elf64_Ehdr *eh, const Elf64_Shdr *sh)
{
    for (int i = 0; i < eh->e_shnum; i++) {
        size_t n = 0, m = 0;
        const unsigned char *dyn = sh[i].sh_type == SHT_DYNAMIC ? section(map, size, &sh[i], &n) : NULL;
        const unsigned char *str = dyn && sh[i].sh_link < eh->e_shnum ? section(map, size, &sh[sh[i].sh_link], &m)
                                                                      : NULL;
        if (!dyn || !str)
            continue;
        for (size_t k = 0; k + sizeof(Elf64_Dyn) <= n; k += sizeof(Elf64_Dyn)) {
            Elf64_Dyn d;
            memcpy(&d, dyn + k, sizeof d);
            if (d.d_tag == DT_NULL)
                break;
            if (d.d_tag == DT_NEEDED && d.d_un.d_val < m && memchr(str + d.d_un.d_val, 0, m - d.d_un.d_val) &&
                strstr((const char *)str + d.d_un.d_val, "libgfortran"))
                return 1;
        }
    }
    return 0;
}

/* The name of the Fortran main program from the object's DWARF (dwarf.c),
 * malloc'ed; NULL without debugging information. */
static char *program_name(const unsigned char *map, size_t size, const Elf64_Ehdr *eh, const Elf64_Shdr *sh)
{
    if (eh->e_shstrndx >= eh->e_shnum)
        return NULL;
    size_t names_len = 0;
    const unsigned char *names = section(map, size, &sh[eh->e_shstrndx], &names_len);
    if (!names)
        return NULL;
    ws_dwarf_sections d;
    memset(&d, 0, sizeof d);
    for (int i = 0; i < eh->e_shnum; i++) {
        if (sh[i].sh_name >= names_len || (sh[i].sh_flags & SHF_COMPRESSED) ||
            !memchr(names + sh[i].sh_name, 0, names_len - sh[i].sh_name))
            continue;
        const char *name = (const char *)names + sh[i].sh_name;
        size_t n = 0;
        const unsigned char *data = section(map, size, &sh[i], &n);
        if (strcmp(name, ".debug_info") == 0)
            d.info = data, d.info_size = n;
        else if (strcmp(name, ".debug_abbrev") == 0)
            d.abbrev = data, d.abbrev_size = n;
        else if (strcmp(name, ".debug_str") == 0)
            d.str = data, d.str_size = n;
        else if (strcmp(name, ".debug_line_str") == 0)
            d.line_str = data, d.line_str_size = n;
    }
    char program[256];
    return ws_dwarf_main_program(&d, program, sizeof program) == 0 ? strdup(program) : NULL;
}

/* Reads the function symbols of an ELF file. */
static void load_symbols(object *o)
{
    int fd = open(o->path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    struct stat st;
    if (fstat(fd, &st) != 0 || (size_t)st.st_size < sizeof(Elf64_Ehdr)) {
        close(fd);
        return;
    }
    size_t size = (size_t)st.st_size;
    unsigned char *map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (map == MAP_FAILED)
        return;
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)map;
    if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
        eh->e_shoff == 0 || eh->e_shoff + (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr) > size)
        goto out;
    o->relocated = eh->e_type == ET_DYN;
    const Elf64_Shdr *sh = (const Elf64_Shdr *)(map + eh->e_shoff);
    int which = -1;
    for (int pass = 0; pass < 2 && which < 0; pass++)
        for (int i = 0; i < eh->e_shnum; i++)
            if (sh[i].sh_type == (pass == 0 ? SHT_SYMTAB : SHT_DYNSYM)) {
                which = i;
                break;
            }
    if (which < 0 || sh[which].sh_link >= eh->e_shnum)
        goto out;
    const Elf64_Shdr *ss = &sh[which], *strs = &sh[ss->sh_link];
    if (ss->sh_offset + ss->sh_size > size || strs->sh_offset + strs->sh_size > size || ss->sh_entsize == 0)
        goto out;
    size_t n = ss->sh_size / sizeof(Elf64_Sym);
    const Elf64_Sym *table = (const Elf64_Sym *)(map + ss->sh_offset);
    o->names = malloc(strs->sh_size + 1);
    o->syms = malloc((n ? n : 1) * sizeof *o->syms);
    if (!o->names || !o->syms)
        goto out;
    memcpy(o->names, map + strs->sh_offset, strs->sh_size);
    o->names[strs->sh_size] = '\0';
    for (size_t i = 0; i < n; i++) {
        if (ELF64_ST_TYPE(table[i].st_info) != STT_FUNC || table[i].st_value == 0 ||
            table[i].st_name >= strs->sh_size)
            continue;
        o->syms[o->n_syms++] = (sym){table[i].st_value, table[i].st_size, table[i].st_name};
    }
    qsort(o->syms, o->n_syms, sizeof *o->syms, by_value);
    for (size_t i = 0; i < o->n_syms && !o->has_program; i++)
        o->has_program = strcmp(o->names + o->syms[i].name, "MAIN__") == 0;
    o->fortran = o->has_program || links_gfortran(map, size, eh, sh);
    if (o->has_program)
        o->program = program_name(map, size, eh, sh);
out:
    munmap(map, size);
}

static object *object_of(const void *addr)
{
    ws_symbols *s = symbols();
    Dl_info info;
    if (!s || !dladdr(addr, &info) || !info.dli_fbase)
        return NULL;
    uintptr_t base = (uintptr_t)info.dli_fbase;
    for (size_t i = 0; i < s->n; i++)
        if (s->objects[i].base == base)
            return &s->objects[i];
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 16;
        object *o = realloc(s->objects, cap * sizeof *o);
        if (!o)
            return NULL;
        s->objects = o;
        s->cap = cap;
    }
    object *o = &s->objects[s->n++];
    memset(o, 0, sizeof *o);
    o->base = base;
    const char *path = info.dli_fname && *info.dli_fname ? info.dli_fname : s->exe;
    /* the executable is reported by the name it was started with */
    char real[4096];
    if (realpath(path, real))
        path = real;
    o->path = strdup(path);
    if (!o->path)
        return o;
    o->user = strcmp(o->path, s->exe) == 0 || !system_path(o->path);
    load_symbols(o);
    return o;
}

static void demangle(const char *in, char *out, size_t size)
{
    snprintf(out, size, "%s", in);
    if (strncmp(in, "_Z", 2) != 0)
        return;
    typedef char *(*demangler)(const char *, char *, size_t *, int *);
    demangler d = (demangler)dlsym(RTLD_DEFAULT, "__cxa_demangle");
    if (!d) {
        /* a C++ program need not link libstdc++ (nothing of it used): load it
         * for its demangler; it stays loaded for the process's life */
        void *lib = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL);
        if (lib)
            d = (demangler)dlsym(lib, "__cxa_demangle");
    }
    if (!d)
        return;
    int status = 0;
    char *text = d(in, NULL, NULL, &status);
    if (!text || status != 0) {
        free(text);
        return;
    }
    /* drop the parameter list: the first '(' outside template brackets */
    int depth = 0;
    for (char *p = text; *p; p++) {
        if (*p == '<')
            depth++;
        else if (*p == '>')
            depth--;
        else if (*p == '(' && depth == 0 && p != text) {
            *p = '\0';
            break;
        }
    }
    snprintf(out, size, "%s", text);
    free(text);
}

/* A gfortran symbol as the program wrote it: `sweep_` -> `sweep`
 * (`rcv_real__` with -fsecond-underscore), module procedures
 * `__solver_MOD_halo` -> `solver::halo`, internal procedures `inner.0` ->
 * `inner`, MAIN__ -> the program's name (or "main program" when the
 * object has no debugging information to tell it). */
static void fortran_name(const object *o, const char *in, char *out, size_t size)
{
    size_t n = strlen(in);
    const char *mod = strncmp(in, "__", 2) == 0 ? strstr(in + 2, "_MOD_") : NULL;
    if (strcmp(in, "MAIN__") == 0) {
        snprintf(out, size, "%s", o->program ? o->program : "main program");
    } else if (mod && mod > in + 2 && mod[5] && strncmp(mod + 5, "__", 2) != 0) {
        snprintf(out, size, "%.*s::%s", (int)(mod - in - 2), in + 2, mod + 5);
    } else if (n > 1 && in[0] != '_' && in[n - 1] == '_') {
        size_t keep = n - 1;
        if (keep > 1 && in[keep - 1] == '_' && memchr(in, '_', keep - 1))
            keep--; /* -fsecond-underscore: a second one for names with an underscore */
        snprintf(out, size, "%.*s", (int)keep, in);
    } else {
        const char *dot = strrchr(in, '.');
        size_t digits = dot ? strspn(dot + 1, "0123456789") : 0;
        if (dot && dot > in && digits > 0 && dot[1 + digits] == '\0')
            snprintf(out, size, "%.*s", (int)(dot - in), in);
        else
            snprintf(out, size, "%s", in);
    }
}

int ws_symbol_lookup(const void *addr, char *name, size_t size, uintptr_t *start, int *user, int *entry)
{
    object *o = object_of(addr);
    if (!o)
        return -1;
    *user = o->user;
    uintptr_t a = (uintptr_t)addr - (o->relocated ? o->base : 0);
    size_t lo = 0, hi = o->n_syms;
    while (lo < hi) { /* last symbol with value <= a */
        size_t mid = (lo + hi) / 2;
        if (o->syms[mid].value <= a)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return -1;
    const sym *f = &o->syms[lo - 1];
    if (f->size && a >= f->value + f->size)
        return -1;
    const char *raw = o->names + f->name;
    *entry = strcmp(raw, o->has_program ? "MAIN__" : "main") == 0;
    if (o->has_program && strcmp(raw, "main") == 0)
        return -1; /* the `main` gfortran generates to call the program */
    if (o->fortran)
        fortran_name(o, raw, name, size);
    else
        demangle(raw, name, size);
    *start = f->value + (o->relocated ? o->base : 0);
    return 0;
}
