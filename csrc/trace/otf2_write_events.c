/* Trace store -> OTF2 event records (for otf2_writer.c). */
#include "otf2_write_int.h"

#include <string.h>

#include "../common/alloc.h"

#define BAD_REF(what)                                                                                            \
    do {                                                                                                         \
        rc = ws_error_set(w->err, WS_ERR_INTERNAL, "location %llu, event %llu: %s out of range",               \
                          (unsigned long long)loc->otf2_id, (unsigned long long)e, what);                        \
        goto done;                                                                                               \
    } while (0)

int ws_otf2w_events(writer *w, OTF2_EvtWriter *ew, const ws_location *loc, const ws_events *ev, uint64_t first,
                    uint64_t end, uint64_t shift, const ws_progress *progress, uint64_t *done_events, uint64_t total,
                    uint64_t *next_report)
{
    const ws_trace *t = w->t;
    int rc = WS_OK;
    OTF2_ErrorCode s = OTF2_SUCCESS;
    uint64_t e = 0;
    {
        /* request rows follow the event order: the first at or after `first` */
        uint64_t rq = ws_lower_bound_u32(ev->req_event, 0, ev->n_requests, first);
        for (e = first; e < end; e++) {
            OTF2_TimeStamp ts = event_ticks(t, ev, e) + shift;
            uint32_t ref = ev->ref[e];
            switch (ev->kind[e]) {
            case WS_EV_ENTER:
            case WS_EV_LEAVE: {
                if (ref >= t->callpaths.n)
                    BAD_REF("call path");
                uint32_t r = t->callpaths.region[ref];
                if (r >= t->n_regions)
                    BAD_REF("region");
                OTF2_RegionRef region = (OTF2_RegionRef)t->regions[r].otf2_id;
                if (r == w->program_region_index && t->callpaths.parent[ref] == WS_NONE32)
                    /* the program region at the root: Score-P's ProgramBegin and ProgramEnd */
                    s = ev->kind[e] == WS_EV_ENTER
                            ? OTF2_EvtWriter_ProgramBegin(ew, NULL, ts, w->program_name, 0, NULL)
                            : OTF2_EvtWriter_ProgramEnd(ew, NULL, ts, OTF2_UNDEFINED_INT64);
                else
                    s = ev->kind[e] == WS_EV_ENTER ? OTF2_EvtWriter_Enter(ew, NULL, ts, region)
                                                   : OTF2_EvtWriter_Leave(ew, NULL, ts, region);
                break;
            }
            case WS_EV_SEND:
            case WS_EV_RECV:
            case WS_EV_ISEND:
            case WS_EV_IRECV: {
                if (ref >= ev->n_messages)
                    BAD_REF("message row");
                if (ws_msg_comm(ev, ref) >= t->n_comms)
                    BAD_REF("communicator");
                OTF2_CommRef comm = (OTF2_CommRef)t->comms[ws_msg_comm(ev, ref)].otf2_id;
                uint32_t peer = ws_msg_peer(ev, ref), tag = ws_msg_tag(ev, ref);
                uint64_t bytes = ws_msg_bytes(ev, ref);
                if (ev->kind[e] == WS_EV_SEND) {
                    s = OTF2_EvtWriter_MpiSend(ew, NULL, ts, peer, comm, tag, bytes);
                } else if (ev->kind[e] == WS_EV_RECV) {
                    s = OTF2_EvtWriter_MpiRecv(ew, NULL, ts, peer, comm, tag, bytes);
                } else {
                    while (rq < ev->n_requests && ev->req_event[rq] < e)
                        rq++;
                    if (rq >= ev->n_requests || ev->req_event[rq] != e)
                        BAD_REF("request of a non-blocking operation");
                    uint64_t id = ws_req_id(ev, rq++);
                    s = ev->kind[e] == WS_EV_ISEND ? OTF2_EvtWriter_MpiIsend(ew, NULL, ts, peer, comm, tag, bytes, id)
                                                   : OTF2_EvtWriter_MpiIrecv(ew, NULL, ts, peer, comm, tag, bytes, id);
                }
                break;
            }
            case WS_EV_ISEND_COMPLETE:
            case WS_EV_IRECV_REQUEST:
            case WS_EV_REQUEST_TEST:
            case WS_EV_REQUEST_CANCELLED: {
                if (ref >= ev->n_requests)
                    BAD_REF("request row");
                uint64_t id = ws_req_id(ev, ref);
                if (ref >= rq)
                    rq = (uint64_t)ref + 1;
                switch (ev->kind[e]) {
                case WS_EV_ISEND_COMPLETE:
                    s = OTF2_EvtWriter_MpiIsendComplete(ew, NULL, ts, id);
                    break;
                case WS_EV_IRECV_REQUEST:
                    s = OTF2_EvtWriter_MpiIrecvRequest(ew, NULL, ts, id);
                    break;
                case WS_EV_REQUEST_TEST:
                    s = OTF2_EvtWriter_MpiRequestTest(ew, NULL, ts, id);
                    break;
                default:
                    s = OTF2_EvtWriter_MpiRequestCancelled(ew, NULL, ts, id);
                    break;
                }
                break;
            }
            case WS_EV_COLL_BEGIN:
                s = OTF2_EvtWriter_MpiCollectiveBegin(ew, NULL, ts);
                break;
            case WS_EV_COLL_END: {
                if (ref >= ev->n_collectives)
                    BAD_REF("collective row");
                if (ev->coll_comm[ref] >= t->n_comms)
                    BAD_REF("communicator");
                uint32_t root = ev->coll_root[ref] == WS_NONE32 ? OTF2_UNDEFINED_UINT32 : ev->coll_root[ref];
                s = OTF2_EvtWriter_MpiCollectiveEnd(ew, NULL, ts, (OTF2_CollectiveOp)ev->coll_op[ref],
                                                    (OTF2_CommRef)t->comms[ev->coll_comm[ref]].otf2_id, root,
                                                    ev->coll_sent[ref], ev->coll_received[ref]);
                break;
            }
            case WS_EV_PROGRAM_BEGIN:
                s = OTF2_EvtWriter_ProgramBegin(ew, NULL, ts, w->program_name, 0, NULL);
                break;
            case WS_EV_PROGRAM_END:
                s = OTF2_EvtWriter_ProgramEnd(ew, NULL, ts, OTF2_UNDEFINED_INT64);
                break;
            case WS_EV_MEASUREMENT_ON:
            case WS_EV_MEASUREMENT_OFF:
                s = OTF2_EvtWriter_MeasurementOnOff(
                    ew, NULL, ts, ev->kind[e] == WS_EV_MEASUREMENT_ON ? OTF2_MEASUREMENT_ON : OTF2_MEASUREMENT_OFF);
                break;
            case WS_EV_THREAD_FORK:
            case WS_EV_THREAD_JOIN:
            case WS_EV_THREAD_TEAM_BEGIN:
            case WS_EV_THREAD_TEAM_END:
            case WS_EV_THREAD_ACQUIRE_LOCK:
            case WS_EV_THREAD_RELEASE_LOCK:
            case WS_EV_THREAD_TASK_CREATE:
            case WS_EV_THREAD_TASK_SWITCH:
            case WS_EV_THREAD_TASK_COMPLETE:
            case WS_EV_THREAD_CREATE:
            case WS_EV_THREAD_BEGIN:
            case WS_EV_THREAD_WAIT:
            case WS_EV_THREAD_END:
                if (ref >= ev->n_threads)
                    BAD_REF("thread record row");
                if (ev->thr_comm[ref] != WS_NONE32 && ev->thr_comm[ref] >= t->n_comms)
                    BAD_REF("thread team or contingent");
                s = ws_otf2_write_thread_record(ew, ts, t, ev, ev->kind[e], ref);
                break;
            default:
                rc = ws_error_set(w->err, WS_ERR_INTERNAL, "location %llu, event %llu: unknown event kind %u",
                                  (unsigned long long)loc->otf2_id, (unsigned long long)e, (unsigned)ev->kind[e]);
                goto done;
            }
            if (s != OTF2_SUCCESS) {
                rc = ws_otf2w_fail(w, s, "events");
                goto done;
            }
            if (++*done_events >= *next_report) {
                *next_report += 1u << 20;
                if (progress && progress->callback &&
                    progress->callback(progress->context, "write", *done_events, total)) {
                    rc = ws_error_set(w->err, WS_ERR_INTERRUPTED, "writing interrupted");
                    goto done;
                }
            }
        }
    }
done:
    return rc;
}

#undef BAD_REF

/* The region name of call path cp, or "" */
static const char *callpath_region_name(const ws_trace *t, uint32_t cp)
{
    if (cp >= t->callpaths.n || t->callpaths.region[cp] >= t->n_regions)
        return "";
    const char *name = ws_trace_string(t, t->regions[t->callpaths.region[cp]].name);
    return name ? name : "";
}

int ws_otf2w_repeat_plan(writer *w)
{
    const ws_trace *t = w->t;
    w->body = ws_calloc(2 * (size_t)(t->n_locations ? t->n_locations : 1), sizeof *w->body);
    if (!w->body)
        return ws_error_nomem(w->err, "repetition plan");
    w->period = 1;
    for (uint32_t l = 0; l < t->n_locations; l++) {
        const ws_location *loc = &t->locations[l];
        if (!loc->loaded)
            continue;
        const ws_events *ev = &loc->events;
        uint64_t b0 = UINT64_MAX, b1 = UINT64_MAX;
        for (uint64_t e = 0; e < ev->n; e++) {
            if (ev->kind[e] != WS_EV_ENTER && ev->kind[e] != WS_EV_LEAVE)
                continue;
            const char *name = callpath_region_name(t, ev->ref[e]);
            if (b0 == UINT64_MAX && ev->kind[e] == WS_EV_LEAVE &&
                (!strcmp(name, "MPI_Init") || !strcmp(name, "MPI_Init_thread")))
                b0 = e + 1;
            else if (b0 != UINT64_MAX && ev->kind[e] == WS_EV_ENTER && !strcmp(name, "MPI_Finalize")) {
                b1 = e;
                break;
            }
        }
        if (b0 == UINT64_MAX || b1 == UINT64_MAX)
            return ws_error_set(w->err, WS_ERR_ARGUMENT,
                                "cannot repeat the events of location %llu: it has no MPI_Init call followed by "
                                "an MPI_Finalize call",
                                (unsigned long long)loc->otf2_id);
        w->body[2 * (size_t)l] = b0;
        w->body[2 * (size_t)l + 1] = b1;
        OTF2_TimeStamp from = event_ticks(t, ev, b0 < ev->n ? b0 : b0 - 1);
        OTF2_TimeStamp to = event_ticks(t, ev, b1);
        if (to > from && to - from > w->period)
            w->period = to - from;
    }
    return WS_OK;
}

uint64_t ws_otf2w_event_count(const writer *w, uint32_t l)
{
    const ws_location *loc = &w->t->locations[l];
    if (w->event_counts)
        return w->event_counts[l];
    if (!loc->loaded)
        return 0;
    if (w->copies <= 1)
        return loc->events.n;
    uint64_t body = w->body[2 * (size_t)l + 1] - w->body[2 * (size_t)l];
    return loc->events.n + (uint64_t)(w->copies - 1) * body;
}
