/* Trace store -> OTF2 event records (for otf2_writer.c). */
#include "otf2_write_int.h"

#define BAD_REF(what)                                                                                            \
    do {                                                                                                         \
        rc = ws_error_set(w->err, WS_ERR_INTERNAL, "location %llu, event %llu: %s out of range",               \
                          (unsigned long long)loc->otf2_id, (unsigned long long)e, what);                        \
        goto done;                                                                                               \
    } while (0)

int ws_otf2w_events(writer *w, OTF2_EvtWriter *ew, const ws_location *loc, const ws_events *ev,
                        const ws_progress *progress, uint64_t *done_events, uint64_t total, uint64_t *next_report)
{
    const ws_trace *t = w->t;
    int rc = WS_OK;
    OTF2_ErrorCode s = OTF2_SUCCESS;
    uint64_t e = 0;
    {
        uint64_t rq = 0; /* request rows follow the event order */
        for (e = 0; e < ev->n; e++) {
            OTF2_TimeStamp ts = ticks_of(t, ev->time[e]);
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
                if (ev->msg_comm[ref] >= t->n_comms)
                    BAD_REF("communicator");
                OTF2_CommRef comm = (OTF2_CommRef)t->comms[ev->msg_comm[ref]].otf2_id;
                uint32_t peer = ev->msg_peer[ref], tag = ev->msg_tag[ref];
                uint64_t bytes = ev->msg_bytes[ref];
                if (ev->kind[e] == WS_EV_SEND) {
                    s = OTF2_EvtWriter_MpiSend(ew, NULL, ts, peer, comm, tag, bytes);
                } else if (ev->kind[e] == WS_EV_RECV) {
                    s = OTF2_EvtWriter_MpiRecv(ew, NULL, ts, peer, comm, tag, bytes);
                } else {
                    while (rq < ev->n_requests && ev->req_event[rq] < e)
                        rq++;
                    if (rq >= ev->n_requests || ev->req_event[rq] != e)
                        BAD_REF("request of a non-blocking operation");
                    uint64_t id = ev->req_id[rq++];
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
                uint64_t id = ev->req_id[ref];
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
