/* OTF2 archive -> trace store, part 2: local definitions and the events
 * of the requested locations (ws_otf2_load_events), with the OTF2 C
 * reader API. */
#include "otf2_io.h"
#include "otf2_check.h"
#include "otf2_reader_int.h"
#include "otf2_rows.h"
#include "otf2_evt_int.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <otf2/otf2.h>

/* ---- events ------------------------------------------------------------- */

static load_scratch *scratch_new(void)
{
    load_scratch *s = ws_calloc(1, sizeof *s);
    if (s) {
        for (size_t i = 0; i < CP_MEMO_SIZE; i++)
            s->memo[i].parent = CP_MEMO_EMPTY;
        ws_map64_init(&s->team_count);
        ws_map64_init(&s->team_cp);
        s->team_master = WS_NONE32;
    }
    return s;
}

static void scratch_free(load_scratch *s)
{
    if (!s)
        return;
    ws_rows_free(&s->side);
    ws_rows_free(&s->direct);
    free(s->stack);
    free(s->stack_id);
    ws_otf2_check_buffer_free(&s->check);
    ws_otf2_thread_scratch_free(s);
    free(s);
}

static inline int lookup_region(evt_ctx *c, OTF2_RegionRef region, uint32_t *out)
{
    const ws_trace *t = c->t;
    if (t->region_lut) {
        if (region < t->region_lut_size && t->region_lut[region] != WS_NONE32) {
            *out = t->region_lut[region];
            return 0;
        }
    } else {
        uint64_t index;
        if (ws_map64_get(&t->region_ids, region, &index)) {
            *out = (uint32_t)index;
            return 0;
        }
    }
    ws_error_set(c->err, WS_ERR_FORMAT, "event %llu refers to undefined region %u", (unsigned long long)c->ev->n,
                 (unsigned)region);
    c->failed = 1;
    return -1;
}

static OTF2_CallbackCode on_enter(OTF2_LocationRef location, OTF2_TimeStamp time, uint64_t pos, void *user,
                                  OTF2_AttributeList *attributes, OTF2_RegionRef region)
{
    (void)location;
    (void)pos;
    (void)attributes;
    evt_ctx *c = user;
    load_scratch *s = c->s;
    uint32_t parent = c->depth ? s->stack[c->depth - 1] : c->base;
    cp_memo_entry *m = &s->memo[(parent * 33u + region) & (CP_MEMO_SIZE - 1)];
    uint32_t cp;
    if (m->region == region && m->parent == parent) {
        cp = m->cp;
    } else {
        uint32_t r;
        if (lookup_region(c, region, &r))
            return OTF2_CALLBACK_INTERRUPT;
        cp = ws_callpath_child(c->callpaths, parent, r);
        if (cp == WS_NONE32)
            EVT_FAIL(c, WS_ERR_NOMEM, "out of memory in the call-path tree");
        m->parent = parent;
        m->region = region;
        m->cp = cp;
    }
    if (c->depth == s->stack_cap) {
        size_t cap = s->stack_cap;
        if (ws_grow((void **)&s->stack, &cap, (size_t)c->depth + 1, sizeof *s->stack) != 0 ||
            (cap = s->stack_cap,
             ws_grow((void **)&s->stack_id, &cap, (size_t)c->depth + 1, sizeof *s->stack_id) != 0))
            EVT_FAIL(c, WS_ERR_NOMEM, "out of memory for the call stack");
        s->stack_cap = cap;
    }
    s->stack_id[c->depth] = region;
    s->stack[c->depth++] = cp;
    return push_event(c, time, WS_EV_ENTER, cp) < 0 ? OTF2_CALLBACK_INTERRUPT : OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode on_leave(OTF2_LocationRef location, OTF2_TimeStamp time, uint64_t pos, void *user,
                                  OTF2_AttributeList *attributes, OTF2_RegionRef region)
{
    (void)location;
    (void)pos;
    (void)attributes;
    evt_ctx *c = user;
    const ws_trace *t = c->t;
    uint32_t cp = c->depth ? c->s->stack[c->depth - 1] : WS_NONE32;
    /* the usual case: the record leaves the innermost open region, which
     * is a defined one; compare OTF2 ids without a region lookup */
    if (cp == WS_NONE32 || c->s->stack_id[c->depth - 1] != region) {
        uint32_t r;
        if (lookup_region(c, region, &r))
            return OTF2_CALLBACK_INTERRUPT;
        if (cp == WS_NONE32)
            EVT_FAIL(c, WS_ERR_FORMAT, "event %llu leaves region '%s' that was never entered",
                     (unsigned long long)c->ev->n, ws_trace_string(t, t->regions[r].name));
        EVT_FAIL(c, WS_ERR_FORMAT, "event %llu leaves region '%s' but '%s' is the innermost open region",
                 (unsigned long long)c->ev->n, ws_trace_string(t, t->regions[r].name),
                 ws_trace_string(t, t->regions[c->callpaths->region[cp]].name));
    }
    c->depth--;
    return push_event(c, time, WS_EV_LEAVE, cp) < 0 ? OTF2_CALLBACK_INTERRUPT : OTF2_CALLBACK_SUCCESS;
}

static int map_comm(evt_ctx *c, OTF2_CommRef comm, uint32_t *out)
{
    if (comm == c->last_comm_id) {
        *out = c->last_comm;
        return 0;
    }
    uint64_t index;
    if (!ws_map64_get(&c->t->comm_ids, comm, &index)) {
        ws_error_set(c->err, WS_ERR_FORMAT, "event %llu refers to undefined communicator %u",
                     (unsigned long long)c->ev->n, (unsigned)comm);
        c->failed = 1;
        return -1;
    }
    c->last_comm_id = comm;
    c->last_comm = (uint32_t)index;
    *out = (uint32_t)index;
    return 0;
}

static OTF2_CallbackCode push_message(evt_ctx *c, OTF2_TimeStamp time, uint8_t kind, uint32_t peer,
                                      OTF2_CommRef comm, uint32_t tag, uint64_t bytes)
{
    uint32_t m;
    if (map_comm(c, comm, &m))
        return OTF2_CALLBACK_INTERRUPT;
    const ws_comm *cm = &c->t->comms[m];
    if (!cm->is_self && peer >= cm->size)
        EVT_FAIL(c, WS_ERR_FORMAT, "event %llu: partner rank %u is outside communicator '%s' of size %u",
                 (unsigned long long)c->ev->n, (unsigned)peer, ws_trace_string(c->t, cm->name), (unsigned)cm->size);
    if (cm->is_self && peer != 0)
        EVT_FAIL(c, WS_ERR_FORMAT, "event %llu: partner rank %u on a self communicator",
                 (unsigned long long)c->ev->n, (unsigned)peer);
    ws_events *ev = c->ev;
    side_rows *rows = c->rows;
    uint64_t i = ev->n_messages;
    if (i + 1 > rows->cap_msg && ws_rows_grow_messages(rows) != 0)
        EVT_FAIL(c, WS_ERR_NOMEM, "out of memory for message records");
    int64_t e = push_event(c, time, kind, (uint32_t)i);
    if (e < 0)
        return OTF2_CALLBACK_INTERRUPT;
    rows->msg_event[i] = (uint32_t)e;
    rows->msg_peer[i] = peer;
    rows->msg_comm[i] = m;
    rows->msg_tag[i] = tag;
    rows->msg_bytes[i] = bytes;
    ev->n_messages++;
    return OTF2_CALLBACK_SUCCESS;
}

/* Records a request id; `event` is the index of an already pushed event
 * or -1 to push a new event of the given kind whose ref is the row. */
static OTF2_CallbackCode push_request(evt_ctx *c, OTF2_TimeStamp time, uint8_t kind, uint64_t request,
                                      int64_t event)
{
    ws_events *ev = c->ev;
    side_rows *rows = c->rows;
    uint64_t i = ev->n_requests;
    if (i + 1 > rows->cap_req && ws_rows_grow_requests(rows) != 0)
        EVT_FAIL(c, WS_ERR_NOMEM, "out of memory for request records");
    if (event < 0) {
        event = push_event(c, time, kind, (uint32_t)i);
        if (event < 0)
            return OTF2_CALLBACK_INTERRUPT;
    }
    rows->req_event[i] = (uint32_t)event;
    rows->req_id[i] = request;
    ev->n_requests++;
    return OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode on_send(OTF2_LocationRef l, OTF2_TimeStamp time, uint64_t pos, void *user,
                                 OTF2_AttributeList *a, uint32_t receiver, OTF2_CommRef comm, uint32_t tag,
                                 uint64_t bytes)
{
    (void)l;
    (void)pos;
    (void)a;
    return push_message(user, time, WS_EV_SEND, receiver, comm, tag, bytes);
}

static OTF2_CallbackCode on_recv(OTF2_LocationRef l, OTF2_TimeStamp time, uint64_t pos, void *user,
                                 OTF2_AttributeList *a, uint32_t sender, OTF2_CommRef comm, uint32_t tag,
                                 uint64_t bytes)
{
    (void)l;
    (void)pos;
    (void)a;
    return push_message(user, time, WS_EV_RECV, sender, comm, tag, bytes);
}

static OTF2_CallbackCode on_isend(OTF2_LocationRef l, OTF2_TimeStamp time, uint64_t pos, void *user,
                                  OTF2_AttributeList *a, uint32_t receiver, OTF2_CommRef comm, uint32_t tag,
                                  uint64_t bytes, uint64_t request)
{
    (void)l;
    (void)pos;
    (void)a;
    evt_ctx *c = user;
    OTF2_CallbackCode rc = push_message(c, time, WS_EV_ISEND, receiver, comm, tag, bytes);
    if (rc != OTF2_CALLBACK_SUCCESS)
        return rc;
    return push_request(c, time, WS_EV_ISEND, request, (int64_t)(c->ev->n - 1));
}

static OTF2_CallbackCode on_irecv(OTF2_LocationRef l, OTF2_TimeStamp time, uint64_t pos, void *user,
                                  OTF2_AttributeList *a, uint32_t sender, OTF2_CommRef comm, uint32_t tag,
                                  uint64_t bytes, uint64_t request)
{
    (void)l;
    (void)pos;
    (void)a;
    evt_ctx *c = user;
    OTF2_CallbackCode rc = push_message(c, time, WS_EV_IRECV, sender, comm, tag, bytes);
    if (rc != OTF2_CALLBACK_SUCCESS)
        return rc;
    return push_request(c, time, WS_EV_IRECV, request, (int64_t)(c->ev->n - 1));
}

#define REQUEST_CALLBACK(fn, kind)                                                                  \
    static OTF2_CallbackCode fn(OTF2_LocationRef l, OTF2_TimeStamp time, uint64_t pos, void *user, \
                                OTF2_AttributeList *a, uint64_t request)                            \
    {                                                                                               \
        (void)l;                                                                                    \
        (void)pos;                                                                                  \
        (void)a;                                                                                    \
        return push_request(user, time, kind, request, -1);                                         \
    }

REQUEST_CALLBACK(on_isend_complete, WS_EV_ISEND_COMPLETE)
REQUEST_CALLBACK(on_irecv_request, WS_EV_IRECV_REQUEST)
REQUEST_CALLBACK(on_request_test, WS_EV_REQUEST_TEST)
REQUEST_CALLBACK(on_request_cancelled, WS_EV_REQUEST_CANCELLED)

static OTF2_CallbackCode on_coll_begin(OTF2_LocationRef l, OTF2_TimeStamp time, uint64_t pos, void *user,
                                       OTF2_AttributeList *a)
{
    (void)l;
    (void)pos;
    (void)a;
    return push_event(user, time, WS_EV_COLL_BEGIN, WS_NONE32) < 0 ? OTF2_CALLBACK_INTERRUPT
                                                                  : OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode on_coll_end(OTF2_LocationRef l, OTF2_TimeStamp time, uint64_t pos, void *user,
                                     OTF2_AttributeList *a, OTF2_CollectiveOp op, OTF2_CommRef comm, uint32_t root,
                                     uint64_t sent, uint64_t received)
{
    (void)l;
    (void)pos;
    (void)a;
    evt_ctx *c = user;
    uint32_t m;
    if (map_comm(c, comm, &m))
        return OTF2_CALLBACK_INTERRUPT;
    const ws_comm *cm = &c->t->comms[m];
    if (root != OTF2_UNDEFINED_UINT32 && root >= cm->size)
        EVT_FAIL(c, WS_ERR_FORMAT, "event %llu: collective root %u is outside communicator '%s' of size %u",
                 (unsigned long long)c->ev->n, (unsigned)root, ws_trace_string(c->t, cm->name), (unsigned)cm->size);
    ws_events *ev = c->ev;
    side_rows *rows = c->rows;
    uint64_t i = ev->n_collectives;
    if (i + 1 > rows->cap_coll && ws_rows_grow_collectives(rows) != 0)
        EVT_FAIL(c, WS_ERR_NOMEM, "out of memory for collective records");
    int64_t e = push_event(c, time, WS_EV_COLL_END, (uint32_t)i);
    if (e < 0)
        return OTF2_CALLBACK_INTERRUPT;
    rows->coll_event[i] = (uint32_t)e;
    rows->coll_comm[i] = m;
    rows->coll_root[i] = (root == OTF2_UNDEFINED_UINT32) ? WS_NONE32 : root;
    rows->coll_op[i] = op;
    rows->coll_sent[i] = sent;
    rows->coll_received[i] = received;
    ev->n_collectives++;
    return OTF2_CALLBACK_SUCCESS;
}

/* Whether string index `str` reads `name` followed by the program's
 * arguments, each after a blank (Score-P's canonical name of the program
 * region: the executable's path and its arguments). */
static int is_program_text(const ws_trace *t, uint32_t str, const char *name, uint32_t n_args,
                           const OTF2_StringRef *args)
{
    const char *text = ws_trace_string(t, str);
    size_t len = strlen(name);
    if (!text || strncmp(text, name, len) != 0)
        return 0;
    text += len;
    for (uint32_t i = 0; i < n_args; i++) {
        uint64_t index;
        if (*text++ != ' ' || !ws_map64_get(&t->string_ids, args[i], &index))
            return 0;
        const char *arg = ws_trace_string(t, (uint32_t)index);
        size_t n = arg ? strlen(arg) : 0;
        if (strncmp(text, arg ? arg : "", n) != 0)
            return 0;
        text += n;
    }
    return *text == '\0';
}

/* The program region ProgramBegin names, as Scalasca's reader finds it: the
 * artificial region of the measurement system whose canonical name is the
 * program's name and arguments.  OTF2_UNDEFINED_REGION when the archive
 * defines none (its ProgramBegin then stays an event of its own). */
static OTF2_RegionRef program_region(evt_ctx *c, OTF2_StringRef name, uint32_t n_args, const OTF2_StringRef *args)
{
    load_scratch *s = c->s;
    if (n_args == 0 && s->program_name == name && s->program_known)
        return s->program_region;
    const ws_trace *t = c->t;
    OTF2_RegionRef found = OTF2_UNDEFINED_REGION;
    uint64_t index;
    if (name != OTF2_UNDEFINED_STRING && ws_map64_get(&t->string_ids, name, &index)) {
        const char *text = ws_trace_string(t, (uint32_t)index);
        for (uint32_t r = 0; text && r < t->n_regions; r++) {
            const ws_region *g = &t->regions[r];
            if (g->role == OTF2_REGION_ROLE_ARTIFICIAL && g->paradigm == OTF2_PARADIGM_MEASUREMENT_SYSTEM &&
                is_program_text(t, g->canonical_name, text, n_args, args)) {
                found = (OTF2_RegionRef)g->otf2_id;
                break;
            }
        }
    }
    if (n_args == 0) {
        s->program_name = name;
        s->program_region = found;
        s->program_known = 1;
    }
    return found;
}

/* ProgramBegin and ProgramEnd are the Enter and Leave of the program
 * region, the root of every call path (as Scalasca and Cube show it),
 * when the archive defines that region and nothing else is open. */
static OTF2_CallbackCode on_program_begin(OTF2_LocationRef l, OTF2_TimeStamp time, uint64_t pos, void *user,
                                          OTF2_AttributeList *a, OTF2_StringRef name, uint32_t n_args,
                                          const OTF2_StringRef *args)
{
    evt_ctx *c = user;
    if (c->depth == 0) {
        OTF2_RegionRef region = program_region(c, name, n_args, args);
        if (region != OTF2_UNDEFINED_REGION) {
            c->program_open = 1;
            return on_enter(l, time, pos, user, a, region);
        }
    }
    return push_event(user, time, WS_EV_PROGRAM_BEGIN, 0) < 0 ? OTF2_CALLBACK_INTERRUPT : OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode on_program_end(OTF2_LocationRef l, OTF2_TimeStamp time, uint64_t pos, void *user,
                                        OTF2_AttributeList *a, int64_t status)
{
    (void)status;
    evt_ctx *c = user;
    if (c->program_open && c->depth > 0) {
        if (c->depth != 1) {
            const ws_trace *t = c->t;
            uint32_t cp = c->s->stack[c->depth - 1];
            EVT_FAIL(c, WS_ERR_FORMAT, "event %llu ends the program while region '%s' is still open",
                     (unsigned long long)c->ev->n, ws_trace_string(t, t->regions[c->callpaths->region[cp]].name));
        }
        c->program_open = 0;
        return on_leave(l, time, pos, user, a, c->s->stack_id[0]);
    }
    return push_event(user, time, WS_EV_PROGRAM_END, 0) < 0 ? OTF2_CALLBACK_INTERRUPT : OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode on_measurement(OTF2_LocationRef l, OTF2_TimeStamp time, uint64_t pos, void *user,
                                        OTF2_AttributeList *a, OTF2_MeasurementMode mode)
{
    (void)l;
    (void)pos;
    (void)a;
    uint8_t kind = mode == OTF2_MEASUREMENT_ON ? WS_EV_MEASUREMENT_ON : WS_EV_MEASUREMENT_OFF;
    return push_event(user, time, kind, 0) < 0 ? OTF2_CALLBACK_INTERRUPT : OTF2_CALLBACK_SUCCESS;
}

static OTF2_EvtReaderCallbacks *new_event_callbacks(void)
{
    OTF2_EvtReaderCallbacks *cbs = OTF2_EvtReaderCallbacks_New();
    if (!cbs)
        return NULL;
    OTF2_EvtReaderCallbacks_SetEnterCallback(cbs, on_enter);
    OTF2_EvtReaderCallbacks_SetLeaveCallback(cbs, on_leave);
    OTF2_EvtReaderCallbacks_SetMpiSendCallback(cbs, on_send);
    OTF2_EvtReaderCallbacks_SetMpiIsendCallback(cbs, on_isend);
    OTF2_EvtReaderCallbacks_SetMpiIsendCompleteCallback(cbs, on_isend_complete);
    OTF2_EvtReaderCallbacks_SetMpiIrecvRequestCallback(cbs, on_irecv_request);
    OTF2_EvtReaderCallbacks_SetMpiRecvCallback(cbs, on_recv);
    OTF2_EvtReaderCallbacks_SetMpiIrecvCallback(cbs, on_irecv);
    OTF2_EvtReaderCallbacks_SetMpiRequestTestCallback(cbs, on_request_test);
    OTF2_EvtReaderCallbacks_SetMpiRequestCancelledCallback(cbs, on_request_cancelled);
    OTF2_EvtReaderCallbacks_SetMpiCollectiveBeginCallback(cbs, on_coll_begin);
    OTF2_EvtReaderCallbacks_SetMpiCollectiveEndCallback(cbs, on_coll_end);
    OTF2_EvtReaderCallbacks_SetProgramBeginCallback(cbs, on_program_begin);
    OTF2_EvtReaderCallbacks_SetProgramEndCallback(cbs, on_program_end);
    OTF2_EvtReaderCallbacks_SetMeasurementOnOffCallback(cbs, on_measurement);
    ws_otf2_thread_callbacks(cbs);
    return cbs;
}

char *ws_otf2_location_file(const char *directory, uint64_t location, const char *suffix)
{
    size_t n = strlen(directory) + 48;
    char *p = ws_malloc(n);
    if (p)
        snprintf(p, n, "%s/%llu.%s", directory, (unsigned long long)location, suffix);
    return p;
}

/* The local definitions of a location (id mappings and clock offsets;
 * optional in OTF2), when its file exists. */
static int read_local_definitions(OTF2_Reader *reader, uint64_t location, const char *def_path, ws_error *err)
{
    if (!ws_otf2_is_regular_file(def_path))
        return WS_OK;
    char what[64];
    snprintf(what, sizeof what, "local definition file of location %llu", (unsigned long long)location);
    uint64_t bytes = 0;
    int rc = ws_otf2_check_buffer_file_size(def_path, what, &bytes, err);
    /* a file of one chunk header and the end marks holds no record (writers
     * leave one per location): libotf2 would still set up a reader with a
     * zeroed definition chunk (megabytes) to find nothing in it */
    if (rc || bytes == WS_OTF2_EMPTY_BUFFER_FILE_BYTES)
        return rc;
    OTF2_DefReader *dr = OTF2_Reader_GetDefReader(reader, location);
    if (!dr)
        return ws_error_set(err, WS_ERR_FORMAT, "%s: cannot open local definitions", def_path);
    uint64_t n_defs = 0;
    OTF2_ErrorCode s = OTF2_Reader_ReadAllLocalDefinitions(reader, dr, &n_defs);
    OTF2_Reader_CloseDefReader(reader, dr);
    if (s != OTF2_SUCCESS)
        return ws_error_set(err, WS_ERR_FORMAT, "%s: %s: %s", def_path, OTF2_Error_GetName(s),
                            OTF2_Error_GetDescription(s));
    return WS_OK;
}

static int read_location(ws_trace *t, OTF2_Reader *reader, OTF2_EvtReaderCallbacks *cbs, load_scratch *scratch,
                         ws_callpaths *callpaths, uint32_t index, const ws_progress *progress, uint64_t *done,
                         uint64_t total, ws_error *err)
{
    ws_location *loc = &t->locations[index];
    char *evt_path = ws_otf2_location_file(t->directory, loc->otf2_id, "evt");
    char *def_path = ws_otf2_location_file(t->directory, loc->otf2_id, "def");
    if (!evt_path || !def_path) {
        free(evt_path);
        free(def_path);
        return ws_error_nomem(err, "path");
    }
    int rc = WS_OK;
    /* closed last, after the columns are complete: its chunk buffer (a
     * MiB) is then freed whole and the next location's reader gets it back
     * with its pages, instead of fresh pages where the columns took it */
    OTF2_EvtReader *er = NULL;
    evt_ctx c;
    memset(&c, 0, sizeof c);

    if (!ws_otf2_is_regular_file(evt_path)) {
        rc = ws_error_set(err, WS_ERR_IO, "%s: event file of location %llu is missing", evt_path,
                          (unsigned long long)loc->otf2_id);
        goto done;
    }
    if ((rc = read_local_definitions(reader, loc->otf2_id, def_path, err)))
        goto done;

    char evt_what[64];
    snprintf(evt_what, sizeof evt_what, "event file of location %llu", (unsigned long long)loc->otf2_id);
    if ((rc = ws_otf2_check_event_file(evt_path, evt_what, scratch->event_chunk, &scratch->check, err)))
        goto done;
    er = OTF2_Reader_GetEvtReader(reader, loc->otf2_id);
    if (!er) {
        rc = ws_error_set(err, WS_ERR_FORMAT, "%s: OTF2 cannot read the event file of location %llu (damaged?)",
                          evt_path, (unsigned long long)loc->otf2_id);
        goto done;
    }
    c.t = t;
    c.callpaths = callpaths;
    c.ev = &loc->events;
    c.s = scratch;
    c.err = err;
    c.inv_resolution = 1.0 / (double)t->clock.resolution;
    c.offset = t->clock.offset;
    c.last_ticks = 0;
    c.last_comm_id = UINT64_MAX;
    c.depth = 0;
    c.loc = index;
    c.base = WS_NONE32;
    c.in_team = 0;
    ws_otf2_thread_location_begin(scratch);
    /* the definitions announce the number of records: reserve them at
     * once (records of kinds the store skips make this an upper bound) */
    uint64_t initial = loc->n_events_defined;
    if (initial > (1u << 24))
        initial = 1u << 24;
    if (initial < 64)
        initial = 64;
    c.ev->tick_scale = c.inv_resolution;
    if (ws_events_reserve_ticks(c.ev, initial) != 0) {
        rc = ws_error_nomem(err, "events");
        goto done;
    }
    c.cap = initial;
    c.rows = &scratch->side;
    if (loc->n_events_defined >= DIRECT_ROWS_MIN && loc->n_events_defined <= DIRECT_ROWS_MAX &&
        ws_rows_reserve(&scratch->direct, (size_t)loc->n_events_defined) == 0)
        c.rows = &scratch->direct;
    OTF2_ErrorCode s = OTF2_EvtReader_SetCallbacks(er, cbs, &c);
    uint64_t records = 0;
    while (s == OTF2_SUCCESS) {
        /* never more than one record past the announced count: on some
         * damaged files libotf2 decodes records without end */
        uint64_t left = loc->n_events_defined - records + 1;
        uint64_t batch = left < (1u << 20) ? left : (1u << 20);
        uint64_t n = 0;
        s = OTF2_EvtReader_ReadEvents(er, batch, &n);
        records += n;
        *done += n;
        if (s != OTF2_SUCCESS || n < batch || records > loc->n_events_defined)
            break;
        if (progress && progress->callback && progress->callback(progress->context, "load", *done, total)) {
            rc = ws_error_set(err, WS_ERR_INTERRUPTED, "loading interrupted");
            goto done;
        }
    }
    if (c.failed) {
        rc = ws_error_prefix(err, "%s: location %llu", evt_path, (unsigned long long)loc->otf2_id);
        goto done;
    }
    if (s != OTF2_SUCCESS) {
        rc = ws_error_set(err, WS_ERR_FORMAT, "%s: corrupted or truncated event file of location %llu (%s: %s)",
                          evt_path, (unsigned long long)loc->otf2_id, OTF2_Error_GetName(s),
                          OTF2_Error_GetDescription(s));
        goto done;
    }
    if (records > loc->n_events_defined) {
        rc = ws_error_set(err, WS_ERR_FORMAT,
                          "%s: location %llu: the file holds more event records than the definitions announce "
                          "(%llu): it is damaged or does not belong to this archive",
                          evt_path, (unsigned long long)loc->otf2_id, (unsigned long long)loc->n_events_defined);
        goto done;
    }
    if (c.program_open && c.depth == 1 && !c.failed) {
        /* a run cut short (a crash, MPI_Abort) records no ProgramEnd: the
         * program ends at the location's last event */
        if (push_event(&c, c.last_ticks, WS_EV_LEAVE, scratch->stack[0]) < 0) {
            rc = ws_error_prefix(err, "%s: location %llu", evt_path, (unsigned long long)loc->otf2_id);
            goto done;
        }
        c.depth = 0;
        c.program_open = 0;
    }
    if (c.depth != 0 || c.in_team) {
        rc = ws_error_set(err, WS_ERR_FORMAT,
                          "%s: location %llu: %u region(s) or a thread team are still open at the end of the "
                          "events: the file is truncated",
                          evt_path, (unsigned long long)loc->otf2_id, (unsigned)c.depth);
        goto done;
    }
    if (records != loc->n_events_defined) {
        rc = ws_error_set(err, WS_ERR_FORMAT,
                          "%s: location %llu: %llu event records read but the definitions announce %llu: the file "
                          "is truncated or does not belong to this archive",
                          evt_path, (unsigned long long)loc->otf2_id, (unsigned long long)records,
                          (unsigned long long)loc->n_events_defined);
        goto done;
    }
    c.ev->n_skipped = records - c.ev->n;
    if (ws_rows_finish_columns(c.ev, c.cap, c.rows, c.rows == &scratch->direct) != 0) {
        rc = ws_error_nomem(err, "events");
        goto done;
    }
    loc->loaded = 1;

done:
    ws_rows_free(&scratch->direct); /* left over only on error */
    if (er)
        OTF2_Reader_CloseEvtReader(reader, er);
    if (rc != WS_OK)
        ws_events_free(&loc->events);
    free(evt_path);
    free(def_path);
    return rc;
}

int ws_otf2_load_block(ws_trace *t, const uint32_t *locations, uint32_t n, ws_callpaths *callpaths,
                       const ws_progress *progress, uint64_t *done, uint64_t total, uint64_t *n_events,
                       uint32_t *failed_at, ws_error *err)
{
    *n_events = 0;
    *failed_at = n;
    int rc = WS_OK;
    OTF2_Reader *reader = OTF2_Reader_Open(t->path);
    if (!reader)
        return ws_error_set(err, WS_ERR_FORMAT, "%s: cannot reopen the archive", t->path);
    OTF2_Reader_SetSerialCollectiveCallbacks(reader);
    OTF2_ErrorCode s = OTF2_SUCCESS;
    for (uint32_t i = 0; i < n && s == OTF2_SUCCESS; i++)
        if (!t->locations[locations[i]].loaded)
            s = OTF2_Reader_SelectLocation(reader, t->locations[locations[i]].otf2_id);
    if (s == OTF2_SUCCESS) {
        /* a failure here just means no local definition files exist */
        OTF2_Reader_OpenDefFiles(reader);
        s = OTF2_Reader_OpenEvtFiles(reader);
    }
    if (s != OTF2_SUCCESS) {
        OTF2_Reader_Close(reader);
        return ws_error_set(err, WS_ERR_FORMAT, "%s: cannot open event files (%s)", t->path,
                            OTF2_Error_GetDescription(s));
    }
    OTF2_EvtReaderCallbacks *cbs = new_event_callbacks();
    load_scratch *scratch = scratch_new();
    uint64_t def_chunk = 0;
    if (scratch && OTF2_Reader_GetChunkSize(reader, &scratch->event_chunk, &def_chunk) != OTF2_SUCCESS)
        scratch->event_chunk = 0;
    if (!cbs || !scratch) {
        rc = ws_error_nomem(err, "event callbacks");
    } else {
        for (uint32_t i = 0; i < n && rc == WS_OK; i++) {
            ws_location *loc = &t->locations[locations[i]];
            if (loc->loaded)
                continue;
            rc = read_location(t, reader, cbs, scratch, callpaths, locations[i], progress, done, total, err);
            if (rc == WS_OK) {
                *n_events += loc->events.n;
                if (progress && progress->callback && progress->callback(progress->context, "load", *done, total))
                    rc = ws_error_set(err, WS_ERR_INTERRUPTED, "loading interrupted");
            } else {
                *failed_at = i;
            }
        }
    }
    if (cbs)
        OTF2_EvtReaderCallbacks_Delete(cbs);
    scratch_free(scratch);
    OTF2_Reader_CloseEvtFiles(reader);
    OTF2_Reader_CloseDefFiles(reader);
    OTF2_Reader_Close(reader);
    return rc;
}

typedef struct order_key {
    uint32_t group, thread, pos, loc;
} order_key;

static int cmp_order(const void *x, const void *y)
{
    const order_key *a = x, *b = y;
    if (a->group != b->group)
        return a->group < b->group ? -1 : 1;
    if (a->thread != b->thread)
        return a->thread < b->thread ? -1 : 1;
    return (a->pos > b->pos) - (a->pos < b->pos);
}

int ws_otf2_process_order(const ws_trace *t, uint32_t *list, uint32_t n)
{
    if (!ws_trace_has_threads(t) || n < 2)
        return 0;
    order_key *k = ws_malloc_array(n, sizeof *k);
    if (!k)
        return -1;
    for (uint32_t i = 0; i < n; i++)
        k[i] = (order_key){t->locations[list[i]].group, t->locations[list[i]].thread, i, list[i]};
    qsort(k, n, sizeof *k, cmp_order);
    for (uint32_t i = 0; i < n; i++)
        list[i] = k[i].loc;
    free(k);
    return 0;
}

int ws_otf2_load_events(ws_trace *t, const uint32_t *locations, uint32_t n, const ws_progress *progress,
                        ws_error *err)
{
    ws_otf2_silence();
    uint32_t *all = NULL;
    if (!locations || n == 0) {
        n = t->n_locations;
        all = ws_malloc_array(n, sizeof *all);
        if (!all)
            return ws_error_nomem(err, "location list");
        for (uint32_t i = 0; i < n; i++)
            all[i] = i;
        locations = all;
    }
    for (uint32_t i = 0; i < n; i++)
        if (locations[i] >= t->n_locations) {
            free(all);
            return ws_error_set(err, WS_ERR_ARGUMENT, "location index %u out of range (trace has %u)",
                                (unsigned)locations[i], (unsigned)t->n_locations);
        }
    /* the threads of a process in a row, masters first (otf2_threads.c) */
    if (ws_trace_has_threads(t)) {
        if (!all) {
            all = ws_malloc_array(n, sizeof *all);
            if (!all)
                return ws_error_nomem(err, "location list");
            memcpy(all, locations, n * sizeof *all);
            locations = all;
        }
        if (ws_otf2_process_order(t, all, n) != 0) {
            free(all);
            return ws_error_nomem(err, "location list");
        }
    }
    uint64_t total = 0;
    for (uint32_t i = 0; i < n; i++) {
        const ws_location *l = &t->locations[locations[i]];
        if (!l->loaded)
            total += l->n_events_defined;
    }
    uint64_t done = 0, n_events = 0;
    uint32_t failed_at;
    int rc = ws_otf2_load_block(t, locations, n, &t->callpaths, progress, &done, total, &n_events, &failed_at, err);
    /* the locations read before a failure stay loaded */
    t->n_events += n_events;
    free(all);
    return rc;
}
