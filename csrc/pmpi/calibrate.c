/* The profile's no-wait baselines, measured at MPI_Finalize.
 *
 * The estimates of Mao et al. (EuroMPI/ASIA 2014) take the fastest call of
 * a category (MPI function, message-size class) on a rank for the duration
 * of a call that did not wait.  A rank that waits in every call of a
 * category (a static imbalance: the same rank always late) has no such
 * call, and its waiting is taken for processing time.  So the library
 * measures the no-wait duration itself: at MPI_Finalize, after the trace's
 * last record, each rank repeats every point-to-point category it had
 * (MPI_Recv, MPI_Sendrecv, MPI_Wait, MPI_Waitall with the mean message
 * size of the category; MPI_Ssend, MPI_Send) a few times with each partner it had in
 * it (at most WS_CAL_PARTNERS), arranged so that the partner is surely
 * there first:
 *
 *   measurer                           helper (the partner)
 *   (MPI_Wait/Waitall: Irecv DATA)
 *   Send READY                   ->    Recv READY
 *                                      (Sendrecv, Ssend, Send: Irecv BACK)
 *                                      (Recv, Wait(all), Sendrecv: Isend DATA)
 *   Recv GO                      <-    Send GO
 *   t0; the call; t1                   Waitall
 *
 * An eager message has arrived when GO has (both MPIs deliver one pair's
 * messages in order); a rendezvous one finds its sender waiting; an
 * MPI_Ssend or MPI_Send finds its receive posted.  The first repetition warms up and
 * is not counted.  Per category the rank keeps the number of samples,
 * their minimum, median and maximum (ws_cal_need); the profile writes
 * them (docs/measuring.md), and the "calibrated" estimates take the
 * median for the no-wait duration.
 *
 * Pairs are worked through in one global order, (min rank, max rank)
 * ascending, and within a pair the lower rank's categories first: the
 * smallest unfinished pair always has both its ranks at it, so the
 * handshakes cannot deadlock.  Everything is PMPI on the library's
 * duplicate of MPI_COMM_WORLD.  Collectives are not calibrated: their
 * estimates use the minimum over all ranks, and in every collective call
 * some rank is the last to arrive and does not wait. */
#include "pmpi.h"

#include <stdlib.h>
#include <string.h>

enum { TAG_READY = 31001, TAG_GO, TAG_DATA, TAG_BACK, TAG_OK };

#define MAX_BYTES (64u << 20) /* larger categories are calibrated at this size */

typedef struct request {
    int fn, bytes;
} request;

static int reps_for(int bytes)
{
    return bytes <= (1 << 20) ? 9 : 3; /* the first is a warm-up */
}

static int bytes_of(const ws_cal_need *e)
{
    double mean = e->count ? e->bytes / (double)e->count : 0.0;
    if (mean < 1.0)
        mean = 1.0;
    return mean > (double)MAX_BYTES ? (int)MAX_BYTES : (int)mean;
}

/* One repetition as the rank that measures; returns the call's duration (s). */
static double measure_once(MPI_Comm comm, int helper, const request *q, char *buf, char *back)
{
    MPI_Request r = MPI_REQUEST_NULL;
    MPI_Status st;
    if (q->fn == WF_WAIT || q->fn == WF_WAITALL)
        PMPI_Irecv(buf, q->bytes, MPI_BYTE, helper, TAG_DATA, comm, &r);
    PMPI_Send(NULL, 0, MPI_BYTE, helper, TAG_READY, comm);
    PMPI_Recv(NULL, 0, MPI_BYTE, helper, TAG_GO, comm, MPI_STATUS_IGNORE);
    uint64_t t0 = ws_now();
    switch (q->fn) {
    case WF_RECV:
        PMPI_Recv(buf, q->bytes, MPI_BYTE, helper, TAG_DATA, comm, &st);
        break;
    case WF_WAIT:
        PMPI_Wait(&r, &st);
        break;
    case WF_WAITALL:
        PMPI_Waitall(1, &r, &st);
        break;
    case WF_SENDRECV:
        PMPI_Sendrecv(back, q->bytes, MPI_BYTE, helper, TAG_BACK, buf, q->bytes, MPI_BYTE, helper, TAG_DATA, comm, &st);
        break;
    case WF_SSEND:
        PMPI_Ssend(back, q->bytes, MPI_BYTE, helper, TAG_BACK, comm);
        break;
    case WF_SEND:
        PMPI_Send(back, q->bytes, MPI_BYTE, helper, TAG_BACK, comm);
        break;
    default:
        break;
    }
    return (double)(ws_now() - t0) * 1e-9;
}

/* One repetition as the partner that helps. */
static void help_once(MPI_Comm comm, int measurer, const request *q, char *buf, char *back)
{
    MPI_Request r[2];
    MPI_Status st[2];
    int n = 0;
    PMPI_Recv(NULL, 0, MPI_BYTE, measurer, TAG_READY, comm, MPI_STATUS_IGNORE);
    int sends = q->fn == WF_SSEND || q->fn == WF_SEND;
    if (q->fn == WF_SENDRECV || sends)
        PMPI_Irecv(back, q->bytes, MPI_BYTE, measurer, TAG_BACK, comm, &r[n++]);
    if (!sends)
        PMPI_Isend(buf, q->bytes, MPI_BYTE, measurer, TAG_DATA, comm, &r[n++]);
    PMPI_Send(NULL, 0, MPI_BYTE, measurer, TAG_GO, comm);
    PMPI_Waitall(n, r, st);
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The category of this rank that request `q` of partner `peer` came from. */
static ws_cal_need *need_of(ws_profiler *p, const request *q, int peer)
{
    for (size_t i = 0; i < p->n_needs; i++) {
        ws_cal_need *e = &p->needs[i];
        if (e->fn != q->fn || bytes_of(e) != q->bytes)
            continue;
        for (int k = 0; k < e->n_partners; k++)
            if (e->partner[k] == peer)
                return e;
    }
    return NULL;
}

/* The samples of each category, in the order of p->needs. */
typedef struct samples {
    double *v;
    size_t n, cap;
} samples;

static void add_sample(samples *s, double v)
{
    if (ws_grow((void **)&s->v, &s->cap, s->n + 1, sizeof *s->v) == 0)
        s->v[s->n++] = v;
}

/* The requests of a list of (fn, bytes) ints. */
static request *requests_of(const int *ints, int n)
{
    request *q = malloc(((size_t)n + 1) * sizeof *q);
    for (int i = 0; q && i < n; i++)
        q[i] = (request){ints[2 * i], ints[2 * i + 1]};
    return q;
}

/* Works through pair (me, peer): first the lower rank's requests. */
static void pair(ws_profiler *p, samples *found, MPI_Comm comm, int me, int peer, const int *mine_ints, int n_mine,
                 const int *their_ints, int n_theirs)
{
    request *mine = requests_of(mine_ints, n_mine), *theirs = requests_of(their_ints, n_theirs);
    int need = 1;
    for (int i = 0; i < n_mine; i++)
        if (mine[i].bytes > need)
            need = mine[i].bytes;
    for (int i = 0; i < n_theirs; i++)
        if (theirs[i].bytes > need)
            need = theirs[i].bytes;
    char *buf = malloc((size_t)need), *back = malloc((size_t)need);
    int ok = buf && back && mine && theirs, both = 0;
    /* both sides must agree: a rank without its buffers skips the pair */
    PMPI_Sendrecv(&ok, 1, MPI_INT, peer, TAG_OK, &both, 1, MPI_INT, peer, TAG_OK, comm, MPI_STATUS_IGNORE);
    if (ok && both) {
        memset(buf, 0, (size_t)need);
        memset(back, 0, (size_t)need);
        for (int turn = 0; turn < 2; turn++) {
            int measuring = (turn == 0) == (me < peer);
            const request *list = measuring ? mine : theirs;
            int n = measuring ? n_mine : n_theirs;
            for (int i = 0; i < n; i++) {
                ws_cal_need *e = measuring ? need_of(p, &list[i], peer) : NULL;
                for (int k = 0, reps = reps_for(list[i].bytes); k < reps; k++) {
                    if (!measuring) {
                        help_once(comm, peer, &list[i], buf, back);
                        continue;
                    }
                    double d = measure_once(comm, peer, &list[i], buf, back);
                    if (k > 0 && e)
                        add_sample(&found[e - p->needs], d);
                }
            }
        }
    }
    free(buf);
    free(back);
    free(mine);
    free(theirs);
}

void ws_calibrate(ws_profiler *p, MPI_Comm comm, int rank, int size)
{
    int *send_n = calloc((size_t)size, sizeof *send_n), *recv_n = calloc((size_t)size, sizeof *recv_n);
    int *send_at = calloc((size_t)size, sizeof *send_at), *recv_at = calloc((size_t)size, sizeof *recv_at);
    samples *found = calloc(p->n_needs + 1, sizeof *found);
    int ok = send_n && recv_n && send_at && recv_at && found, all_ok = 0;
    PMPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, comm);
    int *out = NULL, *in = NULL, *peers = NULL;
    if (!all_ok)
        goto done;
    /* what this rank asks each partner for, as (fn, bytes) pairs of ints */
    for (size_t i = 0; i < p->n_needs; i++)
        for (int k = 0; k < p->needs[i].n_partners; k++)
            send_n[p->needs[i].partner[k]] += 2;
    PMPI_Alltoall(send_n, 1, MPI_INT, recv_n, 1, MPI_INT, comm);
    int total_out = 0, total_in = 0;
    for (int r = 0; r < size; r++) {
        send_at[r] = total_out;
        recv_at[r] = total_in;
        total_out += send_n[r];
        total_in += recv_n[r];
    }
    out = malloc(((size_t)total_out + 1) * sizeof(int));
    in = malloc(((size_t)total_in + 1) * sizeof(int));
    peers = malloc(((size_t)size + 1) * sizeof *peers);
    int *fill = calloc((size_t)size, sizeof *fill);
    ok = out && in && peers && fill;
    PMPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, comm);
    if (!all_ok) {
        free(fill);
        goto done;
    }
    int *o = out;
    for (size_t i = 0; i < p->n_needs; i++)
        for (int k = 0; k < p->needs[i].n_partners; k++) {
            int r = p->needs[i].partner[k];
            o[send_at[r] + fill[r]++] = p->needs[i].fn;
            o[send_at[r] + fill[r]++] = bytes_of(&p->needs[i]);
        }
    free(fill);
    PMPI_Alltoallv(out, send_n, send_at, MPI_INT, in, recv_n, recv_at, MPI_INT, comm);
    /* the partners, lower ranks first (the pairs' global order from this rank's side) */
    int n_peers = 0;
    for (int r = 0; r < size; r++)
        if (r != rank && (send_n[r] || recv_n[r]))
            peers[n_peers++] = r;
    for (int i = 0; i < n_peers; i++) {
        int r = peers[i];
        pair(p, found, comm, rank, r, out + send_at[r], send_n[r] / 2, in + recv_at[r], recv_n[r] / 2);
    }
    for (size_t i = 0; i < p->n_needs; i++) {
        samples *s = &found[i];
        ws_cal_need *e = &p->needs[i];
        if (!s->n)
            continue;
        qsort(s->v, s->n, sizeof *s->v, by_value);
        e->n_samples = (uint32_t)s->n;
        e->min = s->v[0];
        e->max = s->v[s->n - 1];
        e->median = s->n % 2 ? s->v[s->n / 2] : 0.5 * (s->v[s->n / 2 - 1] + s->v[s->n / 2]);
    }
done:
    if (found)
        for (size_t i = 0; i < p->n_needs; i++)
            free(found[i].v);
    free(found);
    free(out);
    free(in);
    free(peers);
    free(send_n);
    free(recv_n);
    free(send_at);
    free(recv_at);
}
