/* Checks of OTF2 files against their size before libotf2 reads them. */
#ifndef WS_TRACE_OTF2_CHECK_H
#define WS_TRACE_OTF2_CHECK_H

#include <stddef.h>
#include <stdint.h>

#include "../common/error.h"

/* The anchor file: its magic, and that the property count it announces
 * fits its size (libotf2 would reserve memory for that count first). */
int ws_otf2_check_anchor(const char *anchor, ws_error *err);

/* A definition or event file (`what`, e.g. "event file of location 3"):
 * that it starts with an OTF2 chunk header and ends with OTF2's
 * end-of-file mark, i.e. is neither overwritten nor truncated. */
int ws_otf2_check_buffer_file(const char *path, const char *what, ws_error *err);

/* The same check, giving the file's size in bytes (*size) when it passes. */
int ws_otf2_check_buffer_file_size(const char *path, const char *what, uint64_t *size, ws_error *err);

/* Memory an event file check reads the last chunk into, kept from one
 * file to the next ({NULL, 0} to start; ws_otf2_check_buffer_free). */
typedef struct ws_otf2_check_buffer {
    unsigned char *data;
    size_t cap;
} ws_otf2_check_buffer;

/* An event file, before libotf2 reads it: the buffer-file check above,
 * and that the records of its last chunk (of `chunk_size` bytes, the
 * archive's event chunk size; 0 when unknown skips this) end exactly at
 * its end-of-file mark.  libotf2 reads a chunk into a buffer of the full
 * chunk size and decodes a record cut short by a truncation into whatever
 * that buffer held before: what it delivers then depends on the memory it
 * was given (an error, or garbage events read without one).  This check
 * reports the truncation itself, the same every time. */
int ws_otf2_check_event_file(const char *path, const char *what, uint64_t chunk_size, ws_otf2_check_buffer *buf,
                             ws_error *err);
void ws_otf2_check_buffer_free(ws_otf2_check_buffer *buf);

/* Size of a buffer file that passes the check above and holds no record:
 * one chunk header (type, endianness mark and two 8-byte record numbers)
 * and the end-of-file and end-of-buffer marks. */
#define WS_OTF2_EMPTY_BUFFER_FILE_BYTES 20u

#endif
