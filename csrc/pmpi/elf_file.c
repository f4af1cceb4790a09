/* Reading one ELF file (elf_file.h): mapped read-only, every offset
 * checked against its size. */
#define _GNU_SOURCE
#include "elf_file.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

int ws_elf_open(ws_elf *e, const char *path)
{
    memset(e, 0, sizeof *e);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (size_t)st.st_size < sizeof(Elf64_Ehdr)) {
        close(fd);
        return -1;
    }
    e->size = (size_t)st.st_size;
    void *map = mmap(NULL, e->size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (map == MAP_FAILED)
        return -1;
    e->map = map;
    e->eh = (const Elf64_Ehdr *)e->map;
    if (memcmp(e->eh->e_ident, ELFMAG, SELFMAG) != 0 || e->eh->e_ident[EI_CLASS] != ELFCLASS64) {
        ws_elf_close(e);
        return -1;
    }
    if (e->eh->e_shoff && e->eh->e_shnum && e->eh->e_shoff <= e->size &&
        (uint64_t)e->eh->e_shnum * sizeof(Elf64_Shdr) <= e->size - e->eh->e_shoff)
        e->sh = (const Elf64_Shdr *)(e->map + e->eh->e_shoff);
    return 0;
}

void ws_elf_close(ws_elf *e)
{
    if (e->map)
        munmap(e->map, e->size);
    memset(e, 0, sizeof *e);
}

const unsigned char *ws_elf_data(const ws_elf *e, const Elf64_Shdr *sh, size_t *len)
{
    if (!sh || sh->sh_type == SHT_NOBITS || sh->sh_offset > e->size || sh->sh_size > e->size - sh->sh_offset)
        return NULL;
    *len = sh->sh_size;
    return e->map + sh->sh_offset;
}

const Elf64_Shdr *ws_elf_section(const ws_elf *e, const char *name, uint32_t type)
{
    if (!e->sh || e->eh->e_shstrndx >= e->eh->e_shnum)
        return NULL;
    size_t n = 0;
    const unsigned char *names = ws_elf_data(e, &e->sh[e->eh->e_shstrndx], &n);
    if (!names)
        return NULL;
    for (int i = 0; i < e->eh->e_shnum; i++) {
        const Elf64_Shdr *s = &e->sh[i];
        if ((type && s->sh_type != type) || s->sh_name >= n || !memchr(names + s->sh_name, 0, n - s->sh_name))
            continue;
        if (strcmp((const char *)names + s->sh_name, name) == 0)
            return s;
    }
    return NULL;
}

int ws_elf_each_needed(const ws_elf *e, int (*f)(const char *name, void *arg), void *arg)
{
    for (int i = 0; e->sh && i < e->eh->e_shnum; i++) {
        size_t n = 0, m = 0;
        const unsigned char *dyn = e->sh[i].sh_type == SHT_DYNAMIC ? ws_elf_data(e, &e->sh[i], &n) : NULL;
        const Elf64_Shdr *link = dyn && e->sh[i].sh_link < e->eh->e_shnum ? &e->sh[e->sh[i].sh_link] : NULL;
        const unsigned char *str = link ? ws_elf_data(e, link, &m) : NULL;
        if (!dyn || !str)
            continue;
        for (size_t k = 0; k + sizeof(Elf64_Dyn) <= n; k += sizeof(Elf64_Dyn)) {
            Elf64_Dyn d;
            memcpy(&d, dyn + k, sizeof d);
            if (d.d_tag == DT_NULL)
                break;
            if (d.d_tag == DT_NEEDED && d.d_un.d_val < m && memchr(str + d.d_un.d_val, 0, m - d.d_un.d_val)) {
                int r = f((const char *)str + d.d_un.d_val, arg);
                if (r)
                    return r;
            }
        }
    }
    return 0;
}

/* ---- separate debugging information ---------------------------------------------- */

/* The GNU build id (the bytes of the NT_GNU_BUILD_ID note); its length, 0 if none. */
static size_t build_id(const ws_elf *e, const unsigned char **id)
{
    const Elf64_Shdr *s = ws_elf_section(e, ".note.gnu.build-id", SHT_NOTE);
    size_t n = 0;
    const unsigned char *p = ws_elf_data(e, s, &n);
    while (p && n >= 12) {
        uint32_t namesz, descsz, type;
        memcpy(&namesz, p, 4);
        memcpy(&descsz, p + 4, 4);
        memcpy(&type, p + 8, 4);
        size_t name_len = (namesz + 3u) & ~3u, desc_len = (descsz + 3u) & ~3u;
        if (12 + (uint64_t)name_len + desc_len > n)
            break;
        if (type == NT_GNU_BUILD_ID && namesz == 4 && memcmp(p + 12, "GNU", 4) == 0 && descsz > 0) {
            *id = p + 12 + name_len;
            return descsz;
        }
        p += 12 + name_len + desc_len;
        n -= 12 + name_len + desc_len;
    }
    return 0;
}

static uint32_t crc32_of(const unsigned char *p, size_t n)
{
    uint32_t table[256];
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
        table[i] = c;
    }
    uint32_t crc = 0xffffffffu;
    for (size_t i = 0; i < n; i++)
        crc = table[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
    return crc ^ 0xffffffffu;
}

/* Whether `candidate` is the debugging information of `e`: the same build
 * id, or (debuglink) the CRC the link gives; and a symbol table. */
static int matches(const ws_elf *e, const char *candidate, const unsigned char *id, size_t id_len, int check_crc,
                   uint32_t crc)
{
    ws_elf d;
    if (ws_elf_open(&d, candidate) != 0)
        return 0;
    int ok = ws_elf_section(&d, ".symtab", SHT_SYMTAB) != NULL;
    if (ok && id_len) {
        const unsigned char *theirs;
        size_t n = build_id(&d, &theirs);
        ok = n == id_len && memcmp(theirs, id, n) == 0;
    } else if (ok && check_crc) {
        ok = crc32_of(d.map, d.size) == crc;
    }
    ws_elf_close(&d);
    (void)e;
    return ok;
}

char *ws_elf_debug_file(const ws_elf *e, const char *path, const char *dirs)
{
    char candidate[4096];
    const unsigned char *id = NULL;
    size_t id_len = build_id(e, &id);
    const char *d = dirs;
    while (id_len > 1 && d && *d) {
        size_t len = strcspn(d, ":");
        int n = snprintf(candidate, sizeof candidate, "%.*s/.build-id/%02x/", (int)len, d, id[0]);
        for (size_t i = 1; i < id_len && n > 0 && (size_t)n < sizeof candidate - 8; i++)
            n += snprintf(candidate + n, sizeof candidate - (size_t)n, "%02x", id[i]);
        if (n > 0 && (size_t)n < sizeof candidate - 8) {
            snprintf(candidate + n, sizeof candidate - (size_t)n, ".debug");
            if (matches(e, candidate, id, id_len, 0, 0))
                return strdup(candidate);
        }
        d += len + (d[len] == ':');
    }
    size_t n = 0;
    const unsigned char *link = ws_elf_data(e, ws_elf_section(e, ".gnu_debuglink", 0), &n);
    const unsigned char *nul = link ? memchr(link, 0, n) : NULL;
    if (!nul || nul == link)
        return NULL;
    size_t off = ((size_t)(nul - link) + 4) & ~(size_t)3;
    uint32_t crc = 0;
    if (off + 4 > n)
        return NULL;
    memcpy(&crc, link + off, 4);
    const char *name = (const char *)link;
    const char *slash = strrchr(path, '/');
    int dir_len = slash ? (int)(slash - path) : 0;
    for (int k = 0;; k++) {
        if (k == 0)
            snprintf(candidate, sizeof candidate, "%.*s/%s", dir_len, path, name);
        else if (k == 1)
            snprintf(candidate, sizeof candidate, "%.*s/.debug/%s", dir_len, path, name);
        else {
            /* DIR/<the file's directory>/name, for each debug directory */
            const char *p = dirs;
            for (int j = 2; p && *p && j < k; j++) {
                p += strcspn(p, ":");
                p += *p == ':';
            }
            if (!p || !*p)
                break;
            snprintf(candidate, sizeof candidate, "%.*s%.*s/%s", (int)strcspn(p, ":"), p, dir_len, path, name);
        }
        if (strcmp(candidate, path) != 0 && matches(e, candidate, NULL, 0, 1, crc))
            return strdup(candidate);
    }
    return NULL;
}

/* ---- function starts from the unwind tables --------------------------------------- */

static int by_address(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

size_t ws_elf_function_starts(const ws_elf *e, uint64_t **starts)
{
    *starts = NULL;
    const Elf64_Ehdr *eh = e->eh;
    if (!eh->e_phoff || eh->e_phoff > e->size || (uint64_t)eh->e_phnum * sizeof(Elf64_Phdr) > e->size - eh->e_phoff)
        return 0;
    const Elf64_Phdr *ph = (const Elf64_Phdr *)(e->map + eh->e_phoff);
    for (int i = 0; i < eh->e_phnum; i++) {
        if (ph[i].p_type != PT_GNU_EH_FRAME || ph[i].p_offset > e->size || ph[i].p_filesz > e->size - ph[i].p_offset ||
            ph[i].p_filesz < 12)
            continue;
        const unsigned char *h = e->map + ph[i].p_offset;
        /* version 1, eh_frame_ptr as pcrel|sdata4, fde_count as udata4,
         * the table as datarel|sdata4: what every linker writes */
        if (h[0] != 1 || h[1] != 0x1b || h[2] != 0x03 || h[3] != 0x3b)
            return 0;
        uint32_t count;
        memcpy(&count, h + 8, 4);
        if (count == 0 || (uint64_t)count * 8 > ph[i].p_filesz - 12)
            return 0;
        uint64_t *out = malloc((size_t)count * sizeof *out);
        if (!out)
            return 0;
        for (uint32_t k = 0; k < count; k++) {
            int32_t rel;
            memcpy(&rel, h + 12 + (size_t)k * 8, 4);
            out[k] = ph[i].p_vaddr + (uint64_t)(int64_t)rel;
        }
        qsort(out, count, sizeof *out, by_address);
        *starts = out;
        return count;
    }
    return 0;
}
