/* The side tables of the location being read (otf2_events.c): rows the
 * event callbacks append to, and the store's columns they become. */
#ifndef WS_TRACE_OTF2_ROWS_H
#define WS_TRACE_OTF2_ROWS_H

#include <stddef.h>
#include <stdint.h>

#include "trace.h"

/* The side tables (messages, requests, collectives, thread events) of the location being
 * read are collected in these rows, which one ws_otf2_load_events call
 * reuses for all its locations; when a location is complete they are
 * copied into columns of exactly the right size.  So the store's arrays
 * are never grown or shrunk (no realloc copies, no heap holes), and the
 * rows stay allocated (and their pages resident) from one location to the
 * next. */
typedef struct side_rows {
    size_t cap_msg, cap_req, cap_coll, cap_thr;
    uint32_t *msg_event;
    uint32_t *msg_peer;
    uint32_t *msg_comm;
    uint32_t *msg_tag;
    uint64_t *msg_bytes;
    uint32_t *req_event;
    uint64_t *req_id;
    uint32_t *coll_event;
    uint32_t *coll_comm;
    uint32_t *coll_root;
    uint8_t *coll_op;
    uint64_t *coll_sent;
    uint64_t *coll_received;
    uint32_t *thr_event;
    uint32_t *thr_comm;
    uint8_t *thr_model;
    uint64_t *thr_a;
    uint64_t *thr_b;
} side_rows;

/* A location announcing at least this many records gets its side tables
 * written in place instead: every column is reserved for that many rows
 * (an upper bound: a row takes a record; pages never written cost
 * nothing) and shrunk in place when the location is complete, so that
 * neither the rows' pages nor a copy is paid for big locations. */
#define DIRECT_ROWS_MIN (1u << 17)
/* and at most this many (65 bytes of address space per record, transient;
 * a damaged definition announcing more takes the rows) */
#define DIRECT_ROWS_MAX (1u << 26)

void ws_rows_free(side_rows *r);

/* Reserves every column of `r` (empty) for n rows; -1 (and r empty) if
 * memory runs out. */
int ws_rows_reserve(side_rows *r, size_t n);

/* Double the capacity of one group of columns; 0 or -1 (out of memory:
 * the columns grown before stay valid). */
int ws_rows_grow_messages(side_rows *r);
int ws_rows_grow_requests(side_rows *r);
int ws_rows_grow_collectives(side_rows *r);
int ws_rows_grow_threads(side_rows *r);

/* Completes the columns of a finished location (ev's time, kind and ref
 * were reserved for `cap` events): with `direct`, r's columns were the
 * location's own and are shrunk and handed over (r is left empty);
 * otherwise they are copied into exact-size columns.  0 or -1 (out of
 * memory). */
int ws_rows_finish_columns(ws_events *ev, uint64_t cap, side_rows *r, int direct);

#endif
