/* Allocation-failure loop in C, built with AddressSanitizer (whose leak
 * checker runs at exit) and WS_ALLOC_FAILURES by tests/test_alloc_failures.py:
 * for n = 0, 1, 2, ... lets n kernel allocations succeed and fails the
 * later ones, then opens, loads and analyses ARCHIVE.  Every run must end
 * in WS_OK or WS_ERR_NOMEM; a successful run must give the same cube as
 * the run without failures.  Prints "runs N nomem M allocations A".
 * Then the same with ws_load_threads and ws_analyze_threads (2 threads)
 * on ARCHIVE (the critical path walked in one place: path_walk.c),
 * printed as "threads runs N nomem M allocations A": which
 * allocation fails
 * there depends on the threads' timing, so a run past the failing
 * allocation count of another may succeed; none may hang or leak. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "waitscope.h"

/* Two ranks: rank 0 computes and sends to rank 1, both meet in a barrier. */
static int synthesize(ws_trace **t, ws_error *err)
{
    static const int64_t ops[] = {
        WS_SYNTH_COMPUTE, 0, 0, 0, 0, WS_SYNTH_SEND, 1, 7, 8, 0, WS_SYNTH_BARRIER, 0, 0, 0, 0,
        WS_SYNTH_RECV,    0, 7, 0, 0, WS_SYNTH_BARRIER, 0, 0, 0, 0,
    };
    static const int64_t rank_ptr[] = {0, 3, 5}, dur_ptr[] = {0, 1, 1}, req_ptr[] = {0, 0, 0}, none[] = {0};
    static const double durations[] = {0.5};
    static const char *const regions[] = {"work"};
    ws_synth_program p;
    memset(&p, 0, sizeof p);
    p.n_ranks = 2;
    p.rank_ptr = rank_ptr;
    p.ops = ops;
    p.dur_ptr = dur_ptr;
    p.durations = durations;
    p.req_ptr = req_ptr;
    p.requests = none;
    p.n_regions = 1;
    p.region_names = regions;
    ws_synth_params params = {1e-3, 1e9, 1 << 16, 1e-5, 1000000000};
    return ws_synthesize(&p, &params, NULL, t, err);
}

/* One open/load/analyze of `path`, or synthesize/analyze when path is
 * NULL; *cube gets a malloc'ed copy of the cube on success. */
static int run(const char *path, uint32_t threads, double **cube, size_t *n_cells, ws_error *err)
{
    ws_trace *t = NULL;
    ws_result *r = NULL;
    int rc = path ? ws_open(path, &t, err) : synthesize(&t, err);
    if (rc == WS_OK && path)
        rc = threads > 1 ? ws_load_threads(t, NULL, 0, threads, NULL, err) : ws_load(t, NULL, 0, NULL, err);
    if (rc == WS_OK) {
        ws_analysis_options o;
        memset(&o, 0, sizeof o);
        o.delay_model = WS_DELAY_PROPORTIONAL;
        o.critical_path = 1;
        o.wait_records = 1;
        o.keep_delay_records = 1;
        /* two threads: with the critical path walked in one place */
        o.path_walk = threads > 1 ? WS_PATH_WALK_ALWAYS : WS_PATH_WALK_AUTO;
        rc = threads > 1 ? ws_analyze_threads(t, &o, threads, NULL, &r, err) : ws_analyze_all(t, &o, NULL, &r, err);
    }
    if (rc == WS_OK) {
        *n_cells = (size_t)ws_result_n_metrics(r) * ws_result_n_callpaths(r) * ws_result_n_locations(r);
        *cube = malloc(*n_cells * sizeof **cube + 1);
        if (*cube)
            memcpy(*cube, ws_result_cube(r), *n_cells * sizeof **cube);
    }
    ws_result_free(r);
    ws_trace_free(t);
    return rc;
}

/* The loop over n for one scenario; 0 or 1 (reported on stderr). */
static int loop(const char *path, uint32_t threads)
{
    ws_error err;
    ws_error_clear(&err);
    double *want = NULL;
    size_t n_want = 0;
    unsigned long long before = ws_alloc_count();
    if (run(path, threads, &want, &n_want, &err) != WS_OK || !want) {
        fprintf(stderr, "the run without failures failed: %s\n", err.message);
        return 1;
    }
    unsigned long long total = ws_alloc_count() - before;
    unsigned long long nomem = 0, runs = 0;
    for (unsigned long long n = 0; n <= total; n++, runs++) {
        double *got = NULL;
        size_t n_got = 0;
        ws_error_clear(&err);
        ws_alloc_fail_after((long long)n);
        int rc = run(path, threads, &got, &n_got, &err);
        ws_alloc_fail_after(-1);
        if (rc == WS_ERR_NOMEM) {
            nomem++;
        } else if (rc != WS_OK) {
            fprintf(stderr, "n=%llu: %s: %s\n", n, ws_status_name(rc), err.message);
            free(want);
            return 1;
        } else if (!got || n_got != n_want || memcmp(got, want, n_want * sizeof *want) != 0) {
            fprintf(stderr, "n=%llu: the run succeeded with another result\n", n);
            free(got);
            free(want);
            return 1;
        }
        free(got);
    }
    free(want);
    printf("%sruns %llu nomem %llu allocations %llu\n", threads > 1 ? "threads " : "", runs, nomem, total);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s ARCHIVE\n", argv[0]);
        return 2;
    }
    return loop(argv[1], 1) || loop(NULL, 1) || loop(argv[1], 2);
}
