/* Checks of OTF2 files against their size before libotf2 reads them.
 *
 * libotf2 trusts the counts and the framing it reads: a truncated
 * definition file makes it deliver garbage records ("string 0 is defined
 * twice"), a damaged anchor announcing billions of properties makes it
 * reserve tens of gigabytes and spend seconds before it fails.  These
 * checks read only the file's size and a few bytes and say plainly what
 * is wrong.
 *
 * The layout they rely on (uncompressed POSIX substrate, as Score-P and
 * libotf2 2.x/3.x write it):
 *   - every definition and event file starts with a chunk header record
 *     (0x03) followed by the endianness mark (0x42 little, 0x23 big) and
 *     ends with the end-of-file record (0x02) and the end-of-buffer
 *     record (0x01);
 *   - the anchor starts the same way, then "OTF2\0", five bytes of
 *     versions, two 8-byte chunk sizes, substrate and compression (one
 *     byte each), two 8-byte counts (locations, global definitions),
 *     three strings (machine, creator, description), a 4-byte property
 *     count and that many name/value string pairs, then at least the
 *     8-byte trace id and two 4-byte counts (snapshots, thumbnails). */
#include "otf2_check.h"

#include "../common/alloc.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

enum {
    CHUNK_HEADER = 0x03,
    LITTLE_ENDIAN_MARK = 0x42,
    BIG_ENDIAN_MARK = 0x23,
    END_OF_FILE = 0x02,
    END_OF_BUFFER = 0x01,
    ANCHOR_STRINGS_AT = 46,     /* after the fixed fields listed above */
    ANCHOR_TAIL_BYTES = 16,     /* trace id, snapshots, thumbnails */
    ANCHOR_MAX_BYTES = 1 << 26, /* far beyond any real anchor */
};

static int read_all(const char *path, unsigned char **data, size_t *size, size_t limit, ws_error *err)
{
    *data = NULL;
    *size = 0;
    FILE *f = fopen(path, "rb");
    if (!f)
        return ws_error_set(err, WS_ERR_IO, "%s: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fileno(f), &st) != 0) {
        int e = errno;
        fclose(f);
        return ws_error_set(err, WS_ERR_IO, "%s: %s", path, strerror(e));
    }
    if (st.st_size < 0 || (unsigned long long)st.st_size > limit) {
        fclose(f);
        return ws_error_set(err, WS_ERR_FORMAT, "%s: not an OTF2 anchor file (%lld bytes; anchors are small)", path,
                            (long long)st.st_size);
    }
    size_t n = (size_t)st.st_size;
    unsigned char *buf = ws_malloc(n ? n : 1);
    if (!buf) {
        fclose(f);
        return ws_error_nomem(err, "anchor file");
    }
    size_t got = fread(buf, 1, n, f);
    fclose(f);
    if (got != n) {
        free(buf);
        return ws_error_set(err, WS_ERR_IO, "%s: read %zu of %zu bytes", path, got, n);
    }
    *data = buf;
    *size = n;
    return WS_OK;
}

/* Position after the NUL-terminated string at `pos`, or 0 when it runs past the end. */
static size_t skip_string(const unsigned char *data, size_t size, size_t pos)
{
    if (pos >= size)
        return 0;
    const unsigned char *nul = memchr(data + pos, '\0', size - pos);
    return nul ? (size_t)(nul - data) + 1 : 0;
}

int ws_otf2_check_anchor(const char *anchor, ws_error *err)
{
    unsigned char *data;
    size_t size;
    int rc = read_all(anchor, &data, &size, ANCHOR_MAX_BYTES, err);
    if (rc)
        return rc;
    if (size < 7 || data[0] != CHUNK_HEADER || (data[1] != LITTLE_ENDIAN_MARK && data[1] != BIG_ENDIAN_MARK) ||
        memcmp(data + 2, "OTF2", 4) != 0) {
        free(data);
        return ws_error_set(err, WS_ERR_FORMAT, "%s: not an OTF2 anchor file", anchor);
    }
    size_t pos = ANCHOR_STRINGS_AT;
    for (int i = 0; i < 3 && pos; i++)
        pos = skip_string(data, size, pos);
    if (!pos || size - pos < 4) {
        free(data);
        return ws_error_set(err, WS_ERR_FORMAT, "%s: the OTF2 anchor file is truncated (%zu bytes)", anchor, size);
    }
    const unsigned char *c = data + pos;
    uint32_t properties = data[1] == LITTLE_ENDIAN_MARK
                              ? (uint32_t)c[0] | (uint32_t)c[1] << 8 | (uint32_t)c[2] << 16 | (uint32_t)c[3] << 24
                              : (uint32_t)c[3] | (uint32_t)c[2] << 8 | (uint32_t)c[1] << 16 | (uint32_t)c[0] << 24;
    pos += 4;
    /* every property is two strings of at least their terminating NUL */
    size_t room = size - pos;
    if ((uint64_t)properties * 2 + ANCHOR_TAIL_BYTES > room) {
        free(data);
        return ws_error_set(err, WS_ERR_FORMAT,
                            "%s: the OTF2 anchor file is damaged: it announces %lu properties, but only %zu bytes "
                            "follow (each property takes at least 2)",
                            anchor, (unsigned long)properties, room);
    }
    for (uint32_t i = 0; i < 2 * properties && pos; i++)
        pos = skip_string(data, size, pos);
    if (!pos || size - pos < ANCHOR_TAIL_BYTES) {
        free(data);
        return ws_error_set(err, WS_ERR_FORMAT,
                            "%s: the OTF2 anchor file is damaged or truncated: its %lu properties run past its end "
                            "(%zu bytes)",
                            anchor, (unsigned long)properties, size);
    }
    free(data);
    return WS_OK;
}

int ws_otf2_check_buffer_file(const char *path, const char *what, ws_error *err)
{
    uint64_t size;
    return ws_otf2_check_buffer_file_size(path, what, &size, err);
}

int ws_otf2_check_buffer_file_size(const char *path, const char *what, uint64_t *size_out, ws_error *err)
{
    /* plain descriptors and pread: no stdio buffer, five system calls */
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return ws_error_set(err, WS_ERR_IO, "%s: %s: %s", path, what, strerror(errno));
    unsigned char head[2] = {0, 0}, tail[2] = {0, 0};
    struct stat st;
    int ok = fstat(fd, &st) == 0;
    long long size = ok ? (long long)st.st_size : -1;
    if (ok && size >= 4)
        ok = pread(fd, head, 2, 0) == 2 && pread(fd, tail, 2, (off_t)(size - 2)) == 2;
    int e = ok ? 0 : errno ? errno : EIO;
    close(fd);
    if (!ok)
        return ws_error_set(err, WS_ERR_IO, "%s: %s: %s", path, what, strerror(e));
    if (size < 4)
        return ws_error_set(err, WS_ERR_FORMAT, "%s: %s is truncated (%lld bytes)", path, what, size);
    if (head[0] != CHUNK_HEADER || (head[1] != LITTLE_ENDIAN_MARK && head[1] != BIG_ENDIAN_MARK))
        return ws_error_set(err, WS_ERR_FORMAT,
                            "%s: %s is damaged: it does not start with an OTF2 chunk header (found bytes %02x %02x; "
                            "overwritten or not an OTF2 file)",
                            path, what, head[0], head[1]);
    if (tail[0] != END_OF_FILE || tail[1] != END_OF_BUFFER)
        return ws_error_set(err, WS_ERR_FORMAT,
                            "%s: %s is truncated: it does not end with OTF2's end-of-file mark (%lld bytes; the "
                            "measurement or a copy was cut short)",
                            path, what, size);
    *size_out = (uint64_t)size;
    return WS_OK;
}
