/* The MPI transport's collectives over all processes (transport.h):
 * the agreement on a failure, the reductions, the gathers and the record
 * exchange.  Every process calls each in the same order, outside the
 * replays' traffic (their own communicator's collectives). */
#include "transport_mpi_int.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/util.h"

int ws_mpi_agree(ws_transport *t, int failed, ws_error *err)
{
    mpi_transport *m = self_of(t);
    int flag = failed ? 1 : 0, any = 0;
    MPI_Allreduce(&flag, &any, 1, MPI_INT, MPI_MAX, m->comm);
    if (!any)
        return 0;
    m->agreed_failure = 1;
    /* the lowest failing process tells its message */
    int mine = failed ? m->rank : m->size, first = 0;
    MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, m->comm);
    char text[sizeof err->message];
    memset(text, 0, sizeof text);
    if (m->rank == first)
        snprintf(text, sizeof text, "%s", err->message);
    MPI_Bcast(text, (int)sizeof text, MPI_CHAR, first, m->comm);
    if (!failed)
        ws_error_set(err, WS_ERR_MATCH, "%s", text);
    return 1;
}

static MPI_Op op_of(int op)
{
    return op == WS_MAX ? MPI_MAX : op == WS_MIN ? MPI_MIN : MPI_SUM;
}

static int allreduce(ws_transport *t, void *values, size_t n, MPI_Datatype type, int op, ws_error *err)
{
    mpi_transport *m = self_of(t);
    if (n == 0)
        return WS_OK;
    int rc = MPI_Allreduce(MPI_IN_PLACE, values, (int)n, type, op_of(op), m->comm);
    return rc == MPI_SUCCESS ? WS_OK : mpi_error(err, rc, "MPI_Allreduce");
}

int ws_mpi_allreduce_u64(ws_transport *t, uint64_t *values, size_t n, int op, ws_error *err)
{
    return allreduce(t, values, n, MPI_UINT64_T, op, err);
}

int ws_mpi_allreduce_f64(ws_transport *t, double *values, size_t n, int op, ws_error *err)
{
    return allreduce(t, values, n, MPI_DOUBLE, op, err);
}

int ws_mpi_exchange(ws_transport *t, const void *records, size_t record_size, const uint32_t *dest, size_t n,
                      void **out, size_t *n_out, ws_error *err)
{
    mpi_transport *m = self_of(t);
    int P = m->size;
    int *send_counts = ws_calloc((size_t)P, sizeof *send_counts), *recv_counts = ws_calloc((size_t)P, sizeof *recv_counts);
    int *send_displs = ws_calloc((size_t)P, sizeof *send_displs), *recv_displs = ws_calloc((size_t)P, sizeof *recv_displs);
    unsigned char *sorted = ws_malloc_array(n ? n : 1, record_size);
    size_t *fill = ws_calloc((size_t)P, sizeof *fill);
    int rc = WS_OK;
    if (!send_counts || !recv_counts || !send_displs || !recv_displs || !sorted || !fill) {
        rc = ws_error_nomem(err, "record exchange");
        goto done;
    }
    for (size_t i = 0; i < n; i++)
        send_counts[m->owner[dest[i]]] += (int)record_size;
    for (int p = 1; p < P; p++)
        send_displs[p] = send_displs[p - 1] + send_counts[p - 1];
    for (size_t i = 0; i < n; i++) {
        int p = (int)m->owner[dest[i]];
        memcpy(sorted + send_displs[p] + fill[p], (const unsigned char *)records + i * record_size, record_size);
        fill[p] += record_size;
    }
    int mr = MPI_Alltoall(send_counts, 1, MPI_INT, recv_counts, 1, MPI_INT, m->comm);
    if (mr != MPI_SUCCESS) {
        rc = mpi_error(err, mr, "MPI_Alltoall");
        goto done;
    }
    size_t total = 0;
    for (int p = 0; p < P; p++) {
        recv_displs[p] = (int)total;
        total += (size_t)recv_counts[p];
    }
    *out = ws_malloc(total ? total : 1);
    if (!*out) {
        rc = ws_error_nomem(err, "record exchange");
        goto done;
    }
    mr = MPI_Alltoallv(sorted, send_counts, send_displs, MPI_BYTE, *out, recv_counts, recv_displs, MPI_BYTE, m->comm);
    if (mr != MPI_SUCCESS) {
        free(*out);
        *out = NULL;
        rc = mpi_error(err, mr, "MPI_Alltoallv");
        goto done;
    }
    *n_out = total / record_size;
done:
    free(send_counts);
    free(recv_counts);
    free(send_displs);
    free(recv_displs);
    free(sorted);
    free(fill);
    return rc;
}

/* ws_mpi_gather, and with `own_apart` (not to_all) the root's own bytes
 * left out of *out (they are at hand: ws_mpi_gather_apply). */
static int gather(mpi_transport *m, const void *data, size_t size, int to_all, int own_apart, void **out,
                  size_t *sizes, ws_error *err)
{
    ws_transport *t = &m->base;
    *out = NULL;
    int receiver = to_all || m->rank == 0;
    int *counts = receiver ? ws_calloc((size_t)m->size, sizeof *counts) : NULL;
    int *displs = receiver ? ws_calloc((size_t)m->size, sizeof *displs) : NULL;
    int failed = size > INT_MAX || (receiver && (!counts || !displs));
    if (failed)
        ws_error_set(err, size > INT_MAX ? WS_ERR_ARGUMENT : WS_ERR_NOMEM, "gathering %zu bytes of results failed%s",
                     size, size > INT_MAX ? ": more than one MPI message holds" : ": out of memory");
    /* every process learns of a failure anywhere, so none waits in the
     * collectives below for one that gave up */
    if (ws_mpi_agree(t, failed, err))
        goto fail;
    int bytes = (int)size;
    int rc = to_all ? MPI_Allgather(&bytes, 1, MPI_INT, counts, 1, MPI_INT, m->comm)
                    : MPI_Gather(&bytes, 1, MPI_INT, counts, 1, MPI_INT, 0, m->comm);
    if (rc != MPI_SUCCESS) {
        mpi_error(err, rc, to_all ? "MPI_Allgather" : "MPI_Gather");
        goto fail;
    }
    if (receiver) {
        size_t total = 0;
        for (int p = 0; p < m->size; p++) {
            sizes[p] = (size_t)counts[p];
            if (own_apart && p == m->rank)
                counts[p] = 0;
            displs[p] = (int)total;
            total += (size_t)counts[p];
        }
        failed = total > INT_MAX || !(*out = ws_malloc(total ? total : 1));
        if (failed)
            ws_error_set(err, WS_ERR_NOMEM, "gathering %zu bytes of results failed: %s", total,
                         total > INT_MAX ? "more than one MPI message holds" : "out of memory");
    }
    if (ws_mpi_agree(t, failed, err))
        goto fail;
    if (own_apart && m->rank == 0)
        bytes = 0;
    rc = to_all ? MPI_Allgatherv(data, bytes, MPI_BYTE, *out, counts, displs, MPI_BYTE, m->comm)
                : MPI_Gatherv(data, bytes, MPI_BYTE, *out, counts, displs, MPI_BYTE, 0, m->comm);
    if (rc != MPI_SUCCESS) {
        mpi_error(err, rc, to_all ? "MPI_Allgatherv" : "MPI_Gatherv");
        goto fail;
    }
    free(counts);
    free(displs);
    return WS_OK;
fail:
    free(*out);
    *out = NULL;
    free(counts);
    free(displs);
    return err->code ? err->code : WS_ERR_INTERNAL;
}

int ws_mpi_gather(ws_transport *t, const void *data, size_t size, int to_all, void **out, size_t *sizes,
                  ws_error *err)
{
    return gather(self_of(t), data, size, to_all, 0, out, sizes, err);
}

/* Process 0 reads its own piece in place and receives only the others'
 * (the path walk's items on the 2-rank barrier trace: 19 of 38 MB not
 * copied, nor their fresh pages touched). */
int ws_mpi_gather_apply(ws_transport *t, const void *data, size_t size, ws_gather_fn fn, void *ctx, ws_error *err)
{
    mpi_transport *m = self_of(t);
    size_t *sizes = ws_calloc((size_t)m->size, sizeof *sizes);
    const void **pieces = ws_calloc((size_t)m->size, sizeof *pieces);
    void *others = NULL;
    int failed = !sizes || !pieces;
    if (failed)
        ws_error_nomem(err, "gathered data");
    int rc = ws_mpi_agree(t, failed, err) ? (err->code ? err->code : WS_ERR_INTERNAL) : WS_OK;
    if (rc == WS_OK)
        rc = gather(m, data, size, 0, 1, &others, sizes, err);
    if (rc == WS_OK && m->rank == 0) {
        size_t off = 0;
        for (int p = 0; p < m->size; p++) {
            pieces[p] = p == 0 ? data : (const unsigned char *)others + off;
            if (p)
                off += sizes[p];
        }
        rc = fn(ctx, pieces, sizes, err);
    }
    free(others);
    free(sizes);
    free(pieces);
    return rc;
}

int ws_mpi_reduce_f64(ws_transport *t, double *values, size_t n, int op, ws_error *err)
{
    mpi_transport *m = self_of(t);
    const size_t chunk = (size_t)1 << 24;
    for (size_t off = 0; off < n; off += chunk) {
        int k = (int)(n - off < chunk ? n - off : chunk);
        int rc = m->rank == 0 ? MPI_Reduce(MPI_IN_PLACE, values + off, k, MPI_DOUBLE, op_of(op), 0, m->comm)
                              : MPI_Reduce(values + off, NULL, k, MPI_DOUBLE, op_of(op), 0, m->comm);
        if (rc != MPI_SUCCESS)
            return mpi_error(err, rc, "MPI_Reduce");
    }
    return WS_OK;
}
