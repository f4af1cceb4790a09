/* wavefront.c - an LU/Sweep3D-like pipelined wavefront with blocking
 * MPI_Send/MPI_Recv and a tunable load imbalance.
 *
 * What it does
 *   The ranks form a PX x PY grid (MPI_Dims_create, rank = i*PY + j).
 *   Each iteration makes two sweeps over BLOCKS blocks (k-planes), like
 *   Sweep3D's octants: forward from corner (0,0) and backward from corner
 *   (PX-1,PY-1).  For every block a rank
 *     1. receives the upstream faces: MPI_Recv from the i-neighbour, then
 *        from the j-neighbour (forward: i-1, j-1; backward: i+1, j+1);
 *     2. computes: a small update plus a sleep of WORK ms, EXTRA ms more
 *        if it is the slow rank of this block (see SCHEDULE);
 *     3. sends the downstream faces: MPI_Send to the i-, then j-neighbour.
 *   Call paths: main/solver/sweep/receive_faces/MPI_Recv and
 *   main/solver/sweep/send_faces/MPI_Send.
 *
 * Build:
 *   mpicc.mpich   -O2 -g -fno-optimize-sibling-calls -rdynamic -o wavefront.mpich   wavefront.c
 *   mpicc.openmpi -O2 -g -fno-optimize-sibling-calls -rdynamic -o wavefront.openmpi wavefront.c
 *   (or: make -C examples)
 * Run:
 *   mpiexec.mpich -n 4 ./wavefront.mpich [-k ITERS] [-b BLOCKS] [-w WORK_MS]
 *                                        [-x EXTRA_MS] [-s rotate|fixed=R|none]
 * Defaults: 4 iterations, 8 blocks, WORK = 1 ms, EXTRA = 3 ms, rotate;
 * faces of 64 doubles (512 bytes, sent eagerly: MPI_Send returns at once).
 *
 * SCHEDULE: with g the global block number (iteration, sweep, block),
 * "rotate" makes rank (g mod P) slow, "fixed=R" makes rank R slow in every
 * block, "none" adds nothing.
 *
 * The injected waiting
 *   Rank 0 prints "waitscope-nominal mpi_latesender=..." from the formula
 *   below and "waitscope-expected mpi_latesender=..." from what the ranks
 *   measured: each stamps (CLOCK_MONOTONIC, one clock on a node) the start
 *   of its sends and the start and end of its receives; rank 0 gathers the
 *   stamps after the loop and sums Scalasca's Late Sender,
 *   min(send start, receive end) - receive start, when positive.  The two
 *   agree on an idle machine; on a loaded one the scheduler stretches
 *   sleeps and delays busy-polling receives, and a trace must find the
 *   measured amount.
 *   The formula:
 *   Let t_r be the time of rank r, F_r(g) the time it enters its sends of
 *   block g and w_r(g) = WORK + EXTRA*[r slow in g].  All ranks start at
 *   0 (they leave a barrier together).  For block g, rank r with upstream
 *   neighbours a (i-direction) and b (j-direction), where present:
 *       Recv from a waits max(0, F_a(g) - t_r), then t_r = max(t_r, F_a(g));
 *       Recv from b waits max(0, F_b(g) - t_r), then t_r = max(t_r, F_b(g));
 *       t_r += w_r(g);  F_r(g) = t_r.
 *   Scalasca's Late Sender of a blocking receive is
 *   max(0, enter of the send - enter of the receive), so the injected Late
 *   Sender waiting is the sum of the two waits over all ranks and blocks;
 *   rank 0 evaluates the recurrence block by block, ranks in pipeline
 *   order (communication costs, microseconds, are neglected).  Part of it
 *   is the pipeline fill, which a wavefront has even without imbalance:
 *   in the first forward sweep rank (i,j) waits WORK * (i + j) before its
 *   first block (e.g. -s none -k 1 -b 1 on 2 x 2 ranks: 4 * WORK, all of
 *   the first sweep; the backward sweep then adds 2 * WORK for ranks
 *   (0,1), (1,0) and 4 * WORK for rank (0,0): 12 * WORK in all).
 */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))
#define FACE 64

typedef struct {
    int iters, blocks;
    double work_ms, extra_ms;
    int fixed_rank; /* -1 rotate, -2 none */
} options;

typedef struct {
    int rank, size, px, py, i, j;
    double face_in[2][FACE], face_out[2][FACE], cell[FACE];
} grid;

static int slow_rank(const options *o, long g, int size)
{
    if (o->fixed_rank == -2 || o->extra_ms <= 0)
        return -1;
    return o->fixed_rank >= 0 ? o->fixed_rank : (int)(g % size);
}

NOINLINE void sleep_ms(double ms)
{
    if (ms <= 0)
        return;
    struct timespec ts = {(time_t)(ms / 1000.0), (long)((ms - 1000.0 * (time_t)(ms / 1000.0)) * 1e6)};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

/* upstream (dir 0: forward) or downstream neighbours in i and j; -1 if none */
static void neighbours(const grid *g, int r, int forward, int upstream, int out[2])
{
    int i = r / g->py, j = r % g->py;
    int step = (forward == upstream) ? -1 : 1;
    int ni = i + step, nj = j + step;
    out[0] = (ni >= 0 && ni < g->px) ? ni * g->py + j : -1;
    out[1] = (nj >= 0 && nj < g->py) ? i * g->py + nj : -1;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* stamp[2d], stamp[2d+1]: start and end of the receive from direction d */
NOINLINE void receive_faces(grid *g, int forward, double *stamp)
{
    int up[2];
    neighbours(g, g->rank, forward, 1, up);
    for (int d = 0; d < 2; d++)
        if (up[d] >= 0) {
            stamp[2 * d] = now();
            MPI_Recv(g->face_in[d], FACE, MPI_DOUBLE, up[d], d, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            stamp[2 * d + 1] = now();
        } else
            memset(g->face_in[d], 0, sizeof g->face_in[d]);
}

/* stamp[d]: start of the send to direction d */
NOINLINE void send_faces(grid *g, int forward, double *stamp)
{
    int down[2];
    neighbours(g, g->rank, forward, 0, down);
    for (int d = 0; d < 2; d++)
        if (down[d] >= 0) {
            stamp[d] = now();
            MPI_Send(g->face_out[d], FACE, MPI_DOUBLE, down[d], d, MPI_COMM_WORLD);
        }
}

NOINLINE void compute_block(grid *g, double ms)
{
    for (int c = 0; c < FACE; c++) {
        g->cell[c] = 0.5 * g->cell[c] + 0.25 * (g->face_in[0][c] + g->face_in[1][c]) + 1.0;
        g->face_out[0][c] = g->face_out[1][c] = g->cell[c];
    }
    sleep_ms(ms);
}

#define STAMPS 6 /* per block: receive start/end from i and j, send start to i and j */

NOINLINE void sweep(grid *g, const options *o, int forward, long *gblock, double *stamps)
{
    for (int b = 0; b < o->blocks; b++, (*gblock)++) {
        double *stamp = &stamps[STAMPS * *gblock];
        receive_faces(g, forward, stamp);
        compute_block(g, o->work_ms + (g->rank == slow_rank(o, *gblock, g->size) ? o->extra_ms : 0.0));
        send_faces(g, forward, stamp + 4);
    }
}

NOINLINE void solver(grid *g, const options *o, double *stamps)
{
    long gblock = 0;
    for (int it = 0; it < o->iters; it++) {
        sweep(g, o, 1, &gblock, stamps);
        sweep(g, o, 0, &gblock, stamps);
    }
}

/* Scalasca's Late Sender of every receive from the stamps all ranks took
 * (all[r][STAMPS g + ...], CLOCK_MONOTONIC, one clock for the node):
 * min(sender's send start, receive end) - receive start, when positive. */
static double measured_latesender(const options *o, const grid *g, const double *all)
{
    long total = 2L * o->iters * o->blocks;
    double ls = 0;
    for (int r = 0; r < g->size; r++)
        for (long b = 0; b < total; b++) {
            int up[2];
            int forward = (b / o->blocks) % 2 == 0;
            neighbours(g, r, forward, 1, up);
            const double *mine = &all[((size_t)r * total + b) * STAMPS];
            for (int d = 0; d < 2; d++)
                if (up[d] >= 0) {
                    double sent = all[((size_t)up[d] * total + b) * STAMPS + 4 + d];
                    double end = sent < mine[2 * d + 1] ? sent : mine[2 * d + 1];
                    if (end > mine[2 * d])
                        ls += end - mine[2 * d];
                }
        }
    return ls;
}

/* The recurrence of the header comment with the nominal WORK and EXTRA;
 * returns the summed Late Sender time (s). */
static double nominal_latesender(const options *o, const grid *g)
{
    int p = g->size;
    double *t = calloc((size_t)p, sizeof *t), *f = calloc((size_t)p, sizeof *f);
    int *order = malloc(sizeof(int) * (size_t)p);
    double ls = 0;
    long gblock = 0;
    for (int it = 0; it < o->iters; it++) {
        for (int forward = 1; forward >= 0; forward--) {
            /* pipeline order: ascending i+j forward, descending backward */
            int n = 0;
            for (int s = 0; s <= g->px + g->py - 2; s++)
                for (int r = 0; r < p; r++)
                    if (r / g->py + r % g->py == (forward ? s : g->px + g->py - 2 - s))
                        order[n++] = r;
            for (int b = 0; b < o->blocks; b++, gblock++) {
                int slow = slow_rank(o, gblock, p);
                for (int q = 0; q < p; q++) {
                    int r = order[q], up[2];
                    neighbours(g, r, forward, 1, up);
                    for (int d = 0; d < 2; d++)
                        if (up[d] >= 0 && f[up[d]] > t[r]) {
                            ls += f[up[d]] - t[r];
                            t[r] = f[up[d]];
                        }
                    t[r] += o->work_ms + (r == slow ? o->extra_ms : 0.0);
                    f[r] = t[r];
                }
            }
        }
    }
    free(t);
    free(f);
    free(order);
    return ls / 1000.0;
}

static int parse(int argc, char **argv, options *o)
{
    *o = (options){4, 8, 1.0, 3.0, -1};
    int c;
    while ((c = getopt(argc, argv, "k:b:w:x:s:")) != -1) {
        switch (c) {
        case 'k': o->iters = atoi(optarg); break;
        case 'b': o->blocks = atoi(optarg); break;
        case 'w': o->work_ms = atof(optarg); break;
        case 'x': o->extra_ms = atof(optarg); break;
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
    return (o->iters > 0 && o->blocks > 0 && o->work_ms >= 0) ? 0 : -1;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    options o;
    grid g;
    memset(&g, 0, sizeof g);
    MPI_Comm_rank(MPI_COMM_WORLD, &g.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g.size);
    if (parse(argc, argv, &o) != 0 || o.fixed_rank >= g.size) {
        if (g.rank == 0)
            fprintf(stderr, "usage: wavefront [-k ITERS] [-b BLOCKS] [-w WORK_MS] [-x EXTRA_MS] "
                            "[-s rotate|fixed=R|none]\n");
        MPI_Finalize();
        return 2;
    }
    int dims[2] = {0, 0};
    MPI_Dims_create(g.size, 2, dims);
    g.px = dims[0];
    g.py = dims[1];
    g.i = g.rank / g.py;
    g.j = g.rank % g.py;

    long total = 2L * o.iters * o.blocks;
    double *stamps = calloc((size_t)total * STAMPS, sizeof(double));
    double *all = g.rank == 0 ? calloc((size_t)total * STAMPS * g.size, sizeof(double)) : NULL;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    solver(&g, &o, stamps);
    double elapsed = MPI_Wtime() - t0;
    MPI_Gather(stamps, (int)(total * STAMPS), MPI_DOUBLE, all, (int)(total * STAMPS), MPI_DOUBLE, 0,
               MPI_COMM_WORLD);
    if (g.rank == 0) {
        printf("wavefront: %d ranks (%d x %d), %d iterations x 2 sweeps x %d blocks, work %.3f ms, "
               "extra %.3f ms, %.3f s\n", g.size, g.px, g.py, o.iters, o.blocks, o.work_ms, o.extra_ms, elapsed);
        printf("waitscope-nominal mpi_latesender=%.9f\n", nominal_latesender(&o, &g));
        printf("waitscope-expected mpi_latesender=%.9f\n", measured_latesender(&o, &g, all));
        fflush(stdout);
    }
    free(stamps);
    free(all);
    MPI_Finalize();
    return 0;
}
