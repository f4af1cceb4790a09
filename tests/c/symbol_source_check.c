/* ws_symbol_source (csrc/pmpi/symtab.c) on this program's own code and on
 * a shared library's (both built and run by tests/test_pmpi_dwarf_line.py,
 * with the interposition library's symbol tables and line decoder, not
 * its MPI wrappers).  Prints "NAME FILE:LINE" or "NAME ??" for: a function of the
 * program, the return address of a call in it (looked up as address - 1),
 * a function of the shared library, the library's function again (its
 * line information is loaded once) and a variable (no code: no line). */
#include <stdint.h>
#include <stdio.h>

#include "pmpi/pmpi.h"

ws_pmpi ws_pmpi_g;

int work_probe(int x); /* in the shared library */

__attribute__((noinline)) static void *return_address(void)
{
    return __builtin_return_address(0);
}

__attribute__((noinline)) int probe(int x)
{ /* @probe */
    return x * 2 + 1;
}

static void show(const char *name, const void *addr)
{
    char file[64];
    unsigned line = 0;
    if (ws_symbol_source(addr, file, sizeof file, &line) == 0)
        printf("%s %s:%u\n", name, file, line);
    else
        printf("%s ??\n", name);
}

int main(int argc, char **argv)
{
    (void)argv;
    void *ra = return_address(); /* @call */
    show("probe", (const void *)(uintptr_t)probe);
    show("call", (const char *)ra - 1);
    show("work_probe", (const void *)(uintptr_t)work_probe);
    show("work_probe_again", (const void *)(uintptr_t)work_probe);
    show("variable", &ws_pmpi_g);
    return probe(argc) + work_probe(argc) > 0 ? 0 : 1;
}
