/* master_worker.c - a task farm: rank 0 hands out tasks to workers that
 * ask for work (MPI_Recv from MPI_ANY_SOURCE), with a broadcast of the
 * parameters and a reduction of the results around every round.
 *
 * What it does, per round (ROUNDS rounds)
 *   1. MPI_Barrier (main/run_round/MPI_Barrier): everyone starts together;
 *   2. the master prepares the parameters: a sleep of SETUP ms in odd
 *      rounds (none in even ones), then MPI_Bcast from rank 0
 *      (main/run_round/distribute_parameters/MPI_Bcast);
 *   3. the farm: TASKS tasks of 1, 2 or 3 times TASK ms.  A worker sends a
 *      request (MPI_Send, tag 1) and receives a task or a stop (MPI_Recv,
 *      tag 2 or 3) in main/run_round/worker/request_task; the master
 *      receives requests with MPI_ANY_SOURCE, MPI_ANY_TAG
 *      (main/run_round/master/next_request/MPI_Recv) and answers the
 *      sender named in the status;
 *   4. MPI_Barrier, then in odd rounds one worker (rank 1 + round mod
 *      (P-1)) post-processes for POST ms, and everyone reduces its partial
 *      result to rank 0 (main/run_round/collect_results/MPI_Reduce).
 *
 * Build:
 *   mpicc.mpich   -O2 -g -fno-optimize-sibling-calls -rdynamic -o master_worker.mpich   master_worker.c
 *   mpicc.openmpi -O2 -g -fno-optimize-sibling-calls -rdynamic -o master_worker.openmpi master_worker.c
 *   (or: make -C examples)
 * Run (at least 2 ranks):
 *   mpiexec.mpich -n 4 ./master_worker.mpich [-r ROUNDS] [-t TASKS] [-d TASK_MS]
 *                                            [-y SETUP_MS] [-z POST_MS]
 * Defaults: 6 rounds, 12 tasks per round, TASK = 1 ms, SETUP = 4 ms,
 * POST = 3 ms.
 *
 * The injected waiting
 *   Rank 0 prints "waitscope-nominal ..." from the formulas below and
 *   "waitscope-expected ..." from what the ranks measured: each stamps
 *   (CLOCK_MONOTONIC, one clock on a node) the start and end of its
 *   MPI_Bcast and MPI_Reduce; rank 0 gathers the stamps after the loop and
 *   sums Scalasca's definitions (below, with min(..., own end)).  The two
 *   agree on an idle machine; on a loaded one the scheduler stretches
 *   sleeps, and a trace must find the measured amount.
 *   The formulas:
 *   After the barrier of step 1 the workers enter MPI_Bcast at once and
 *   the root SETUP ms later; Scalasca's Late Broadcast charges every
 *   non-root member (root's enter - own enter), so
 *       mpi_latebroadcast = n_odd * (P - 1) * SETUP,
 *   with n_odd = floor(ROUNDS / 2) (rounds 1, 3, 5, ... of 0..ROUNDS-1).
 *   After the barrier of step 4 the root enters MPI_Reduce at once and one
 *   worker POST ms later; Early Reduce charges the root (last enter - own
 *   enter):  mpi_earlyreduce = n_odd * POST.
 *   The farm's waiting (the master idle in MPI_Recv from MPI_ANY_SOURCE,
 *   the workers waiting for their next task) depends on the order in which
 *   requests arrive and is not predicted; the barriers' waiting neither.
 */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))
#define TAG_REQUEST 1
#define TAG_TASK 2
#define TAG_STOP 3

typedef struct {
    int rounds, tasks;
    double task_ms, setup_ms, post_ms;
} options;

NOINLINE void sleep_ms(double ms)
{
    if (ms <= 0)
        return;
    struct timespec ts = {(time_t)(ms / 1000.0), (long)((ms - 1000.0 * (time_t)(ms / 1000.0)) * 1e6)};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* stamp[0], stamp[1]: start and end of the broadcast */
NOINLINE void distribute_parameters(double *params, int rank, double *stamp)
{
    if (rank == 0)
        for (int i = 0; i < 4; i++)
            params[i] += 1.0;
    stamp[0] = now();
    MPI_Bcast(params, 4, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    stamp[1] = now();
}

NOINLINE int next_request(double *result, MPI_Status *status)
{
    MPI_Recv(result, 1, MPI_DOUBLE, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, status);
    return status->MPI_SOURCE;
}

NOINLINE double master(const options *o, int size)
{
    double total = 0, result;
    int next_task = 0, stopped = 0;
    MPI_Status status;
    while (stopped < size - 1) {
        int worker = next_request(&result, &status);
        total += result;
        if (next_task < o->tasks) {
            int task = next_task++;
            MPI_Send(&task, 1, MPI_INT, worker, TAG_TASK, MPI_COMM_WORLD);
        } else {
            int none = -1;
            MPI_Send(&none, 1, MPI_INT, worker, TAG_STOP, MPI_COMM_WORLD);
            stopped++;
        }
    }
    return total;
}

NOINLINE int request_task(double result)
{
    int task;
    MPI_Status status;
    MPI_Send(&result, 1, MPI_DOUBLE, 0, TAG_REQUEST, MPI_COMM_WORLD);
    MPI_Recv(&task, 1, MPI_INT, 0, MPI_ANY_TAG, MPI_COMM_WORLD, &status);
    return status.MPI_TAG == TAG_STOP ? -1 : task;
}

NOINLINE double worker(const options *o, const double *params)
{
    double result = 0, sum = 0;
    int task;
    while ((task = request_task(result)) >= 0) {
        sleep_ms(o->task_ms * (1 + task % 3));
        result = params[0] * task;
        sum += result;
    }
    return sum;
}

/* stamp[0], stamp[1]: start and end of the reduction */
NOINLINE double collect_results(double partial, double *stamp)
{
    double total = 0;
    stamp[0] = now();
    MPI_Reduce(&partial, &total, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    stamp[1] = now();
    return total;
}

/* stamp[0..1]: the broadcast's start and end, stamp[2..3]: the reduction's */
NOINLINE double run_round(const options *o, int round, int rank, int size, double *params, double *stamp)
{
    int odd = round % 2 == 1;
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0 && odd)
        sleep_ms(o->setup_ms);
    distribute_parameters(params, rank, stamp);
    double partial = rank == 0 ? master(o, size) : worker(o, params);
    MPI_Barrier(MPI_COMM_WORLD);
    if (odd && rank == 1 + round % (size - 1))
        sleep_ms(o->post_ms);
    return collect_results(rank == 0 ? 0.0 : partial, stamp + 2);
}

static int parse(int argc, char **argv, options *o)
{
    *o = (options){6, 12, 1.0, 4.0, 3.0};
    int c;
    while ((c = getopt(argc, argv, "r:t:d:y:z:")) != -1) {
        switch (c) {
        case 'r': o->rounds = atoi(optarg); break;
        case 't': o->tasks = atoi(optarg); break;
        case 'd': o->task_ms = atof(optarg); break;
        case 'y': o->setup_ms = atof(optarg); break;
        case 'z': o->post_ms = atof(optarg); break;
        default: return -1;
        }
    }
    return (o->rounds > 0 && o->tasks >= 0 && o->setup_ms >= 0 && o->post_ms >= 0) ? 0 : -1;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    options o;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (parse(argc, argv, &o) != 0 || size < 2) {
        if (rank == 0)
            fprintf(stderr, "usage (at least 2 ranks): master_worker [-r ROUNDS] [-t TASKS] [-d TASK_MS] "
                            "[-y SETUP_MS] [-z POST_MS]\n");
        MPI_Finalize();
        return 2;
    }
    double params[4] = {1.0, 2.0, 3.0, 4.0}, total = 0;
    double *stamps = calloc(4 * (size_t)o.rounds, sizeof(double));
    double *all = rank == 0 ? calloc(4 * (size_t)o.rounds * size, sizeof(double)) : NULL;
    double t0 = MPI_Wtime();
    for (int round = 0; round < o.rounds; round++)
        total += run_round(&o, round, rank, size, params, &stamps[4 * round]);
    double elapsed = MPI_Wtime() - t0;
    MPI_Gather(stamps, 4 * o.rounds, MPI_DOUBLE, all, 4 * o.rounds, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        int n_odd = o.rounds / 2;
        printf("master_worker: %d ranks, %d rounds of %d tasks, result %.1f, %.3f s\n", size, o.rounds, o.tasks,
               total, elapsed);
        printf("waitscope-nominal mpi_latebroadcast=%.9f mpi_earlyreduce=%.9f\n",
               n_odd * (size - 1) * o.setup_ms / 1000.0, n_odd * o.post_ms / 1000.0);
        /* from the stamps: non-roots of the broadcast wait min(root's start, own end) - own start,
           the root of the reduction min(last start, own end) - own start */
        double late_bcast = 0, early_reduce = 0;
        for (int round = 0; round < o.rounds; round++) {
            const double *root = &all[4 * round];
            double last = 0;
            for (int r = 0; r < size; r++) {
                const double *mine = &all[(size_t)r * 4 * o.rounds + 4 * round];
                if (r > 0) {
                    double end = root[0] < mine[1] ? root[0] : mine[1];
                    late_bcast += end > mine[0] ? end - mine[0] : 0.0;
                }
                if (mine[2] > last)
                    last = mine[2];
            }
            double end = last < root[3] ? last : root[3];
            early_reduce += end > root[2] ? end - root[2] : 0.0;
        }
        printf("waitscope-expected mpi_latebroadcast=%.9f mpi_earlyreduce=%.9f\n", late_bcast, early_reduce);
        fflush(stdout);
    }
    free(stamps);
    free(all);
    MPI_Finalize();
    return 0;
}
