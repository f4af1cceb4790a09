/* Checks of OTF2 files against their size before libotf2 reads them.
 *
 * libotf2 trusts the counts and the framing it reads: a truncated
 * definition file makes it deliver garbage records ("string 0 is defined
 * twice"), a damaged anchor announcing billions of properties makes it
 * reserve tens of gigabytes and spend seconds before it fails.  These
 * checks read the file's size and a few bytes (of an event file, its last
 * chunk, whose records they walk) and say plainly what is wrong.
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
 *     8-byte trace id and two 4-byte counts (snapshots, thumbnails);
 *   - an event file is a sequence of chunks of the archive's event chunk
 *     size, the last one cut to what it holds.  Every chunk starts with
 *     its 18-byte header (the header record, the endianness mark, the
 *     numbers of its first and last record); then come timestamp records
 *     (0x05 and 8 bytes) and records that carry their length (a type of
 *     6 or above, a length byte, or 0xff and 8 bytes of length, then that
 *     many bytes); the last chunk ends with the end-of-file and
 *     end-of-buffer records. */
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
    TIMESTAMP = 0x05,
    FIRST_SIZED_RECORD = 0x06, /* attribute lists, then the events */
    CHUNK_HEADER_BYTES = 18,
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

/* The head (first two bytes) and tail (last two) of a buffer file of
 * `size` bytes against OTF2's chunk header and end-of-file mark. */
static int check_head_tail(const char *path, const char *what, long long size, const unsigned char head[2],
                           const unsigned char tail[2], ws_error *err)
{
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
    return WS_OK;
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
    int rc = check_head_tail(path, what, size, head, tail, err);
    if (rc == WS_OK)
        *size_out = (uint64_t)size;
    return rc;
}

/* Reads `n` bytes at `offset` of fd into buf: 0, or errno. */
static int pread_all(int fd, unsigned char *buf, size_t n, uint64_t offset)
{
    while (n) {
        ssize_t got = pread(fd, buf, n, (off_t)offset);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            return got < 0 ? errno : EIO;
        buf += got;
        n -= (size_t)got;
        offset += (uint64_t)got;
    }
    return 0;
}

static uint64_t read_u64(const unsigned char *p, int big_endian)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v |= (uint64_t)p[big_endian ? 7 - i : i] << (8 * i);
    return v;
}

/* The records of an event file's last chunk, data[0, n) (from byte
 * `start` of a file of `size` bytes, ending with the end-of-file mark):
 * that each one ends before that mark and the last one exactly at it. */
static int walk_last_chunk(const char *path, const char *what, const unsigned char *data, size_t n, uint64_t start,
                           uint64_t size, ws_error *err)
{
    if (n < CHUNK_HEADER_BYTES + 2 || data[0] != CHUNK_HEADER ||
        (data[1] != LITTLE_ENDIAN_MARK && data[1] != BIG_ENDIAN_MARK))
        return ws_error_set(err, WS_ERR_FORMAT,
                            "%s: %s is damaged: its last chunk (from byte %llu) does not start with an OTF2 chunk "
                            "header",
                            path, what, (unsigned long long)start);
    const int big = data[1] == BIG_ENDIAN_MARK;
    const size_t end = n - 2; /* where the end-of-file mark lies */
    size_t pos = CHUNK_HEADER_BYTES;
    while (pos < end) {
        size_t at = pos;
        unsigned char type = data[pos++];
        uint64_t length;
        if (type == TIMESTAMP) {
            length = 8;
        } else if (type >= FIRST_SIZED_RECORD) {
            if (pos >= end)
                length = 1; /* its length byte is missing */
            else if (data[pos] != 0xff)
                length = data[pos++];
            else if (end - pos < 9)
                length = 9;
            else {
                length = read_u64(data + pos + 1, big);
                pos += 9;
            }
        } else {
            return ws_error_set(err, WS_ERR_FORMAT,
                                "%s: %s is damaged: byte %llu holds no OTF2 event record (type %u)", path, what,
                                (unsigned long long)(start + at), (unsigned)type);
        }
        if (length > end - pos)
            return ws_error_set(err, WS_ERR_FORMAT,
                                "%s: %s is truncated: its record at byte %llu runs past the end of the data (%llu "
                                "bytes; the measurement or a copy was cut short)",
                                path, what, (unsigned long long)(start + at), (unsigned long long)size);
        pos += (size_t)length;
    }
    return WS_OK;
}

int ws_otf2_check_event_file(const char *path, const char *what, uint64_t chunk_size, ws_otf2_check_buffer *buf,
                             ws_error *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return ws_error_set(err, WS_ERR_IO, "%s: %s: %s", path, what, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return ws_error_set(err, WS_ERR_IO, "%s: %s: %s", path, what, strerror(e));
    }
    long long ssize = (long long)st.st_size;
    unsigned char none[2] = {0, 0};
    if (ssize < 4) {
        close(fd);
        return check_head_tail(path, what, ssize, none, none, err);
    }
    uint64_t size = (uint64_t)ssize;
    /* the last chunk; without a known chunk size, the last two bytes */
    uint64_t start = chunk_size >= CHUNK_HEADER_BYTES ? (size - 1) / chunk_size * chunk_size : size - 2;
    size_t n = (size_t)(size - start);
    if (buf->cap < n) {
        unsigned char *p = ws_realloc(buf->data, n);
        if (!p) {
            close(fd);
            return ws_error_nomem(err, "event file check");
        }
        buf->data = p;
        buf->cap = n;
    }
    unsigned char head[2];
    int e = pread_all(fd, buf->data, n, start);
    if (!e && start == 0)
        memcpy(head, buf->data, 2);
    else if (!e)
        e = pread_all(fd, head, 2, 0);
    close(fd);
    if (e)
        return ws_error_set(err, WS_ERR_IO, "%s: %s: %s", path, what, strerror(e));
    int rc = check_head_tail(path, what, ssize, head, buf->data + n - 2, err);
    if (rc == WS_OK && chunk_size >= CHUNK_HEADER_BYTES)
        rc = walk_last_chunk(path, what, buf->data, n, start, size, err);
    return rc;
}

void ws_otf2_check_buffer_free(ws_otf2_check_buffer *buf)
{
    free(buf->data);
    buf->data = NULL;
    buf->cap = 0;
}
