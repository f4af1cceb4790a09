/* halo2d.c - 2D halo exchange with non-blocking point to point and a
 * tunable load imbalance.
 *
 * What it does
 *   The ranks form a non-periodic 2D Cartesian grid (MPI_Dims_create,
 *   MPI_Cart_create).  Every iteration each rank
 *     1. computes: a small Jacobi sweep on its block plus a sleep of
 *        WORK ms, and EXTRA ms more if it is the slow rank of this
 *        iteration (see SCHEDULE);
 *     2. exchanges halos with its up to four neighbours:
 *        MPI_Irecv x n, MPI_Isend x n, MPI_Waitall (with -m wait: MPI_Wait on
 *        each request in turn, receives first).
 *   Call path of the waiting: main/solver/exchange_halos/MPI_Waitall (or
 *   .../MPI_Wait).
 *
 * Build (one binary per MPI; -rdynamic keeps function names visible to
 * the call-stack unwinder of the waitscope interposition library):
 *   mpicc.mpich   -O2 -g -fno-optimize-sibling-calls -rdynamic -o halo2d.mpich   halo2d.c
 *   mpicc.openmpi -O2 -g -fno-optimize-sibling-calls -rdynamic -o halo2d.openmpi halo2d.c
 *   (or: make -C examples)
 * Run:
 *   mpiexec.mpich -n 4 ./halo2d.mpich [-k ITERS] [-w WORK_MS] [-x EXTRA_MS]
 *                                     [-s rotate|fixed=R|none] [-n HALO_DOUBLES]
 *                                     [-m waitall|wait]
 *   waitscope trace --profile -- mpiexec.mpich -n 4 ./halo2d.mpich -x 4
 *
 * Defaults: 40 iterations, WORK = 1 ms, EXTRA = 4 ms, schedule rotate,
 * halos of 128 doubles (1 KiB: sent eagerly by both MPIs).
 *
 * SCHEDULE: "rotate" makes rank (k mod P) slow in iteration k (a dynamic
 * imbalance: every rank has iterations without waiting, which the
 * minimum-based profile estimates need); "fixed=R" makes rank R slow in
 * every iteration (a static imbalance); "none" has no slow rank.
 *
 * The injected waiting
 *   Rank 0 prints "waitscope-nominal mpi_latesender=..." from the formula
 *   below and "waitscope-expected mpi_latesender=..." from what the ranks
 *   measured: each stamps (CLOCK_MONOTONIC, one clock on a node) the start
 *   of its sends and the start and end of its completion calls; after the
 *   loop rank 0 gathers the stamps and sums Scalasca's definition,
 *   min(latest neighbour's send, end) - start for a Waitall, min(the
 *   neighbour's send, end) - start for each MPI_Wait, when positive.  The two
 *   agree on an idle machine; on a loaded one the scheduler stretches
 *   sleeps and delays the return from busy-polling waits, which shifts the
 *   waiting by more than the imbalance asked for, and a trace must find
 *   the measured amount.
 *   The formula:
 *   Let w_r(k) = WORK + EXTRA*[r slow in k] and T_r(k) the time rank r
 *   leaves MPI_Waitall of iteration k (T_r(0) = 0: all ranks leave the
 *   barrier after MPI_Init together).  Rank r posts its sends when its
 *   compute ends, at T_r(k-1) + w_r(k), and its Waitall returns when the
 *   last neighbour's message is sent:
 *       T_r(k) = max_{n in {r} u N(r)} ( T_n(k-1) + w_n(k) ).
 *   Scalasca's Late Sender for a Waitall is the largest lateness of the
 *   sends it completes, max(0, max_n(send enter) - Waitall enter), so
 *       LS_r(k) = T_r(k) - (T_r(k-1) + w_r(k))
 *   and the injected Late Sender waiting is sum_{r,k} LS_r(k) (with -m wait
 *   the same: the first MPI_Wait that waits returns at the latest send of
 *   the receives before it, the later ones wait for the rest), computed by
 *   rank 0 with this recurrence (communication costs, microseconds, are
 *   neglected against the milliseconds of work).  Special cases:
 *   fixed=R gives EXTRA * sum_{r != R} (ITERS - d(r, R) + 1), d the grid
 *   distance (the delay reaches a rank at distance d in iteration d and
 *   costs it EXTRA in that and every later iteration); rotate on P = 2
 *   gives ITERS * EXTRA (the other rank waits in every iteration).
 */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

typedef struct {
    int iters;
    double work_ms;
    double extra_ms;
    int fixed_rank; /* -1: rotate, -2: none */
    int halo;
    int wait_each; /* complete with MPI_Wait per request instead of MPI_Waitall */
} options;

typedef struct {
    MPI_Comm cart;
    int rank, size;
    int nbr[4]; /* up, down, left, right (MPI_PROC_NULL at the border) */
    double *field, *next, *send[4], *recv[4];
    int n; /* block edge */
} domain;

static int slow_rank(const options *o, int k, int size)
{
    if (o->fixed_rank == -2 || o->extra_ms <= 0)
        return -1;
    return o->fixed_rank >= 0 ? o->fixed_rank : k % size;
}

NOINLINE void sleep_ms(double ms)
{
    if (ms <= 0)
        return;
    struct timespec ts = {(time_t)(ms / 1000.0), (long)((ms - 1000.0 * (time_t)(ms / 1000.0)) * 1e6)};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

NOINLINE void compute(domain *d, double ms)
{
    int n = d->n;
    for (int i = 1; i < n - 1; i++)
        for (int j = 1; j < n - 1; j++)
            d->next[i * n + j] = 0.25 * (d->field[(i - 1) * n + j] + d->field[(i + 1) * n + j] +
                                         d->field[i * n + j - 1] + d->field[i * n + j + 1]);
    double *t = d->field;
    d->field = d->next;
    d->next = t;
    sleep_ms(ms);
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

#define STAMPS 11
/* stamp[0]: before the sends, stamp[1]: before the completion, stamp[2]: after it;
 * with wait_each, stamp[3 + 2s], stamp[4 + 2s]: start and end of MPI_Wait on the receive from side s */
NOINLINE void exchange_halos(domain *d, int count, int wait_each, double stamp[STAMPS])
{
    MPI_Request req[8];
    MPI_Status status[8];
    int nreq = 0;
    for (int s = 0; s < 4; s++)
        MPI_Irecv(d->recv[s], count, MPI_DOUBLE, d->nbr[s], 0, d->cart, &req[nreq++]);
    for (int s = 0; s < 4; s++)
        for (int i = 0; i < count; i++)
            d->send[s][i] = d->field[(i % d->n) * d->n + s];
    stamp[0] = now();
    for (int s = 0; s < 4; s++)
        MPI_Isend(d->send[s], count, MPI_DOUBLE, d->nbr[s], 0, d->cart, &req[nreq++]);
    stamp[1] = now();
    if (wait_each)
        for (int i = 0; i < nreq; i++) {
            if (i < 4)
                stamp[3 + 2 * i] = now();
            MPI_Wait(&req[i], &status[i]);
            if (i < 4)
                stamp[4 + 2 * i] = now();
        }
    else
        MPI_Waitall(nreq, req, status);
    stamp[2] = now();
}

/* stamps[STAMPS(k-1) ...]: the stamps of iteration k's exchange */
NOINLINE void solver(domain *d, const options *o, double *stamps)
{
    for (int k = 1; k <= o->iters; k++) {
        double ms = o->work_ms + (d->rank == slow_rank(o, k, d->size) ? o->extra_ms : 0.0);
        compute(d, ms);
        exchange_halos(d, o->halo, o->wait_each, &stamps[STAMPS * (k - 1)]);
    }
}

/* nbr[4r + s]: neighbour s of rank r (-1: none) */
static int *all_neighbours(MPI_Comm cart, int size)
{
    int *nbr = malloc(sizeof(int) * 4 * (size_t)size);
    int dims[2], periods[2], coords[2];
    MPI_Cart_get(cart, 2, dims, periods, coords);
    for (int r = 0; r < size; r++) {
        int c[2];
        MPI_Cart_coords(cart, r, 2, c);
        const int off[4][2] = {{-1, 0}, {1, 0}, {0, -1}, {0, 1}};
        for (int s = 0; s < 4; s++) {
            int x = c[0] + off[s][0], y = c[1] + off[s][1];
            int nc[2] = {x, y};
            if (x < 0 || y < 0 || x >= dims[0] || y >= dims[1])
                nbr[4 * r + s] = -1;
            else
                MPI_Cart_rank(cart, nc, &nbr[4 * r + s]);
        }
    }
    return nbr;
}

/* The recurrence of the header comment with the nominal WORK and EXTRA;
 * returns the summed Late Sender time (s). */
static double nominal_latesender(const options *o, MPI_Comm cart, int size)
{
    double *t = calloc((size_t)size, sizeof *t), *nt = calloc((size_t)size, sizeof *nt);
    int *nbr = all_neighbours(cart, size);
    double ls = 0;
    for (int k = 1; k <= o->iters; k++) {
        int slow = slow_rank(o, k, size);
#define W(r) (o->work_ms + ((r) == slow ? o->extra_ms : 0.0))
        for (int r = 0; r < size; r++) {
            double own = t[r] + W(r);
            double done = own;
            for (int s = 0; s < 4; s++) {
                int n = nbr[4 * r + s];
                if (n >= 0) {
                    double sent = t[n] + W(n);
                    if (sent > done)
                        done = sent;
                }
            }
            nt[r] = done;
            ls += done - own;
        }
        memcpy(t, nt, sizeof(double) * (size_t)size);
#undef W
    }
    free(t);
    free(nt);
    free(nbr);
    return ls / 1000.0;
}

static double late(double sent, double start, double end)
{
    double stop = sent < end ? sent : end;
    return stop > start ? stop - start : 0.0;
}

/* Scalasca's Late Sender of each exchange from the stamps all ranks took
 * (stamps[r][STAMPS(k-1) + i], CLOCK_MONOTONIC, one clock for the whole
 * node): for MPI_Waitall min(latest neighbour's send, end) - start, for
 * each MPI_Wait min(that neighbour's send, end) - start, when positive. */
static double measured_latesender(const options *o, MPI_Comm cart, int size, const double *stamps)
{
    int *nbr = all_neighbours(cart, size);
    double ls = 0;
#define STAMP(r, k) (&stamps[((size_t)(r) * o->iters + (k)) * STAMPS])
    for (int r = 0; r < size; r++)
        for (int k = 0; k < o->iters; k++) {
            const double *mine = STAMP(r, k);
            double latest = -1;
            for (int s = 0; s < 4; s++) {
                int n = nbr[4 * r + s];
                if (n < 0)
                    continue;
                if (o->wait_each)
                    ls += late(STAMP(n, k)[0], mine[3 + 2 * s], mine[4 + 2 * s]);
                else if (STAMP(n, k)[0] > latest)
                    latest = STAMP(n, k)[0];
            }
            if (!o->wait_each && latest >= 0)
                ls += late(latest, mine[1], mine[2]);
        }
#undef STAMP
    free(nbr);
    return ls;
}

static int parse(int argc, char **argv, options *o)
{
    *o = (options){40, 1.0, 4.0, -1, 128, 0};
    int c;
    while ((c = getopt(argc, argv, "k:w:x:s:n:m:")) != -1) {
        switch (c) {
        case 'm':
            if (strcmp(optarg, "wait") == 0)
                o->wait_each = 1;
            else if (strcmp(optarg, "waitall") == 0)
                o->wait_each = 0;
            else
                return -1;
            break;
        case 'k': o->iters = atoi(optarg); break;
        case 'w': o->work_ms = atof(optarg); break;
        case 'x': o->extra_ms = atof(optarg); break;
        case 'n': o->halo = atoi(optarg); break;
        case 's':
            if (strcmp(optarg, "rotate") == 0)
                o->fixed_rank = -1;
            else if (strcmp(optarg, "none") == 0)
                o->fixed_rank = -2;
            else if (strncmp(optarg, "fixed=", 6) == 0)
                o->fixed_rank = atoi(optarg + 6);
            else
                return -1;
            break;
        default: return -1;
        }
    }
    return (o->iters > 0 && o->halo > 0 && o->work_ms >= 0) ? 0 : -1;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    options o;
    domain d;
    memset(&d, 0, sizeof d);
    MPI_Comm_rank(MPI_COMM_WORLD, &d.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &d.size);
    if (parse(argc, argv, &o) != 0 || o.fixed_rank >= d.size) {
        if (d.rank == 0)
            fprintf(stderr, "usage: halo2d [-k ITERS] [-w WORK_MS] [-x EXTRA_MS] [-s rotate|fixed=R|none] "
                            "[-n HALO_DOUBLES] [-m waitall|wait]\n");
        MPI_Finalize();
        return 2;
    }
    int dims[2] = {0, 0}, periods[2] = {0, 0};
    MPI_Dims_create(d.size, 2, dims);
    MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &d.cart);
    MPI_Cart_shift(d.cart, 0, 1, &d.nbr[0], &d.nbr[1]);
    MPI_Cart_shift(d.cart, 1, 1, &d.nbr[2], &d.nbr[3]);
    d.n = 64;
    d.field = calloc((size_t)d.n * d.n, sizeof(double));
    d.next = calloc((size_t)d.n * d.n, sizeof(double));
    for (int s = 0; s < 4; s++) {
        d.send[s] = calloc((size_t)o.halo, sizeof(double));
        d.recv[s] = calloc((size_t)o.halo, sizeof(double));
    }
    for (int i = 0; i < d.n * d.n; i++)
        d.field[i] = (double)((i * 7 + d.rank) % 13);

    double *stamps = calloc(STAMPS * (size_t)o.iters, sizeof(double));
    double *all = d.rank == 0 ? calloc(STAMPS * (size_t)o.iters * d.size, sizeof(double)) : NULL;
    MPI_Barrier(d.cart);
    double t0 = MPI_Wtime();
    solver(&d, &o, stamps);
    double elapsed = MPI_Wtime() - t0;
    MPI_Gather(stamps, STAMPS * o.iters, MPI_DOUBLE, all, STAMPS * o.iters, MPI_DOUBLE, 0, d.cart);

    if (d.rank == 0) {
        printf("halo2d: %d ranks (%d x %d), %d iterations, work %.3f ms, extra %.3f ms, %.3f s\n", d.size,
               dims[0], dims[1], o.iters, o.work_ms, o.extra_ms, elapsed);
        printf("waitscope-nominal mpi_latesender=%.9f\n", nominal_latesender(&o, d.cart, d.size));
        printf("waitscope-expected mpi_latesender=%.9f\n", measured_latesender(&o, d.cart, d.size, all));
        fflush(stdout);
    }
    free(stamps);
    free(all);
    for (int s = 0; s < 4; s++) {
        free(d.send[s]);
        free(d.recv[s]);
    }
    free(d.field);
    free(d.next);
    MPI_Comm_free(&d.cart);
    MPI_Finalize();
    return 0;
}
