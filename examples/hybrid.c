/* hybrid.c - hybrid MPI+OpenMP program with thread imbalance known by
 * construction: OpenMP implicit- and explicit-barrier waiting, critical
 * section contention, idle worker threads and an MPI Late Sender, all of
 * exactly known size.  examples/hybrid.f90 is the same program in Fortran.
 *
 * What it does
 *   2 MPI ranks (exit status non-zero with any other number), T OpenMP
 *   threads each (T = OMP_NUM_THREADS, 2 when it is unset; 1 <= T <= 64),
 *   MPI_THREAD_FUNNELED: MPI on the master thread only.  Rank 0 takes
 *   T0 = its CLOCK_MONOTONIC + 30 ms and broadcasts it; iteration i
 *   (NITER = 6) runs from t0 = T0 + i * PERIOD.  Every phase ends at a
 *   deadline of this one schedule (both ranks run on one node and share
 *   CLOCK_MONOTONIC), and computing is a busy-wait until the deadline, so
 *   that late thread wake-ups and preemptions shift no waiting.
 *   Times in ms after t0, thread t = 0 .. T-1:
 *     0. serial, master thread: computes until t0 (the other threads
 *        idle; in the first iteration there are none yet).
 *     1. parallel region 1 ("imbalance"): thread t computes until
 *          20 + 30 t                                  -> implicit barrier;
 *        the last thread arrives at R1 = 20 + 30 (T-1).
 *     2. parallel region 2:
 *        a. thread t computes until R1 + 10 + 25 (T-1-t) (the master
 *           longest), then #pragma omp barrier; the last arrival is at
 *           B = R1 + 10 + 25 (T-1);
 *        b. thread t computes until Q + 24 t, Q = B + 6, and enters one
 *           (unnamed) #pragma omp critical; the k-th thread to get it
 *           (k = 0, 1, ..., counted inside) computes in it until
 *           Q + 40 (k+1): every thread holds it 40 ms;
 *        c. every thread computes until R2 = Q + 40 T + 10 (balanced)
 *           -> implicit barrier, no waiting.
 *     3. serial, master thread (the other threads idle): rank 1 computes
 *        until R2 + 30 and calls MPI_Recv; rank 0 computes until
 *        R2 + 75 and calls MPI_Send (512 doubles, 4 KiB, eager); both
 *        compute until R2 + 80 and call MPI_Barrier (a master returning
 *        late from MPI_Recv makes no waiting there).  The next iteration
 *        starts at PERIOD = R2 + 85 = 76 + 95 T (266 ms for T = 2, 361 ms
 *        for T = 3); after the last one the master computes until
 *        T0 + NITER * PERIOD.
 *   Run time: NITER * PERIOD + MPI start-up: 1.7 s (MPICH) to 1.9 s
 *   (Open MPI) for T = 2, 2.2 to 2.5 s for T = 3.
 *
 * The injected waiting, by hand (ms; per iteration and rank, then for the
 * whole run: 6 iterations x 2 ranks)
 *   OpenMP implicit barrier (region 1): thread t waits 30 (T-1-t);
 *     per rank and iteration 15 T(T-1); run 180 T(T-1).
 *     (region 2's implicit barrier: 0; every thread arrives at R2.)
 *   OpenMP explicit barrier: thread t waits 25 t;
 *     per rank and iteration 12.5 T(T-1); run 150 T(T-1).
 *   Critical section contention: thread t (t >= 1) asks at Q + 24 t, the
 *     thread before it releases at Q + 40 t: it waits 16 t;
 *     per rank and iteration 8 T(T-1); run 96 T(T-1).
 *     With T <= 3 at most one thread waits at a time (thread t asks after
 *     thread t-1 got the lock), so the entry order is the thread order
 *     whatever the lock's fairness.  With more threads the per-thread
 *     split depends on it, the total does not: the k-th holder releases
 *     at Q + 40 (k+1) whoever it is.
 *   Idle threads (each worker while its master runs outside parallel
 *     regions, R2 .. PERIOD): 85 per worker; per rank and iteration
 *     85 (T-1); run 1020 (T-1).  Not counted: before the first parallel
 *     region (MPI start-up, the 30 ms lead) and after T0 + NITER * PERIOD.
 *   MPI Late Sender: rank 1's master waits 45 in MPI_Recv; run 270.
 *   MPI_Barrier: no waiting.
 *                         per location (6 iterations)         whole run
 *   T = 2  implicit barrier  master 180                          360
 *          explicit barrier  thread 1 150                        300
 *          critical          thread 1 96                         192
 *          idle threads      thread 1 510                       1020
 *          Late Sender       rank 1 master 270                   270
 *   T = 3  implicit barrier  master 360, thread 1 180           1080
 *          explicit barrier  thread 1 150, thread 2 300          900
 *          critical          thread 1 96, thread 2 192           576
 *          idle threads      threads 1, 2: 510 each             2040
 *          Late Sender       rank 1 master 270                   270
 *
 * Why the timing is exact on a shared machine
 *   With 2 ranks x T threads on fewer cores, a thread that reaches its
 *   deadline while another thread has its core would arrive late by up to
 *   a scheduler time slice (milliseconds) and shorten the waiting.  So the
 *   busy-wait calls sched_yield() every microsecond: the threads computing
 *   on a core take turns at that pace and every deadline is met within
 *   tens of microseconds (a plain spin misses them by 2.5 ms on average
 *   with 6 threads on 2 cores).  Waiting threads must not spin: run with
 *       OMP_WAIT_POLICY=passive
 *   (libgomp: no spinning, as GOMP_SPINCOUNT=0; LLVM's libomp: as
 *   KMP_BLOCKTIME=0; the numbers above assume it, for both runtimes.
 *   Without it, on 2 cores: libgomp's spinning threads take the cores
 *   from computing ones, the implicit-barrier waiting grows by about 10 %
 *   and the time in those barriers by 30-55 %; libomp's idle workers spin
 *   200 ms after each region, beside the masters in MPI_Recv, which then
 *   return milliseconds late.)  Critical-section holders release at
 *   deadlines of the schedule, not a fixed time after they got the lock,
 *   so a late wake-up of a waiting thread shortens its holding time and
 *   delays no other thread.  In the serial phase only the two masters run
 *   (rank 1 spins in MPI_Recv).  Other programs on the machine can still
 *   hold a core when a deadline comes (a few percent of the waiting on a
 *   busy machine).
 *
 * Build: make -C examples (hybrid.mpich, hybrid.openmpi), or
 *   mpicc.mpich -fopenmp -O2 -g -fno-omit-frame-pointer -rdynamic -o hybrid.mpich hybrid.c
 * Run:
 *   OMP_NUM_THREADS=2 OMP_WAIT_POLICY=passive mpiexec.mpich -n 2 ./hybrid.mpich
 *   LLVM's OpenMP runtime (through its GOMP compatibility): with
 *   LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libomp.so.5 as well.
 *   Rank 0 prints one line.
 *
 * Self-check: with HYBRID_CHECK=1 every thread stamps (omp_get_wtime) its
 * arrivals at the barriers, its request and entry of the critical section
 * and, holding it, the release; the masters stamp their parallel regions'
 * forks and joins and (CLOCK_MONOTONIC, across the ranks) their entries
 * to MPI_Send / MPI_Recv and MPI_Barrier.  Rank 0 prints, in seconds for
 * the whole run, with waitscope's metric names,
 *   hybrid-injected METRIC=S ...   the waiting worked out above;
 *   hybrid-expected METRIC=S ...   the waiting by the metrics' definitions
 *       from the stamps: at a barrier the last arrival less the thread's
 *       own; at the critical section the previous holder's release less the
 *       request; Late Sender the send's entry less the receive's; at
 *       MPI_Barrier the later entry less the own; idle the master's time
 *       outside parallel regions (after the first one) on every other
 *       thread: what a trace of the run must show;
 *   hybrid-measured METRIC=S ...   the time in the constructs, each thread
 *       timing its own with omp_get_wtime() around the barrier, the entry
 *       to the critical section, MPI_Recv and MPI_Barrier (an implicit
 *       barrier from the thread's arrival to its master's return from the
 *       region): the waiting plus the waiting thread's wake-up (and, for
 *       MPI calls, which spin, the time until the scheduler runs the rank
 *       again when other programs take the cores);
 * and a line per thread, hybrid-location rank=R thread=t
 * METRIC=INJECTED/EXPECTED/MEASURED ...
 */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <omp.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

enum { NITER = 6, MAXT = 64, MSG = 512 };

/* The schedule, ms after the start of an iteration (comment above). */
#define LEAD 30.0          /* T0 after rank 0's clock at the broadcast */
#define R1_FIRST 20.0      /* region 1: thread t computes until R1_FIRST + R1_STEP t */
#define R1_STEP 30.0
#define EB_GAP 10.0        /* region 2: thread t computes until R1 + EB_GAP + EB_STEP (T-1-t) */
#define EB_STEP 25.0
#define CS_GAP 6.0         /* Q = last barrier arrival + CS_GAP */
#define CS_ASK 24.0        /* thread t asks for the critical section at Q + CS_ASK t */
#define CS_HOLD 40.0       /* the k-th holder releases it at Q + CS_HOLD (k+1) */
#define R2_TAIL 10.0       /* region 2 ends at Q + CS_HOLD T + R2_TAIL */
#define SERIAL 30.0        /* rank 1 calls MPI_Recv at R2 + SERIAL */
#define LATE 45.0          /* rank 0 calls MPI_Send LATE ms later */
#define SETTLE 5.0         /* both call MPI_Barrier SETTLE ms after the send */
#define SLACK 10.0         /* the next iteration starts SLACK ms after the send */

struct schedule {
    int T;
    double r1, b, q, r2, recv, period;
};

static struct schedule make_schedule(int T)
{
    struct schedule s;
    s.T = T;
    s.r1 = R1_FIRST + R1_STEP * (T - 1);
    s.b = s.r1 + EB_GAP + EB_STEP * (T - 1);
    s.q = s.b + CS_GAP;
    s.r2 = s.q + CS_HOLD * T + R2_TAIL;
    s.recv = s.r2 + SERIAL;
    s.period = s.recv + LATE + SLACK;
    return s;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

volatile double sink;

/* Computation: busy until the clock reaches `deadline` (ms), giving the
 * core to any other runnable thread after every microsecond or so. */
__attribute__((noinline)) void compute_until(double deadline)
{
    double x = 1.0;
    while (now_ms() < deadline) {
        for (int i = 0; i < 200; i++)
            x = x * 0.999 + 1.0;
        sched_yield();
    }
    sink = x;
}

/* Self-check (HYBRID_CHECK=1).  Metrics, in waitscope's names: */
enum { IBAR, EBAR, CRIT, IDLE, LS, MBAR, NMETRIC };
static const char *metric_name[NMETRIC] = {
    "omp_ibarrier_wait", "omp_ebarrier_wait", "omp_lock_contention_critical",
    "omp_idle_threads", "mpi_latesender", "mpi_barrier_wait"};

/* Per thread of this rank, seconds summed over the iterations: the waiting
 * by the metrics' definitions from the threads' stamps ("expected") and the
 * time in the construct ("measured").  Idle time is the master's, on every
 * worker.  MPI: the masters' CLOCK_MONOTONIC stamps (ms) at the entry of
 * MPI_Send / MPI_Recv and MPI_Barrier, compared across the ranks at the end. */
static double expected[NMETRIC][MAXT], measured[NMETRIC][MAXT];
static double p2p_enter[NITER], barrier_enter[NITER];

/* Waiting at a barrier: the last arrival less each thread's own. */
static void barrier_waits(int T, const double *arrive, double *wait)
{
    double last = arrive[0];
    for (int t = 1; t < T; t++)
        last = arrive[t] > last ? arrive[t] : last;
    for (int t = 0; t < T; t++)
        wait[t] += last - arrive[t];
}

/* The waiting the program injects, by hand (header), seconds: */
static double injected(int metric, int T, int rank, int t)
{
    const double ms[NMETRIC] = {
        R1_STEP * (T - 1 - t), EB_STEP * t, (CS_HOLD - CS_ASK) * t,
        t > 0 ? SERIAL + LATE + SLACK : 0.0, rank == 1 && t == 0 ? LATE : 0.0, 0.0};
    return ms[metric] * NITER * 1e-3;
}

/* Rank 0: the figures of both ranks (`all`: each rank's `expected`,
 * `measured`, p2p_enter and barrier_enter in a row), printed. */
static void print_check(int T, const double *all)
{
    const int rows = 2 * NMETRIC * T + 2 * NITER;
    double total[3][NMETRIC] = {{0}};

    printf("hybrid-check ranks=2 threads=%d iterations=%d values=injected/expected/measured\n", T, NITER);
    for (int r = 0; r < 2; r++) {
        const double *exp = all + r * rows, *meas = exp + NMETRIC * T;
        const double *other = all + (1 - r) * rows + 2 * NMETRIC * T;
        double mpi[NMETRIC] = {0};
        for (int i = 0; i < NITER; i++) {       /* MPI waiting by Scalasca's definitions */
            const double *mine = exp + 2 * NMETRIC * T;
            if (r == 1 && other[i] > mine[i])   /* the send entered after the receive */
                mpi[LS] += (other[i] - mine[i]) * 1e-3;
            if (other[NITER + i] > mine[NITER + i])
                mpi[MBAR] += (other[NITER + i] - mine[NITER + i]) * 1e-3;
        }
        for (int t = 0; t < T; t++) {
            printf("hybrid-location rank=%d thread=%d", r, t);
            for (int m = 0; m < NMETRIC; m++) {
                double v[3] = {injected(m, T, r, t), exp[m * T + t], meas[m * T + t]};
                if (m == LS || m == MBAR)
                    v[1] = t == 0 ? mpi[m] : 0.0;
                printf(" %s=%.6f/%.6f/%.6f", metric_name[m], v[0], v[1], v[2]);
                for (int k = 0; k < 3; k++)
                    total[k][m] += v[k];
            }
            printf("\n");
        }
    }
    for (int k = 0; k < 3; k++) {
        printf("hybrid-%s", (const char *[]){"injected", "expected", "measured"}[k]);
        for (int m = 0; m < NMETRIC; m++)
            printf(" %s=%.6f", metric_name[m], total[k][m]);
        printf("\n");
    }
}

int main(int argc, char **argv)
{
    int provided, rank, size, T = 2, wrong_team = 0, entered = 0;
    int order[MAXT];
    double T0, buf[MSG] = {0}, arrive[MAXT], arrive_eb[MAXT], ask[MAXT], release[MAXT];
    const char *env = getenv("OMP_NUM_THREADS");
    const int check = getenv("HYBRID_CHECK") && atoi(getenv("HYBRID_CHECK")) > 0;

    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (env && *env)
        T = omp_get_max_threads();
    if (size != 2 || provided < MPI_THREAD_FUNNELED || T < 1 || T > MAXT) {
        if (rank == 0)
            fprintf(stderr, "hybrid: needs 2 MPI ranks (has %d), MPI_THREAD_FUNNELED "
                    "and 1 to %d OpenMP threads (has %d)\n", size, MAXT, T);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const struct schedule s = make_schedule(T);

    MPI_Barrier(MPI_COMM_WORLD);
    T0 = now_ms() + LEAD;
    MPI_Bcast(&T0, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);

    double outside = 0.0;  /* when the master left the last parallel region */
    for (int it = 0; it < NITER; it++) {
        const double t0 = T0 + it * s.period;
        double w;

        /* 1. imbalance: thread t waits R1_STEP (T-1-t) in the implicit barrier */
        compute_until(t0);
        if (check && it > 0)
            measured[IDLE][0] += omp_get_wtime() - outside;
        #pragma omp parallel num_threads(T)
        {
            const int t = omp_get_thread_num();
            if (t == 0 && omp_get_num_threads() != T)
                wrong_team = 1;
            compute_until(t0 + R1_FIRST + R1_STEP * t);
            if (check)
                arrive[t] = omp_get_wtime();
        }
        if (wrong_team)
            MPI_Abort(MPI_COMM_WORLD, 3);
        if (check) {
            outside = omp_get_wtime();
            barrier_waits(T, arrive, expected[IBAR]);
            for (int t = 0; t < T; t++)
                measured[IBAR][t] += outside - arrive[t];
        }

        /* 2. explicit barrier, critical section, balanced end */
        entered = 0;
        if (check)
            measured[IDLE][0] += omp_get_wtime() - outside;
        #pragma omp parallel num_threads(T) private(w)
        {
            const int t = omp_get_thread_num();
            compute_until(t0 + s.r1 + EB_GAP + EB_STEP * (T - 1 - t));
            w = arrive_eb[t] = omp_get_wtime();
            #pragma omp barrier
            if (check)
                measured[EBAR][t] += omp_get_wtime() - w;

            compute_until(t0 + s.q + CS_ASK * t);
            w = ask[t] = omp_get_wtime();
            #pragma omp critical
            {
                const int k = order[t] = entered++;
                if (check)
                    measured[CRIT][t] += omp_get_wtime() - w;
                compute_until(t0 + s.q + CS_HOLD * (k + 1));
                release[k] = omp_get_wtime();
            }

            compute_until(t0 + s.r2);
            if (check)
                arrive[t] = omp_get_wtime();
        }
        if (check) {
            outside = omp_get_wtime();
            barrier_waits(T, arrive_eb, expected[EBAR]);
            barrier_waits(T, arrive, expected[IBAR]);
            for (int t = 0; t < T; t++) {
                measured[IBAR][t] += outside - arrive[t];
                if (order[t] > 0 && release[order[t] - 1] > ask[t])
                    expected[CRIT][t] += release[order[t] - 1] - ask[t];
            }
        }

        /* 3. serial work on the master, Late Sender, barrier */
        if (rank == 0) {
            compute_until(t0 + s.recv + LATE);
            buf[0] = it;
            p2p_enter[it] = now_ms();
            MPI_Send(buf, MSG, MPI_DOUBLE, 1, it, MPI_COMM_WORLD);
        } else {
            compute_until(t0 + s.recv);
            w = omp_get_wtime();
            p2p_enter[it] = now_ms();
            MPI_Recv(buf, MSG, MPI_DOUBLE, 0, it, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            measured[LS][0] += omp_get_wtime() - w;
        }
        compute_until(t0 + s.recv + LATE + SETTLE);
        w = omp_get_wtime();
        barrier_enter[it] = now_ms();
        MPI_Barrier(MPI_COMM_WORLD);
        measured[MBAR][0] += omp_get_wtime() - w;
    }

    compute_until(T0 + NITER * s.period);   /* the last iteration's end, as the others' */
    if (check) {
        const int rows = 2 * NMETRIC * T + 2 * NITER;
        double mine[2 * NMETRIC * MAXT + 2 * NITER], all[2 * (2 * NMETRIC * MAXT + 2 * NITER)];
        measured[IDLE][0] += omp_get_wtime() - outside;
        for (int t = 1; t < T; t++)      /* the workers idle while the master runs alone */
            measured[IDLE][t] = expected[IDLE][t] = measured[IDLE][0];
        measured[IDLE][0] = 0.0;
        for (int m = 0; m < NMETRIC; m++)
            for (int t = 0; t < T; t++) {
                mine[m * T + t] = expected[m][t];
                mine[(NMETRIC + m) * T + t] = measured[m][t];
            }
        for (int i = 0; i < NITER; i++) {
            mine[2 * NMETRIC * T + i] = p2p_enter[i];
            mine[2 * NMETRIC * T + NITER + i] = barrier_enter[i];
        }
        MPI_Gather(mine, rows, MPI_DOUBLE, all, rows, MPI_DOUBLE, 0, MPI_COMM_WORLD);
        if (rank == 0)
            print_check(T, all);
    } else if (rank == 0) {
        printf("hybrid: 2 ranks x %d OpenMP threads, %d iterations of %.0f ms\n", T, NITER, s.period);
    }
    MPI_Finalize();
    return 0;
}
