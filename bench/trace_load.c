/* The traced program of bench_trace_memory.py: many trace events per rank
 * from purely local work, and what MPI_Finalize costs each rank.
 *
 *     trace_load ITERATIONS
 *
 * Each iteration posts an MPI_Irecv and an MPI_Isend to the rank itself on
 * MPI_COMM_SELF and completes both with MPI_Waitall: no rank ever waits for
 * another before MPI_Finalize (the ranks may share few cores), and every
 * iteration records the same events.  Each rank reads its peak resident
 * set size (VmHWM of /proc/self/status) just before MPI_Finalize and after
 * it returns, times the call (CLOCK_MONOTONIC) and prints one line:
 *
 *     trace_load rank R iterations N hwm_before_kB B hwm_after_kB A finalize_s S
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static long vm_hwm_kb(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    if (!f)
        return -1;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "VmHWM:", 6) == 0) {
            kb = strtol(line + 6, NULL, 10);
            break;
        }
    fclose(f);
    return kb;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int main(int argc, char **argv)
{
    long iterations = argc > 1 ? atol(argv[1]) : 1000;
    int rank, sendbuf, recvbuf = -1;
    MPI_Request req[2];
    MPI_Status status[2];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    sendbuf = rank;
    for (long i = 0; i < iterations; i++) {
        MPI_Irecv(&recvbuf, 1, MPI_INT, 0, 7, MPI_COMM_SELF, &req[0]);
        MPI_Isend(&sendbuf, 1, MPI_INT, 0, 7, MPI_COMM_SELF, &req[1]);
        MPI_Waitall(2, req, status);
    }
    if (iterations > 0 && recvbuf != rank)
        fprintf(stderr, "trace_load: rank %d received %d\n", rank, recvbuf);
    long before = vm_hwm_kb();
    double t0 = now();
    MPI_Finalize();
    double t1 = now();
    long after = vm_hwm_kb();
    printf("trace_load rank %d iterations %ld hwm_before_kB %ld hwm_after_kB %ld finalize_s %.6f\n", rank, iterations,
           before, after, t1 - t0);
    return 0;
}
