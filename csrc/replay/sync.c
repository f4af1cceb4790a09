/* Synchronization data (sync.h): every location's pass (sync_location.c),
 * then the checks across locations and the matching of the messages,
 * between processes through the transport. */
#include "sync_int.h"

#include <stdlib.h>
#include <string.h>

#include "../common/match.h"

static void free_loc(ws_loc_sync *s)
{
    free(s->msgs);
    free(s->leave_wide);
    free(s->sync_events); /* and sync_what */
    free(s->sites);
    memset(s, 0, sizeof *s);
}

void ws_sync_ch1_events(const ws_events *e, const ws_loc_sync *ls, uint32_t *out)
{
    for (uint64_t row = 0; row < ls->n_messages; row++)
        out[row] = e->msg_event[row];
    for (uint64_t k = 0; k < ls->n_sync_events; k++)
        if ((ls->sync_what[k] & ~(uint32_t)WS_SYNC_INDEX) == WS_SYNC_CH1)
            out[ls->sync_what[k] & WS_SYNC_INDEX] = ls->sync_events[k];
}

void ws_sync_free(ws_sync *s)
{
    if (!s)
        return;
    if (s->locs)
        for (uint32_t i = 0; i < s->n_locations; i++)
            free_loc(&s->locs[i]);
    free(s->locs);
    free(s->region_mpi);
    free(s->comm_local);
    free(s->comm_members);
    free(s);
}

/* A send as announced to the receiver's process for matching. */
typedef struct send_record {
    uint32_t dst;  /* receiving location */
    uint32_t src;  /* sending location */
    uint32_t comm;
    uint32_t tag;
    uint32_t row;  /* message row at the sender */
} send_record;

/* Message ends as matched (common/match.h): channel (source location,
 * comm, tag), order the row (at the sender for sends, at the receiver
 * for receives), which is program order. */
typedef struct match_ctx {
    const ws_trace *t;
    ws_sync *s;
    ws_loc_sync *ls;
    uint32_t loc;
    ws_error *err;
} match_ctx;

static void on_pair(void *context, const ws_match_key *send, const ws_match_key *recv)
{
    match_ctx *c = context;
    c->ls->msgs[recv->order].match_row = (uint32_t)send->order;
    /* the send learns the receive's row when its location is built here too */
    ws_loc_sync *sender = &c->s->locs[send->channel[0]];
    if (sender->msgs && send->order < sender->n_messages)
        sender->msgs[send->order].match_row = (uint32_t)recv->order;
}

static int on_unmatched(void *context, const ws_match_key *key, int is_send)
{
    match_ctx *c = context;
    const ws_trace *t = c->t;
    if (!is_send) {
        const ws_events *e = &t->locations[c->loc].events;
        uint64_t m = key->order;
        ws_error_set(c->err, WS_ERR_MATCH,
                     "location %u: receive from rank %u (tag %u, communicator '%s') at t=%.9f s has no "
                     "matching send",
                     (unsigned)c->loc, (unsigned)ws_msg_peer(e, m), (unsigned)ws_msg_tag(e, m),
                     ws_trace_string(t, t->comms[ws_msg_comm(e, m)].name), ws_ev_time(e, e->msg_event[m]));
        return ws_trace_error_at(t, c->loc, c->err);
    }
    ws_error_set(c->err, WS_ERR_MATCH,
                 "location %u: send %u to location %u (tag %u, communicator '%s') is never received",
                 (unsigned)key->channel[0], (unsigned)key->order, (unsigned)c->loc, (unsigned)key->channel[2],
                 ws_trace_string(t, t->comms[key->channel[1]].name));
    return ws_trace_error_at(t, key->channel[0], c->err);
}

/* Matches the receives of one location to the sends addressed to it. */
static int match_location(const ws_trace *t, ws_sync *s, uint32_t loc, ws_match_key *sends, size_t n_sends,
                          ws_match_key *recvs, ws_error *err)
{
    ws_loc_sync *ls = &s->locs[loc];
    const ws_events *e = &t->locations[loc].events;
    size_t n_recvs = 0;
    for (uint64_t m = 0; m < e->n_messages; m++) {
        if (ls->msgs[m].flags & WS_MSG_SEND)
            continue;
        ws_match_key *k = &recvs[n_recvs++];
        k->channel[0] = ls->msgs[m].partner;
        k->channel[1] = ws_msg_comm(e, m);
        k->channel[2] = ws_msg_tag(e, m);
        k->channel[3] = 0;
        k->order = m;
    }
    match_ctx c = {t, s, ls, loc, err};
    return ws_match_fifo(sends, n_sends, recvs, n_recvs, on_pair, on_unmatched, &c);
}

static int match_messages(const ws_trace *t, ws_sync *s, const uint32_t *locs, uint32_t n, ws_transport *tr,
                          ws_error *err)
{
    int rc = WS_OK;
    send_record *records = NULL;
    uint32_t *dest = NULL;
    size_t n_records = 0;
    void *received = NULL;
    size_t n_received = 0;
    ws_match_key *keys = NULL, *recvs = NULL;
    uint64_t *start = NULL;
    uint32_t *by_dst = NULL;

    for (uint32_t i = 0; i < n; i++) {
        const ws_loc_sync *ls = &s->locs[locs[i]];
        for (uint64_t m = 0; m < ls->n_messages; m++)
            n_records += (ls->msgs[m].flags & (WS_MSG_SEND | WS_MSG_CANCELLED)) == WS_MSG_SEND;
    }
    records = ws_malloc_array(n_records ? n_records : 1, sizeof *records);
    dest = ws_malloc_array(n_records ? n_records : 1, sizeof *dest);
    if (!records || !dest)
        rc = ws_error_nomem(err, "send records");
    size_t k = 0;
    for (uint32_t i = 0; rc == WS_OK && i < n; i++) {
        uint32_t loc = locs[i];
        const ws_events *e = &t->locations[loc].events;
        const ws_loc_sync *ls = &s->locs[loc];
        for (uint64_t m = 0; m < e->n_messages; m++) {
            if ((ls->msgs[m].flags & (WS_MSG_SEND | WS_MSG_CANCELLED)) != WS_MSG_SEND)
                continue;
            send_record *r = &records[k];
            r->dst = ls->msgs[m].partner;
            r->src = loc;
            r->comm = ws_msg_comm(e, m);
            r->tag = ws_msg_tag(e, m);
            r->row = (uint32_t)m;
            dest[k++] = r->dst;
        }
    }
    if ((rc = ws_agree_status(tr, rc, err)))
        goto done;
    if ((rc = tr->ops->exchange(tr, records, sizeof *records, dest, n_records, &received, &n_received, err)))
        goto done;
    free(dest);
    dest = NULL;

    /* bucket the sends by receiving location: a counting sort of their
     * indices (4 bytes a send; each location's keys are made when it is
     * matched, into one buffer of the largest location's size) */
    const send_record *in = received;
    uint64_t max_recvs = 0, max_sends = 0;
    if (n_received > UINT32_MAX) {
        rc = ws_error_set(err, WS_ERR_ARGUMENT, "more than 2^32 messages received by one process");
        goto done;
    }
    start = ws_calloc((size_t)t->n_locations + 1, sizeof *start);
    /* (in the block of the records sent, which is larger unless a process
     * receives five times what it sends: no new pages) */
    by_dst = (n_received ? n_received : 1) <= SIZE_MAX / sizeof *by_dst
                 ? ws_realloc(records, (n_received ? n_received : 1) * sizeof *by_dst)
                 : NULL;
    if (by_dst)
        records = NULL;
    if (!start || !by_dst) {
        rc = ws_error_nomem(err, "matching table");
        goto done;
    }
    for (size_t r = 0; r < n_received; r++) {
        if (in[r].dst >= t->n_locations) {
            rc = ws_error_set(err, WS_ERR_INTERNAL, "send record for unknown location %u", (unsigned)in[r].dst);
            goto done;
        }
        start[in[r].dst + 1]++;
    }
    for (uint32_t l = 0; l < t->n_locations; l++) {
        if (start[l + 1] > max_sends)
            max_sends = start[l + 1];
        start[l + 1] += start[l];
    }
    for (size_t r = 0; r < n_received; r++)
        by_dst[start[in[r].dst]++] = (uint32_t)r;
    for (uint32_t l = t->n_locations; l > 0; l--)
        start[l] = start[l - 1];
    start[0] = 0;
    for (uint32_t i = 0; i < n; i++)
        if (s->locs[locs[i]].n_messages > max_recvs)
            max_recvs = s->locs[locs[i]].n_messages;
    keys = ws_malloc_array(max_sends ? max_sends : 1, sizeof *keys);
    recvs = ws_malloc_array(max_recvs ? max_recvs : 1, sizeof *recvs);
    if (!keys || !recvs) {
        rc = ws_error_nomem(err, "matching table");
        goto done;
    }
    for (uint32_t i = 0; i < n && rc == WS_OK; i++) {
        uint32_t loc = locs[i];
        size_t n_sends = start[loc + 1] - start[loc];
        for (size_t j = 0; j < n_sends; j++) {
            const send_record *x = &in[by_dst[start[loc] + j]];
            ws_match_key *key = &keys[j];
            key->channel[0] = x->src;
            key->channel[1] = x->comm;
            key->channel[2] = x->tag;
            key->channel[3] = 0;
            key->order = x->row;
        }
        rc = match_location(t, s, loc, keys, n_sends, recvs, err);
    }
done:
    if (received) {
        /* after the exchange every process must learn about a failure */
        int failed = rc != WS_OK;
        if (tr->ops->agree(tr, failed, err) && !failed)
            rc = err->code;
    }
    free(records);
    free(dest);
    free(received);
    free(keys);
    free(recvs);
    free(start);
    free(by_dst);
    return rc;
}

/* Removes the sites of one class (implicit Init/Finalize sites that not
 * every location has). */
static void drop_sites(ws_loc_sync *ls, uint8_t cls)
{
    uint32_t k = 0;
    for (uint32_t j = 0; j < ls->n_sites; j++) {
        if (ls->sites[j].cls == cls)
            continue;
        if (k != j) {
            ls->sites[k] = ls->sites[j];
        }
        k++;
    }
    ls->n_sites = k;
}

int ws_sync_build(const ws_trace *t, const uint32_t *locs, uint32_t n, ws_transport *tr, ws_sync **out,
                  ws_error *err)
{
    *out = NULL;
    int rc = WS_OK;
    ws_sync *s = ws_calloc(1, sizeof *s);
    comm_counter *comms = NULL;
    uint64_t *counts = NULL;
    uint8_t *local = NULL;
    uint32_t *local_members = NULL;
    ws_map64 ranks;
    ws_map64_init(&ranks);
    if (!s)
        rc = ws_error_nomem(err, "synchronization data");
    if (s) {
        s->n_locations = t->n_locations;
        s->n_regions = t->n_regions;
        s->locs = ws_calloc(t->n_locations ? t->n_locations : 1, sizeof *s->locs);
        s->region_mpi = ws_calloc(t->n_regions ? t->n_regions : 1, 1);
    }
    comms = ws_calloc(t->n_comms ? t->n_comms : 1, sizeof *comms);
    /* maxima then minima: per comm the collectives of a member, then the
     * number of Init and Finalize regions of a location */
    size_t n_half = (size_t)t->n_comms + 2, n_counts = 2 * n_half;
    counts = ws_calloc(n_counts, sizeof *counts);
    local = ws_calloc(t->n_locations ? t->n_locations : 1, 1);
    local_members = ws_calloc(t->n_comms ? t->n_comms : 1, sizeof *local_members);
    if (rc == WS_OK && (!s->locs || !s->region_mpi || !comms || !counts || !local || !local_members))
        rc = ws_error_nomem(err, "synchronization data");
    if (rc == WS_OK && ws_sync_rank_map(t, &ranks) != 0)
        rc = ws_error_nomem(err, "synchronization data");
    if (rc == WS_OK)
        for (uint32_t r = 0; r < t->n_regions; r++)
            s->region_mpi[r] = ws_sync_classify_region(t, &t->regions[r]);

    uint64_t *hi = counts, *lo = counts + n_half;
    const uint64_t none = (uint64_t)1 << 62; /* no member seen: neutral for the minimum */
    for (size_t k = 0; counts && k < n_half; k++)
        lo[k] = none;
    uint64_t *init_hi = hi + t->n_comms, *init_lo = lo + t->n_comms;
    uint64_t *fin_hi = init_hi + 1, *fin_lo = init_lo + 1;
    uint32_t n_mpi = 0;
    for (uint32_t i = 0; rc == WS_OK && i < n; i++) {
        uint32_t loc = locs[i];
        if (loc >= t->n_locations || !t->locations[loc].loaded) {
            rc = ws_error_set(err, WS_ERR_ARGUMENT, "location %u is not loaded", (unsigned)loc);
            break;
        }
        local[loc] = 1;
        memset(comms, 0, (t->n_comms ? t->n_comms : 1) * sizeof *comms);
        uint64_t ni = 0, nf = 0;
        if ((rc = ws_sync_build_location(t, s, loc, &s->locs[loc], &ni, &nf, comms, &ranks, err)))
            break;
        /* (a thread that is no MPI location has no MPI_Init or MPI_Finalize of its own) */
        if (t->locations[loc].rank != WS_NONE32) {
            n_mpi++;
            if (ni > *init_hi)
                *init_hi = ni;
            if (ni < *init_lo)
                *init_lo = ni;
            if (nf > *fin_hi)
                *fin_hi = nf;
            if (nf < *fin_lo)
                *fin_lo = nf;
        }
        for (uint32_t c = 0; c < t->n_comms; c++) {
            if (t->comms[c].is_self)
                continue;
            if (!comms[c].known) {
                comms[c].rank = ws_sync_comm_rank(t, &ranks, c, loc);
                comms[c].known = 1;
            }
            if (comms[c].rank == WS_NONE32)
                continue;
            local_members[c]++;
            uint64_t cnt = comms[c].count;
            if (cnt > hi[c])
                hi[c] = cnt;
            if (cnt < lo[c])
                lo[c] = cnt;
        }
    }
    /* everything so far was local: agree before the collective steps */
    if ((rc = ws_agree_status(tr, rc, err)))
        goto fail;
    if ((rc = tr->ops->allreduce_u64(tr, hi, n_half, WS_MAX, err)) ||
        (rc = tr->ops->allreduce_u64(tr, lo, n_half, WS_MIN, err)))
        goto fail;
    for (uint32_t c = 0; c < t->n_comms; c++) {
        if (lo[c] != none && hi[c] != lo[c]) {
            char label[320];
            rc = ws_error_set(err, WS_ERR_MATCH,
                              "%s: its members take part in different numbers of collective "
                              "operations (%llu and %llu): the trace is incomplete or inconsistent",
                              ws_trace_comm_label(t, c, label, sizeof label), (unsigned long long)lo[c],
                              (unsigned long long)hi[c]);
            goto fail;
        }
    }
    /* MPI_Init and MPI_Finalize synchronize all locations only when every
     * location has the same number of them */
    int init_ok = *init_hi == *init_lo, fin_ok = *fin_hi == *fin_lo;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t loc = locs[i];
        ws_loc_sync *ls = &s->locs[loc];
        if (!init_ok)
            drop_sites(ls, WS_SITE_INIT);
        if (!fin_ok)
            drop_sites(ls, WS_SITE_FINALIZE);
    }
    s->comm_local = local_members;
    local_members = NULL;
    if (!(s->comm_members = ws_malloc_array((size_t)t->n_comms + 2, sizeof *s->comm_members))) {
        rc = ws_error_nomem(err, "synchronization data");
        goto fail;
    }
    for (uint32_t c = 0; c < t->n_comms; c++)
        s->comm_members[c] = t->comms[c].size;
    s->comm_members[t->n_comms] = s->comm_members[t->n_comms + 1] = t->world_size;
    s->n_comms = t->n_comms;
    s->n_local = n;
    s->n_local_mpi = n_mpi;
    if ((rc = match_messages(t, s, locs, n, tr, err)))
        goto fail;
    free(comms);
    ws_map64_free(&ranks);
    free(counts);
    free(local);
    free(local_members);
    *out = s;
    return WS_OK;
fail:
    free(comms);
    ws_map64_free(&ranks);
    free(counts);
    free(local);
    free(local_members);
    ws_sync_free(s);
    return rc;
}
