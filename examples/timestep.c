/* timestep.c - a time-stepping code with MPI_Allreduce and MPI_Alltoall
 * and a tunable load imbalance in front of each.
 *
 * What it does
 *   Every step each rank
 *     1. advances its part of the solution: a small update plus a sleep
 *        of WORK ms, EXTRA ms more on the slow rank (k mod P);
 *     2. agrees on the next time step: MPI_Allreduce(MPI_MIN) of one double
 *        (call path main/solver/global_timestep/MPI_Allreduce);
 *     3. computes the right-hand side: a sleep of WORK2 ms, EXTRA2 ms more
 *        on rank (k+1) mod P;
 *     4. transposes its data for the next step: MPI_Alltoall of COUNT
 *        doubles per rank (main/solver/transpose/MPI_Alltoall).
 *   With -s fixed=R the slow rank is R in both phases; -s none adds no
 *   imbalance.
 *
 * Build:
 *   mpicc.mpich   -O2 -g -fno-optimize-sibling-calls -rdynamic -o timestep.mpich   timestep.c
 *   mpicc.openmpi -O2 -g -fno-optimize-sibling-calls -rdynamic -o timestep.openmpi timestep.c
 *   (or: make -C examples)
 * Run:
 *   mpiexec.mpich -n 4 ./timestep.mpich [-k STEPS] [-w WORK_MS] [-x EXTRA_MS]
 *                  [-v WORK2_MS] [-y EXTRA2_MS] [-c COUNT] [-s rotate|fixed=R|none]
 * Defaults: 40 steps, WORK = 1 ms, EXTRA = 3 ms, WORK2 = 0.5 ms,
 * EXTRA2 = 2 ms, COUNT = 64, rotate.
 *
 * The injected waiting
 *   Rank 0 prints "waitscope-nominal ..." from the formula below and
 *   "waitscope-expected ..." from what the ranks measured: each stamps
 *   (CLOCK_MONOTONIC, one clock on a node) the start and end of its
 *   collectives; rank 0 gathers the stamps after the loop and sums
 *   Scalasca's Wait at N x N, min(last member's start, own end) - own
 *   start.  The two agree on an idle machine; on a loaded one the
 *   scheduler stretches sleeps, and a trace must find the measured amount.
 *   The formula:
 *   Scalasca's Wait at N x N charges every member the time from its enter
 *   to the last member's enter.  All ranks leave a synchronizing
 *   collective together (to within microseconds), so in step k the
 *   Allreduce costs sum_r (max_q w_q(k) - w_r(k)) and the Alltoall the same
 *   with the second phase's work.  With one slow rank per phase (rotate or
 *   fixed=R, P > 1):
 *       mpi_wait_nxn = STEPS * (P - 1) * (EXTRA + EXTRA2)
 *   of which STEPS * (P - 1) * EXTRA in the Allreduce call path.  There is
 *   no point-to-point communication, so no Late Sender.
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
    int steps, count;
    double work_ms, extra_ms, work2_ms, extra2_ms;
    int fixed_rank; /* -1 rotate, -2 none */
} options;

NOINLINE void sleep_ms(double ms)
{
    if (ms <= 0)
        return;
    struct timespec ts = {(time_t)(ms / 1000.0), (long)((ms - 1000.0 * (time_t)(ms / 1000.0)) * 1e6)};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

static int is_slow(const options *o, int rank, int k, int size)
{
    if (o->fixed_rank == -2)
        return 0;
    return rank == (o->fixed_rank >= 0 ? o->fixed_rank : k % size);
}

NOINLINE double advance(double *u, int n, double ms)
{
    double local_dt = 1.0;
    for (int i = 0; i < n; i++) {
        u[i] = 0.99 * u[i] + 0.01;
        if (u[i] > 0 && 0.1 / u[i] < local_dt)
            local_dt = 0.1 / u[i];
    }
    sleep_ms(ms);
    return local_dt;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* stamp[0], stamp[1]: start and end of the call */
NOINLINE double global_timestep(double local_dt, double *stamp)
{
    double dt;
    stamp[0] = now();
    MPI_Allreduce(&local_dt, &dt, 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
    stamp[1] = now();
    return dt;
}

NOINLINE void rhs(double *u, int n, double dt, double ms)
{
    for (int i = 0; i < n; i++)
        u[i] += dt * 1e-3 * (double)i;
    sleep_ms(ms);
}

NOINLINE void transpose(double *u, double *t, int count, double *stamp)
{
    stamp[0] = now();
    MPI_Alltoall(u, count, MPI_DOUBLE, t, count, MPI_DOUBLE, MPI_COMM_WORLD);
    stamp[1] = now();
}

/* stamps[4(k-1) ...]: start, end of step k's Allreduce, then of its Alltoall */
NOINLINE void solver(const options *o, int rank, int size, double *stamps)
{
    int n = o->count * size;
    double *u = malloc(sizeof(double) * (size_t)n), *t = malloc(sizeof(double) * (size_t)n);
    for (int i = 0; i < n; i++)
        u[i] = 1.0 + rank + i % 7;
    for (int k = 1; k <= o->steps; k++) {
        double *stamp = &stamps[4 * (k - 1)];
        double local_dt = advance(u, n, o->work_ms + (is_slow(o, rank, k, size) ? o->extra_ms : 0.0));
        double dt = global_timestep(local_dt, stamp);
        rhs(u, n, dt, o->work2_ms + (is_slow(o, rank, k + 1, size) ? o->extra2_ms : 0.0));
        transpose(u, t, o->count, stamp + 2);
        double *s = u;
        u = t;
        t = s;
    }
    free(u);
    free(t);
}

static int parse(int argc, char **argv, options *o)
{
    *o = (options){40, 64, 1.0, 3.0, 0.5, 2.0, -1};
    int c;
    while ((c = getopt(argc, argv, "k:w:x:v:y:c:s:")) != -1) {
        switch (c) {
        case 'k': o->steps = atoi(optarg); break;
        case 'w': o->work_ms = atof(optarg); break;
        case 'x': o->extra_ms = atof(optarg); break;
        case 'v': o->work2_ms = atof(optarg); break;
        case 'y': o->extra2_ms = atof(optarg); break;
        case 'c': o->count = atoi(optarg); break;
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
    return (o->steps > 0 && o->count > 0 && o->extra_ms >= 0 && o->extra2_ms >= 0) ? 0 : -1;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    options o;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (parse(argc, argv, &o) != 0 || o.fixed_rank >= size) {
        if (rank == 0)
            fprintf(stderr, "usage: timestep [-k STEPS] [-w WORK_MS] [-x EXTRA_MS] [-v WORK2_MS] [-y EXTRA2_MS] "
                            "[-c COUNT] [-s rotate|fixed=R|none]\n");
        MPI_Finalize();
        return 2;
    }
    int n_stamps = 4 * o.steps;
    double *stamps = calloc((size_t)n_stamps, sizeof(double));
    double *all = rank == 0 ? calloc((size_t)n_stamps * size, sizeof(double)) : NULL;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    solver(&o, rank, size, stamps);
    double elapsed = MPI_Wtime() - t0;
    MPI_Gather(stamps, n_stamps, MPI_DOUBLE, all, n_stamps, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        double slow = (o.fixed_rank == -2 || size < 2) ? 0.0 : 1.0;
        double allreduce = o.steps * (size - 1) * o.extra_ms * slow / 1000.0;
        double alltoall = o.steps * (size - 1) * o.extra2_ms * slow / 1000.0;
        printf("timestep: %d ranks, %d steps, %.3f s\n", size, o.steps, elapsed);
        printf("waitscope-nominal mpi_wait_nxn=%.9f mpi_wait_nxn@MPI_Allreduce=%.9f "
               "mpi_wait_nxn@MPI_Alltoall=%.9f mpi_latesender=0\n", allreduce + alltoall, allreduce, alltoall);
        /* from the stamps: sum_r min(last start, own end) - own start, per collective */
        double phase[2] = {0, 0};
        for (int c = 0; c < 2 * o.steps; c++) {
            double last = 0;
            for (int r = 0; r < size; r++)
                if (all[(size_t)r * n_stamps + 2 * c] > last)
                    last = all[(size_t)r * n_stamps + 2 * c];
            for (int r = 0; r < size; r++) {
                const double *mine = &all[(size_t)r * n_stamps + 2 * c];
                double end = last < mine[1] ? last : mine[1];
                phase[c % 2] += end > mine[0] ? end - mine[0] : 0.0;
            }
        }
        printf("waitscope-expected mpi_wait_nxn=%.9f mpi_wait_nxn@MPI_Allreduce=%.9f "
               "mpi_wait_nxn@MPI_Alltoall=%.9f mpi_latesender=0\n", phase[0] + phase[1], phase[0], phase[1]);
        fflush(stdout);
    }
    free(stamps);
    free(all);
    MPI_Finalize();
    return 0;
}
