/* Function names for code addresses, from the ELF symbol tables of the
 * executable and its shared objects.  dladdr() alone only sees exported
 * (dynamic) symbols, which leaves out the functions of an executable that
 * was not linked with -rdynamic, so each object's symbols are read once,
 * lazily, the first time an address falls into it: its .symtab; for a
 * stripped object the .symtab of its separate debugging information where
 * it is installed (by build id under the debug directories,
 * WAITSCOPE_DEBUG_DIRS or /usr/lib/debug, or by GNU debuglink), else its
 * .dynsym (exported functions only).  An address of user code that no
 * symbol covers is named after its object and the start of its function
 * from the unwind tables (.eh_frame_hdr): `liblammps.so.0+0x1a2b30`, never
 * dropped.  The `main` of a stripped executable is found from its entry
 * code.  C++ names are demangled when the program has libstdc++ loaded,
 * and lose their parameter list ("ns::solve(double*, int)" -> "ns::solve");
 * the names of gfortran objects are shown as the Fortran program wrote them
 * (fortran_name).
 *
 * User code: the executable, shared objects outside the system library
 * directories, and those inside them that the executable needs directly
 * and that are not a language runtime, MPI or system library (Debian's
 * /usr/bin/lmp keeps its code in /usr/lib/.../liblammps.so.0). */
#define _GNU_SOURCE
#include "pmpi.h"

#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "elf_file.h"

typedef struct sym {
    uintptr_t value, size;
    uint32_t name; /* offset into names */
} sym;

typedef struct object {
    char *path;
    const char *base_name; /* inside path */
    uintptr_t base;  /* load address (dli_fbase) */
    int relocated;   /* ET_DYN: symbol values are relative to base */
    int user;
    int is_exe;
    int fortran;     /* compiled by gfortran: its names are Fortran's */
    int has_program; /* defines MAIN__ (a Fortran main program) */
    int has_main;    /* defines main */
    char *program;   /* the main program's name from DWARF, NULL if unknown */
    sym *syms;
    size_t n_syms;
    char *names;
    uint64_t *starts; /* function starts from .eh_frame_hdr (link-time addresses) */
    size_t n_starts;
    int lines_loaded; /* its line-number information was looked for */
    ws_elf lines;     /* the file that has it, mapped for the process's life (map NULL: none) */
    const unsigned char *line, *line_str, *str; /* its .debug_line, .debug_line_str, .debug_str */
    size_t line_size, line_str_size, str_size;
} object;

typedef struct ws_symbols {
    object *objects;
    size_t n, cap;
    char exe[4096];
    int python;
    uintptr_t exe_base; /* the executable's load address */
    char **needed; /* the executable's DT_NEEDED libraries */
    size_t n_needed;
    int entry_known;
    uintptr_t entry, main; /* run-time addresses of _start and of main (0: unknown) */
} ws_symbols;

static int add_needed(const char *name, void *arg)
{
    ws_symbols *s = arg;
    char **grown = realloc(s->needed, (s->n_needed + 1) * sizeof *grown);
    if (!grown)
        return 1;
    s->needed = grown;
    if ((s->needed[s->n_needed] = strdup(name)) != NULL)
        s->n_needed++;
    return 0;
}

/* the first object dl_iterate_phdr reports is the executable */
static int first_object(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    *(uintptr_t *)arg = (uintptr_t)info->dlpi_addr;
    return 1;
}

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
        ws_elf e;
        if (ws_elf_open(&e, s->exe) == 0) {
            ws_elf_each_needed(&e, add_needed, s);
            ws_elf_close(&e);
        }
        dl_iterate_phdr(first_object, &s->exe_base);
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

/* A language runtime, MPI or system library: never user code. */
static int runtime_library(const char *name)
{
    static const char *const prefixes[] = {
        "libc.", "libm.", "libdl.", "libpthread", "librt.", "libutil", "libstdc++", "libgcc_s", "libgfortran",
        "libquadmath", "libgomp", "libomp", "libatomic", "libmpi", "libopen-", "libpmi", "libpmix", "libhwloc",
        "libucp", "libucs", "libuct", "libucm", "libfabric", "libevent", "libz.", "libnuma", "libibverbs",
        "librdmacm", "libpython", "libcrypto", "libssl", "libffi", "liblzma", "libtinfo", "libotf2", "ld-linux",
        "libwaitscope", "libblas", "liblapack", "libopenblas", "libfftw", "libhdf5", "libnetcdf", "libjpeg",
        "libpng", "libcurl", "libX", "libGL", "libsystemd", "libudev", "libdbus", "libcap", "libltdl", "libxml2"};
    for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
        if (strncmp(name, prefixes[i], strlen(prefixes[i])) == 0)
            return 1;
    return 0;
}

static int needed_by_exe(const ws_symbols *s, const char *name)
{
    for (size_t i = 0; i < s->n_needed; i++)
        if (strcmp(s->needed[i], name) == 0)
            return 1;
    return 0;
}

/* A DWARF section's contents; NULL if absent or compressed. */
static const unsigned char *debug_section(const ws_elf *e, const char *name, size_t *len)
{
    const Elf64_Shdr *sh = ws_elf_section(e, name, 0);
    *len = 0;
    return sh && !(sh->sh_flags & SHF_COMPRESSED) ? ws_elf_data(e, sh, len) : NULL;
}

/* The path of an object's separate debugging information (malloc'ed), NULL if not installed. */
static char *debug_file(const ws_elf *e, const char *path)
{
    const char *dirs = getenv("WAITSCOPE_DEBUG_DIRS");
    return ws_elf_debug_file(e, path, dirs && *dirs ? dirs : "/usr/lib/debug");
}

/* The name of the Fortran main program from an ELF file's DWARF
 * (dwarf.c), malloc'ed; NULL without debugging information. */
static char *program_name(const ws_elf *e)
{
    static const char *const names[] = {".debug_info", ".debug_abbrev", ".debug_str", ".debug_line_str"};
    const unsigned char *data[4];
    size_t len[4];
    for (int i = 0; i < 4; i++)
        data[i] = debug_section(e, names[i], &len[i]);
    ws_dwarf_sections d = {data[0], data[1], data[2], data[3], len[0], len[1], len[2], len[3]};
    char program[256];
    return ws_dwarf_main_program(&d, program, sizeof program) == 0 ? strdup(program) : NULL;
}

static int is_gfortran(const char *name, void *arg)
{
    (void)arg;
    return strstr(name, "libgfortran") != NULL;
}

/* Reads the function symbols of one symbol table of an ELF file. */
static void read_table(object *o, const ws_elf *e, const Elf64_Shdr *table_sh)
{
    size_t n_bytes = 0, n_str = 0;
    const unsigned char *table = ws_elf_data(e, table_sh, &n_bytes);
    const unsigned char *strs = table && table_sh->sh_link < e->eh->e_shnum
                                    ? ws_elf_data(e, &e->sh[table_sh->sh_link], &n_str)
                                    : NULL;
    if (!table || !strs || table_sh->sh_entsize != sizeof(Elf64_Sym))
        return;
    size_t n = n_bytes / sizeof(Elf64_Sym);
    o->names = malloc(n_str + 1);
    o->syms = malloc((n ? n : 1) * sizeof *o->syms);
    if (!o->names || !o->syms) {
        free(o->names);
        free(o->syms);
        o->names = NULL;
        o->syms = NULL;
        return;
    }
    memcpy(o->names, strs, n_str);
    o->names[n_str] = '\0';
    for (size_t i = 0; i < n; i++) {
        Elf64_Sym y;
        memcpy(&y, table + i * sizeof y, sizeof y);
        if (ELF64_ST_TYPE(y.st_info) != STT_FUNC || y.st_value == 0 || y.st_name >= n_str ||
            y.st_shndx == SHN_UNDEF)
            continue;
        o->syms[o->n_syms++] = (sym){y.st_value, y.st_size, y.st_name};
    }
    qsort(o->syms, o->n_syms, sizeof *o->syms, by_value);
}

/* Reads an object's symbols (its own, its debugging information's or its
 * exported ones) and its function starts. */
static void load_symbols(object *o)
{
    ws_elf e;
    if (ws_elf_open(&e, o->path) != 0)
        return;
    o->relocated = e.eh->e_type == ET_DYN;
    o->n_starts = ws_elf_function_starts(&e, &o->starts);
    o->fortran = ws_elf_each_needed(&e, is_gfortran, NULL);
    const Elf64_Shdr *table = ws_elf_section(&e, ".symtab", SHT_SYMTAB);
    ws_elf debug;
    int have_debug = 0;
    if (!table) {
        char *path = debug_file(&e, o->path);
        if (path && ws_elf_open(&debug, path) == 0) {
            have_debug = 1;
            read_table(o, &debug, ws_elf_section(&debug, ".symtab", SHT_SYMTAB));
        }
        free(path);
        if (!o->n_syms)
            read_table(o, &e, ws_elf_section(&e, ".dynsym", SHT_DYNSYM));
    } else {
        read_table(o, &e, table);
    }
    for (size_t i = 0; i < o->n_syms; i++) {
        const char *name = o->names + o->syms[i].name;
        o->has_program |= strcmp(name, "MAIN__") == 0;
        o->has_main |= strcmp(name, "main") == 0;
    }
    o->fortran |= o->has_program;
    if (o->has_program)
        o->program = program_name(have_debug ? &debug : &e);
    if (have_debug)
        ws_elf_close(&debug);
    ws_elf_close(&e);
}

/* Maps the file with an object's line-number information, its own
 * .debug_line or that of its separate debugging information, for the
 * rest of the process: the first time a source line is asked for in it. */
static void load_lines(object *o)
{
    o->lines_loaded = 1;
    ws_elf e;
    if (!o->path || ws_elf_open(&e, o->path) != 0)
        return;
    size_t n;
    if (!debug_section(&e, ".debug_line", &n)) {
        char *path = debug_file(&e, o->path);
        ws_elf_close(&e);
        int opened = path && ws_elf_open(&e, path) == 0;
        free(path);
        if (!opened)
            return;
    }
    o->line = debug_section(&e, ".debug_line", &o->line_size);
    if (!o->line) {
        ws_elf_close(&e);
        return;
    }
    o->line_str = debug_section(&e, ".debug_line_str", &o->line_str_size);
    o->str = debug_section(&e, ".debug_str", &o->str_size);
    o->lines = e;
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
    /* dladdr names the executable as it was started (argv[0], e.g. "lmp"
     * found on PATH): it is known by its load address instead */
    const char *path = base == s->exe_base || !info.dli_fname || !*info.dli_fname ? s->exe : info.dli_fname;
    char real[4096];
    if (realpath(path, real))
        path = real;
    o->path = strdup(path);
    if (!o->path)
        return o;
    const char *slash = strrchr(o->path, '/');
    o->base_name = slash ? slash + 1 : o->path;
    o->is_exe = strcmp(o->path, s->exe) == 0;
    /* the library's name as the executable asks for it may be a symlink's: compare the soname prefix */
    const char *asked = info.dli_fname ? info.dli_fname : "";
    char soname[256];
    snprintf(soname, sizeof soname, "%s", strrchr(asked, '/') ? strrchr(asked, '/') + 1 : asked);
    o->user = o->is_exe || !system_path(o->path) ||
              ((needed_by_exe(s, soname) || needed_by_exe(s, o->base_name)) && !runtime_library(o->base_name));
    load_symbols(o);
    return o;
}

/* The run-time addresses of the executable's entry code (_start) and of
 * the main it passes to __libc_start_main, read from the entry code
 * itself (x86-64: `mov main@GOTPCREL(%rip), %rdi`, `lea main(%rip), %rdi`
 * or `mov $main, %rdi`): what names the main of a stripped executable. */
static void find_entry(ws_symbols *s)
{
    if (s->entry_known)
        return;
    s->entry_known = 1;
    s->entry = (uintptr_t)getauxval(AT_ENTRY);
#if defined(__x86_64__)
    const unsigned char *p = (const unsigned char *)s->entry;
    for (int i = 0; p && i < 48; i++) {
        if (p[i] == 0x48 && (p[i + 1] == 0x8b || p[i + 1] == 0x8d) && p[i + 2] == 0x3d) {
            int32_t rel;
            memcpy(&rel, p + i + 3, 4);
            const unsigned char *target = p + i + 7 + rel;
            if (p[i + 1] == 0x8b)
                memcpy(&s->main, target, sizeof s->main); /* the GOT slot, relocated by now */
            else
                s->main = (uintptr_t)target;
            return;
        }
        if (p[i] == 0x48 && p[i + 1] == 0xc7 && p[i + 2] == 0xc7) {
            int32_t imm;
            memcpy(&imm, p + i + 3, 4);
            s->main = (uintptr_t)(uint32_t)imm;
            return;
        }
    }
#endif
}

/* The start of the function containing link-time address a from the
 * unwind tables; 0 if none. */
static uint64_t function_start(const object *o, uint64_t a)
{
    size_t lo = 0, hi = o->n_starts;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (o->starts[mid] <= a)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo ? o->starts[lo - 1] : 0;
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

/* An address of user code that no symbol names: its function by where
 * the unwind tables say it starts (`liblammps.so.0+0x1a2b30`), the main
 * and entry code of a stripped executable recognised. */
static int unnamed(ws_symbols *s, const object *o, uintptr_t a, char *name, size_t size, uintptr_t *start,
                   int *entry)
{
    uint64_t f = function_start(o, a);
    if (!f)
        return -1;
    uintptr_t at = (uintptr_t)f + (o->relocated ? o->base : 0);
    if (o->is_exe && !o->has_main) {
        find_entry(s);
        if (at == s->entry)
            return -1; /* _start: outside the program */
        if (at == s->main) {
            snprintf(name, size, "main");
            *entry = 1;
            *start = at;
            return 0;
        }
    }
    snprintf(name, size, "%s+0x%llx", o->base_name, (unsigned long long)f);
    *start = at;
    return 0;
}

int ws_symbol_source(const void *addr, char *file, size_t size, unsigned *line)
{
    object *o = object_of(addr);
    if (!o)
        return -1;
    if (!o->lines_loaded)
        load_lines(o);
    if (!o->line)
        return -1;
    uint64_t a = (uintptr_t)addr - (o->relocated ? o->base : 0);
    int found = ws_dwarf_line(o->line, o->line_size, o->line_str, o->line_str_size, o->str, o->str_size, a, file,
                              size, line);
    return found == 0 ? 0 : -1;
}

int ws_symbol_lookup(const void *addr, char *name, size_t size, uintptr_t *start, int *user, int *entry)
{
    ws_symbols *s = symbols();
    object *o = object_of(addr);
    if (!o || !s)
        return -1;
    *user = o->user;
    *entry = 0;
    uintptr_t a = (uintptr_t)addr - (o->relocated ? o->base : 0);
    size_t lo = 0, hi = o->n_syms;
    while (lo < hi) { /* last symbol with value <= a */
        size_t mid = (lo + hi) / 2;
        if (o->syms[mid].value <= a)
            lo = mid + 1;
        else
            hi = mid;
    }
    const sym *f = lo ? &o->syms[lo - 1] : NULL;
    /* a symbol without size covers up to the next function the unwind tables know */
    if (f && !f->size && o->n_starts && function_start(o, a) > f->value)
        f = NULL;
    if (!f || (f->size && a >= f->value + f->size))
        return o->user ? unnamed(s, o, a, name, size, start, entry) : -1;
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
