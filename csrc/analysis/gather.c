/* The parallel mode's last step: every process's share of a result moved
 * to process 0 with the transport's collectives (ws_result_gather,
 * waitscope.h). */
#include "analysis.h"

#include "../common/util.h"
#include "../replay/transport.h"

#include <stdlib.h>
#include <string.h>

static int cmp_segment(const void *x, const void *y)
{
    const ws_path_segment *a = x, *b = y;
    if (a->start != b->start)
        return a->start < b->start ? -1 : 1;
    return (a->end > b->end) - (a->end < b->end);
}

/* Orders the gathered path as a stable sort by cmp_segment would (ties:
 * the earlier process first): every process's pieces arrive sorted
 * (ws_derive_critical_path), so the blocks are merged, two at a time, in
 * O(n log P).  A block out of order falls back to qsort.  Returns -1
 * without memory. */
static int order_path(ws_path_segment *path, const size_t *counts, uint32_t nprocs, size_t n)
{
    size_t off = 0;
    for (uint32_t p = 0; p < nprocs; p++) {
        for (size_t i = off + 1; i < off + counts[p]; i++)
            if (cmp_segment(&path[i - 1], &path[i]) > 0) {
                qsort(path, n, sizeof *path, cmp_segment);
                return 0;
            }
        off += counts[p];
    }
    size_t *bounds = ws_malloc_array((size_t)nprocs + 1, sizeof *bounds);
    ws_path_segment *tmp = ws_malloc_array(n ? n : 1, sizeof *tmp);
    if (!bounds || !tmp) {
        free(bounds);
        free(tmp);
        return -1;
    }
    size_t nb = 0;
    bounds[0] = 0;
    for (uint32_t p = 0; p < nprocs; p++)
        if (counts[p])
            bounds[nb + 1] = bounds[nb] + counts[p], nb++;
    ws_path_segment *from = path, *to = tmp;
    while (nb > 1) {
        size_t out = 0, k = 0;
        for (size_t b = 0; b < nb; b += 2, k++) {
            size_t lo = bounds[b], mid = bounds[b + 1], hi = b + 2 <= nb ? bounds[b + 2] : mid;
            size_t i = lo, j = mid;
            while (i < mid && j < hi)
                to[out++] = cmp_segment(&from[j], &from[i]) < 0 ? from[j++] : from[i++];
            while (i < mid)
                to[out++] = from[i++];
            while (j < hi)
                to[out++] = from[j++];
            bounds[k] = lo;
        }
        bounds[k] = n;
        nb = k;
        ws_path_segment *swap = from;
        from = to;
        to = swap;
    }
    if (from != path)
        memcpy(path, from, n * sizeof *path);
    free(tmp);
    free(bounds);
    return 0;
}

/* Gathers `count` items of `item` bytes from every process to process 0:
 * *out (malloc'ed) and *total there, NULL and 0 elsewhere; per_process[p]
 * (on process 0) the items process p gave. */
static int gather_items(ws_transport *tr, const void *data, size_t count, size_t item, void **out, size_t *total,
                        size_t *per_process, ws_error *err)
{
    int rc = tr->ops->gather(tr, data, count * item, 0, out, per_process, err);
    *total = 0;
    if (rc == WS_OK && *out)
        for (uint32_t p = 0; p < tr->n_processes; p++) {
            per_process[p] /= item;
            *total += per_process[p];
        }
    return rc;
}

int ws_result_gather(ws_result *r, ws_transport *tr, ws_error *err)
{
    if (!r || !tr)
        return ws_error_set(err, WS_ERR_ARGUMENT, "ws_result_gather: %s is NULL", r ? "transport" : "result");
    uint32_t nprocs = tr->n_processes ? tr->n_processes : 1;
    size_t *rec_counts = ws_calloc(nprocs, sizeof *rec_counts), *ent_counts = ws_calloc(nprocs, sizeof *ent_counts);
    size_t *scratch = ws_calloc(nprocs, sizeof *scratch), *path_counts = ws_calloc(nprocs, sizeof *path_counts);
    ws_path_segment *path = NULL;
    ws_delay_record *records = NULL;
    uint32_t *cps = NULL;
    double *values = NULL;
    ws_wait_record *waits = NULL;
    int failed = !rec_counts || !ent_counts || !scratch || !path_counts;
    if (failed)
        ws_error_nomem(err, "gathering the result");
    int rc = WS_OK;
    if (tr->ops->agree(tr, failed, err)) {
        rc = err->code ? err->code : WS_ERR_INTERNAL;
        goto done;
    }
    size_t cells = (size_t)r->n_metrics * r->n_callpaths * r->n_locations;
    size_t n_path = 0, n_rec = 0, n_ent = 0, n_wait = 0;
    if ((rc = tr->ops->reduce_f64(tr, r->cube, cells, WS_SUM, err)) ||
        (rc = tr->ops->allreduce_u64(tr, r->clock_violations, r->n_locations, WS_SUM, err)) ||
        /* critical-path pieces, delay records and their vectors */
        (rc = gather_items(tr, r->path, r->n_path, sizeof *r->path, (void **)&path, &n_path, path_counts, err)) ||
        (rc = gather_items(tr, r->records, r->n_records, sizeof *r->records, (void **)&records, &n_rec, rec_counts,
                           err)) ||
        (rc = gather_items(tr, r->record_cp, r->n_entries, sizeof *r->record_cp, (void **)&cps, &n_ent, scratch,
                           err)) ||
        (rc = gather_items(tr, r->record_value, r->n_entries, sizeof *r->record_value, (void **)&values, &n_ent,
                           ent_counts, err)) ||
        /* wait-state records, each process's sorted */
        (r->has_wait_records && (rc = gather_items(tr, r->wait_records, r->n_wait_records, sizeof *r->wait_records,
                                                   (void **)&waits, &n_wait, scratch, err))))
        goto done;
    /* the path's start is known where the path began */
    if ((rc = tr->ops->allreduce_f64(tr, &r->path_start, 1, WS_MIN, err)))
        goto done;
    if (tr->process == 0) {
        /* vector offsets are relative to each process's entries */
        size_t rec = 0, base = 0;
        for (uint32_t p = 0; p < nprocs; p++) {
            for (size_t i = 0; i < rec_counts[p]; i++)
                records[rec + i].vector_offset += base;
            rec += rec_counts[p];
            base += ent_counts[p];
        }
        /* every delay record's vector lies in the gathered entries */
        if ((rc = WS_CHECK(rec == n_rec && base == n_ent, err)) != WS_OK)
            goto done;
        if (order_path(path, path_counts, nprocs, n_path) != 0) {
            rc = ws_error_nomem(err, "gathering the critical path");
            goto done;
        }
        free(r->path);
        r->path = path;
        r->n_path = r->cap_path = n_path;
        path = NULL;
        free(r->records);
        r->records = records;
        r->n_records = r->cap_records = n_rec;
        records = NULL;
        free(r->record_cp);
        free(r->record_value);
        r->record_cp = cps;
        r->record_value = values;
        r->n_entries = r->cap_entries = n_ent;
        cps = NULL;
        values = NULL;
        if (r->has_wait_records) {
            ws_wait_records_sort(waits, n_wait);
            free(r->wait_records);
            r->wait_records = waits;
            r->n_wait_records = r->cap_wait_records = n_wait;
            waits = NULL;
        }
    }
done:
    free(rec_counts);
    free(ent_counts);
    free(scratch);
    free(path_counts);
    free(path);
    free(records);
    free(cps);
    free(values);
    free(waits);
    return rc;
}
