/* The records by which the threaded and the MPI transport carry a payload
 * or a collective contribution to the thread or process that owns its
 * destination, whose local transport then stores it.
 *
 * A record is a type byte (WS_RECORD_*), between processes the sender's
 * epoch (8 bytes), then the head of its type and the data:
 *   point-to-point: destination u32, channel u32, message id u64, size u64;
 *   collective:     key u64, members u32, expected u32, member u32,
 *                   cache size u64, size u64.
 * Both ends run the same build, so fields are in the host's byte order. */
#ifndef WS_REPLAY_RECORDS_H
#define WS_REPLAY_RECORDS_H

#include <stddef.h>
#include <stdint.h>

#include "transport.h"

enum { WS_RECORD_P2P = 1, WS_RECORD_COLL = 2 };
enum { WS_RECORD_P2P_HEAD = 4 + 4 + 8 + 8, WS_RECORD_COLL_HEAD = 8 + 4 + 4 + 4 + 8 + 8 };

/* The head of a point-to-point record (what follows its type and epoch). */
void ws_record_p2p_head(unsigned char head[WS_RECORD_P2P_HEAD], uint32_t dst, int channel, uint64_t id, size_t size);

/* The head of a collective record. */
void ws_record_coll_head(unsigned char head[WS_RECORD_COLL_HEAD], uint64_t key, uint32_t n_members,
                         uint32_t expected, uint32_t member, size_t cache_size, size_t size);

/* Copies the next n bytes at *p to out and moves past them: 0, or -1 when
 * fewer than n remain before `end`. */
int ws_record_read(const unsigned char **p, const unsigned char *end, void *out, size_t n);

/* Stores the record of type `type` whose head begins at *p in the local
 * transport `local`, and moves *p past its data.  A record cut short or of
 * an unknown type is an error of class `code` that says where it came from
 * (`from`, e.g. "between analysis threads"). */
int ws_record_store(ws_transport *local, uint8_t type, const unsigned char **p, const unsigned char *end, int code,
                    const char *from, ws_error *err);

#endif
