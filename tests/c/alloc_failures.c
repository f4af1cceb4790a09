/* Allocation-failure loop in C, built with AddressSanitizer (whose leak
 * checker runs at exit) and WS_ALLOC_FAILURES by tests/test_alloc_failures.py:
 * for n = 0, 1, 2, ... lets n kernel allocations succeed and fails the
 * later ones, then opens, loads and analyses ARCHIVE.  Every run must end
 * in WS_OK or WS_ERR_NOMEM; a successful run must give the same cube as
 * the run without failures.  Prints "runs N nomem M allocations A". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "waitscope.h"

/* One open/load/analyze; *cube gets a malloc'ed copy of the cube on success. */
static int run(const char *path, double **cube, size_t *n_cells, ws_error *err)
{
    ws_trace *t = NULL;
    ws_result *r = NULL;
    int rc = ws_open(path, &t, err);
    if (rc == WS_OK)
        rc = ws_load(t, NULL, 0, NULL, err);
    if (rc == WS_OK) {
        ws_analysis_options o;
        memset(&o, 0, sizeof o);
        o.delay_model = WS_DELAY_PROPORTIONAL;
        o.critical_path = 1;
        o.wait_records = 1;
        o.keep_delay_records = 1;
        rc = ws_analyze_all(t, &o, NULL, &r, err);
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

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s ARCHIVE\n", argv[0]);
        return 2;
    }
    ws_error err;
    ws_error_clear(&err);
    double *want = NULL;
    size_t n_want = 0;
    unsigned long long before = ws_alloc_count();
    if (run(argv[1], &want, &n_want, &err) != WS_OK || !want) {
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
        int rc = run(argv[1], &got, &n_got, &err);
        ws_alloc_fail_after(-1);
        if (rc == WS_ERR_NOMEM) {
            nomem++;
        } else if (rc != WS_OK) {
            fprintf(stderr, "n=%llu: %s: %s\n", n, ws_status_name(rc), err.message);
            return 1;
        } else if (!got || n_got != n_want || memcmp(got, want, n_want * sizeof *want) != 0) {
            fprintf(stderr, "n=%llu: the run succeeded with another result\n", n);
            return 1;
        }
        free(got);
    }
    free(want);
    printf("runs %llu nomem %llu allocations %llu\n", runs, nomem, total);
    return 0;
}
