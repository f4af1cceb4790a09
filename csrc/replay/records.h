/* The records by which the threaded and the MPI transport carry a payload
 * or a collective contribution to the thread or process that owns its
 * destination, whose local transport then stores it.
 *
 * A record is a type byte (WS_RECORD_*), between processes the sender's
 * epoch (8 bytes), then the head of its type and the data:
 *   point-to-point: destination u32, channel u32, message id u64, size u64;
 *   collective:     key u64, members u32, member u32,
 *                   cache size u64, size u64.
 * Both ends run the same build, so fields are in the host's byte order.
 * Inline: every record between threads goes through these. */
#ifndef WS_REPLAY_RECORDS_H
#define WS_REPLAY_RECORDS_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "../common/util.h"
#include "transport.h"

enum { WS_RECORD_P2P = 1, WS_RECORD_COLL = 2 };
enum { WS_RECORD_P2P_HEAD = 4 + 4 + 8 + 8, WS_RECORD_COLL_HEAD = 8 + 4 + 4 + 8 + 8 };

/* The head of a point-to-point record (what follows its type and epoch). */
static inline void ws_record_p2p_head(unsigned char head[WS_RECORD_P2P_HEAD], uint32_t dst, int channel, uint64_t id,
                                      size_t size)
{
    uint32_t ch = (uint32_t)channel;
    uint64_t n = size;
    memcpy(head, &dst, 4);
    memcpy(head + 4, &ch, 4);
    memcpy(head + 8, &id, 8);
    memcpy(head + 16, &n, 8);
}

/* The head of a collective record. */
static inline void ws_record_coll_head(unsigned char head[WS_RECORD_COLL_HEAD], uint64_t key, uint32_t n_members,
                                       uint32_t member, size_t cache_size, size_t size)
{
    uint64_t cs = cache_size, n = size;
    memcpy(head, &key, 8);
    memcpy(head + 8, &n_members, 4);
    memcpy(head + 12, &member, 4);
    memcpy(head + 16, &cs, 8);
    memcpy(head + 24, &n, 8);
}

/* Copies the next n bytes at *p to out and moves past them: 0, or -1 when
 * fewer than n remain before `end`. */
static inline int ws_record_read(const unsigned char **p, const unsigned char *end, void *out, size_t n)
{
    if ((size_t)(end - *p) < n)
        return -1;
    memcpy(out, *p, n);
    *p += n;
    return 0;
}

/* Stores the record of type `type` whose head begins at *p in the local
 * transport `local`, and moves *p past its data.  A record cut short or of
 * an unknown type is an error of class `code` that says where it came from
 * (`from`, e.g. "between analysis threads"). */
static inline int ws_record_store(ws_transport *local, uint8_t type, const unsigned char **p,
                                  const unsigned char *end, int code, const char *from, ws_error *err)
{
    uint64_t n;
    int rc;
    if (type == WS_RECORD_P2P) {
        uint32_t dst, ch;
        uint64_t id;
        if (ws_record_read(p, end, &dst, 4) || ws_record_read(p, end, &ch, 4) || ws_record_read(p, end, &id, 8) ||
            ws_record_read(p, end, &n, 8) || (uint64_t)(end - *p) < n)
            return ws_error_set(err, code, "malformed record %s", from);
        rc = local->ops->post(local, dst, id, (int)ch, *p, (size_t)n, err);
    } else if (type == WS_RECORD_COLL) {
        uint64_t key, cache_size;
        uint32_t n_members, member;
        if (ws_record_read(p, end, &key, 8) || ws_record_read(p, end, &n_members, 4) ||
            ws_record_read(p, end, &member, 4) ||
            ws_record_read(p, end, &cache_size, 8) || ws_record_read(p, end, &n, 8) || (uint64_t)(end - *p) < n)
            return ws_error_set(err, code, "malformed record %s", from);
        rc = local->ops->coll_post(local, key, n_members, 0, member, WS_NONE32, *p, (size_t)n,
                                   (size_t)cache_size, err);
    } else {
        return ws_error_set(err, code, "unknown record type %u %s", (unsigned)type, from);
    }
    if (rc)
        return rc;
    *p += n;
    return WS_OK;
}

#endif
