/* One ELF file mapped for reading (elf_file.c): its sections, the
 * libraries it needs, where its separate debugging information is, and
 * the start addresses of its functions from the unwind tables. */
#ifndef WS_PMPI_ELF_FILE_H
#define WS_PMPI_ELF_FILE_H

#include <elf.h>
#include <stddef.h>
#include <stdint.h>

typedef struct ws_elf {
    unsigned char *map;
    size_t size;
    const Elf64_Ehdr *eh;
    const Elf64_Shdr *sh; /* NULL when the file has no section headers */
} ws_elf;

/* Maps a 64-bit ELF file; 0 or -1. */
int ws_elf_open(ws_elf *e, const char *path);
void ws_elf_close(ws_elf *e);
/* Section header `i`'s contents if it lies in the file (not SHT_NOBITS). */
const unsigned char *ws_elf_data(const ws_elf *e, const Elf64_Shdr *sh, size_t *len);
/* The section of that name and type (0: any type), NULL if absent. */
const Elf64_Shdr *ws_elf_section(const ws_elf *e, const char *name, uint32_t type);
/* Calls f(name, arg) for each DT_NEEDED library; stops when f returns nonzero and returns that. */
int ws_elf_each_needed(const ws_elf *e, int (*f)(const char *name, void *arg), void *arg);
/* The file's separate debugging information, if installed: by build id
 * under each debug directory (DIR/.build-id/xx/yyyy.debug), then by GNU
 * debuglink (next to the file, in its .debug/, in DIR/<its directory>/).
 * `dirs`: colon-separated debug directories.  Returns a malloc'ed path or NULL. */
char *ws_elf_debug_file(const ws_elf *e, const char *path, const char *dirs);
/* The start addresses (link-time) of the functions .eh_frame_hdr's search
 * table lists, sorted; malloc'ed into *starts.  Returns their number. */
size_t ws_elf_function_starts(const ws_elf *e, uint64_t **starts);

#endif
