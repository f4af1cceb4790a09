/* The records between analysis threads or processes (see records.h). */
#include "records.h"

#include <string.h>

#include "../common/util.h"

void ws_record_p2p_head(unsigned char head[WS_RECORD_P2P_HEAD], uint32_t dst, int channel, uint64_t id, size_t size)
{
    uint32_t ch = (uint32_t)channel;
    uint64_t n = size;
    memcpy(head, &dst, 4);
    memcpy(head + 4, &ch, 4);
    memcpy(head + 8, &id, 8);
    memcpy(head + 16, &n, 8);
}

void ws_record_coll_head(unsigned char head[WS_RECORD_COLL_HEAD], uint64_t key, uint32_t n_members,
                         uint32_t expected, uint32_t member, size_t cache_size, size_t size)
{
    uint64_t cs = cache_size, n = size;
    memcpy(head, &key, 8);
    memcpy(head + 8, &n_members, 4);
    memcpy(head + 12, &expected, 4);
    memcpy(head + 16, &member, 4);
    memcpy(head + 20, &cs, 8);
    memcpy(head + 28, &n, 8);
}

int ws_record_read(const unsigned char **p, const unsigned char *end, void *out, size_t n)
{
    if ((size_t)(end - *p) < n)
        return -1;
    memcpy(out, *p, n);
    *p += n;
    return 0;
}

int ws_record_store(ws_transport *local, uint8_t type, const unsigned char **p, const unsigned char *end, int code,
                    const char *from, ws_error *err)
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
        uint32_t n_members, expected, member;
        if (ws_record_read(p, end, &key, 8) || ws_record_read(p, end, &n_members, 4) ||
            ws_record_read(p, end, &expected, 4) || ws_record_read(p, end, &member, 4) ||
            ws_record_read(p, end, &cache_size, 8) || ws_record_read(p, end, &n, 8) || (uint64_t)(end - *p) < n)
            return ws_error_set(err, code, "malformed record %s", from);
        rc = local->ops->coll_post(local, key, n_members, expected, 0, member, WS_NONE32, *p, (size_t)n,
                                   (size_t)cache_size, err);
    } else {
        return ws_error_set(err, code, "unknown record type %u %s", (unsigned)type, from);
    }
    if (rc)
        return rc;
    *p += n;
    return WS_OK;
}
