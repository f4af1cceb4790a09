/* Embedding the waitscope kernel in a C program through its public header
 * alone: opens an OTF2 archive, loads every location, runs the wait-state,
 * delay-cost and critical-path analyses in this process and prints what
 * they found.
 *
 * Build (from the repository root; `make -C examples embed` does the same):
 *   cc -std=c11 -O2 -Icsrc examples/embed.c $(KERNEL_SOURCES) \
 *      $(otf2-config --cflags --ldflags --libs) -lm -lpthread -o embed
 * where KERNEL_SOURCES are the C files of csrc/api, csrc/common,
 * csrc/trace, csrc/analysis and csrc/replay (without transport_mpi*.c).
 * This file includes nothing of csrc/ but waitscope.h.
 *
 * Run:  ./embed pkg/waitscope/data/scorep-ping-pong
 * Output, one line each:
 *   version V
 *   trace LOCATIONS EVENTS CALLPATHS
 *   metric ID UNIT TOTAL              (every metric, in cube order)
 *   cell ID CALLPATH LOCATION VALUE   (every nonzero cell; CALLPATH: index)
 *   callpath INDEX NAME
 *   path SEGMENTS SECONDS             (the critical path and its length)
 * Values are printed with 17 significant digits (exact doubles).
 */
#include <stdio.h>
#include <stdlib.h>

#include "waitscope.h"

static int fail(const char *what, int status, const ws_error *err)
{
    fprintf(stderr, "embed: %s failed: %s: %s\n", what, ws_status_name(status), err->message);
    return 1;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s ARCHIVE (anchor file or experiment directory)\n", argv[0]);
        return 2;
    }
    ws_error err;
    ws_error_clear(&err);
    ws_trace *trace = NULL; /* ours: ws_trace_free */
    int rc = ws_open(argv[1], &trace, &err);
    if (rc != WS_OK)
        return fail("ws_open", rc, &err);
    rc = ws_load(trace, NULL, 0, NULL, &err); /* every location */
    if (rc != WS_OK) {
        ws_trace_free(trace);
        return fail("ws_load", rc, &err);
    }
    printf("version %s\n", ws_version());
    printf("trace %u %llu %u\n", (unsigned)ws_trace_n_locations(trace), (unsigned long long)ws_trace_n_events(trace),
           (unsigned)ws_trace_n_callpaths(trace));

    ws_analysis_options options = {0};
    options.delay_model = WS_DELAY_PROPORTIONAL;
    options.critical_path = 1;
    ws_result *result = NULL; /* ours: ws_result_free */
    rc = ws_analyze_all(trace, &options, NULL, &result, &err);
    if (rc != WS_OK) {
        ws_trace_free(trace);
        return fail("ws_analyze_all", rc, &err);
    }

    uint32_t n_metrics = ws_result_n_metrics(result);
    uint32_t n_cp = ws_result_n_callpaths(result), n_loc = ws_result_n_locations(result);
    for (uint32_t k = 0; k < n_metrics; k++) {
        double total = 0.0;
        for (uint32_t c = 0; c < n_cp; c++)
            for (uint32_t l = 0; l < n_loc; l++)
                total += ws_result_value(result, k, c, l);
        printf("metric %s %s %.17g\n", ws_result_metric_id(result, k), ws_result_metric_unit(result, k), total);
    }
    for (uint32_t k = 0; k < n_metrics; k++)
        for (uint32_t c = 0; c < n_cp; c++)
            for (uint32_t l = 0; l < n_loc; l++) {
                double v = ws_result_value(result, k, c, l);
                if (v != 0.0)
                    printf("cell %s %u %u %.17g\n", ws_result_metric_id(result, k), (unsigned)c, (unsigned)l, v);
            }
    for (uint32_t c = 0; c < n_cp; c++) {
        char name[512];
        ws_callpath_name(trace, c, name, sizeof name);
        printf("callpath %u %s\n", (unsigned)c, name);
    }
    double length = 0.0;
    uint64_t n_segments = ws_result_n_path_segments(result);
    for (uint64_t i = 0; i < n_segments; i++) {
        double start, end;
        if (ws_result_path_segment(result, i, NULL, NULL, &start, &end) == WS_OK)
            length += end - start;
    }
    printf("path %llu %.17g\n", (unsigned long long)n_segments, length);

    ws_result_free(result);
    ws_trace_free(trace);
    return 0;
}
