/* Source lines of code addresses from DWARF's line-number program
 * (dwarf_line.c).  A header of its own, without MPI, so that a test can
 * build the decoder alone. */
#ifndef WS_PMPI_DWARF_LINE_H
#define WS_PMPI_DWARF_LINE_H

#include <stddef.h>
#include <stdint.h>

/* The source file (base name) and line of link-time address `addr` from
   a .debug_line section (with .debug_line_str / .debug_str for DWARF 5
   string forms, NULL where absent): 0 when found. */
int ws_dwarf_line(const unsigned char *line, size_t line_size, const unsigned char *line_str, size_t line_str_size,
                  const unsigned char *str, size_t str_size, uint64_t addr, char *file, size_t file_size,
                  unsigned *lineno);

#endif
