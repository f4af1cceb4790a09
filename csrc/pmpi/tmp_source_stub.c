#include <stddef.h>
int ws_symbol_source(const void *addr, char *file, size_t size, unsigned *line);
int ws_symbol_source(const void *addr, char *file, size_t size, unsigned *line)
{
    (void)addr; (void)file; (void)size; (void)line;
    return -1;
}
