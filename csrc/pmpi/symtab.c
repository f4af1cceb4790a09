/* Function names for code addresses, from the ELF symbol tables of the
 * executable and its shared objects.  dladdr() alone only sees exported
 * (dynamic) symbols, which leaves out the functions of an executable that
 * was not linked with -rdynamic, so each object's .symtab (or .dynsym when
 * it was stripped) is read once, lazily, the first time an address falls
 * into it.  C++ names are demangled when the program has libstdc++ loaded,
 * and lose their parameter list ("ns::solve(double*, int)" -> "ns::solve"). */
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

int ws_symbol_lookup(const void *addr, char *name, size_t size, uintptr_t *start, int *user)
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
    demangle(o->names + f->name, name, size);
    *start = f->value + (o->relocated ? o->base : 0);
    return 0;
}
