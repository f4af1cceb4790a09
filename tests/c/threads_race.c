/* The threaded analysis under ThreadSanitizer, built by
 * tests/test_threads_transport.py: for each ARCHIVE, ws_analyze_all and
 * ws_analyze_threads with 2, 3 and 4 threads (every analysis switched
 * on) must give the same cube, or fail with the same status and message.
 * Prints one line per archive and thread count; ThreadSanitizer reports
 * any data race on stderr and makes the exit status nonzero. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "waitscope.h"

static int check(const char *path)
{
    ws_error err, err1;
    ws_error_clear(&err);
    ws_trace *t = NULL;
    if (ws_open(path, &t, &err) || ws_load(t, NULL, 0, NULL, &err)) {
        fprintf(stderr, "%s: %s\n", path, err.message);
        ws_trace_free(t);
        return 1;
    }
    ws_analysis_options o;
    memset(&o, 0, sizeof o);
    o.delay_model = WS_DELAY_PROPORTIONAL;
    o.critical_path = 1;
    o.keep_delay_records = 1;
    o.wait_records = 1;
    ws_result *one = NULL;
    ws_error_clear(&err1);
    int rc1 = ws_analyze_all(t, &o, NULL, &one, &err1);
    int bad = 0;
    for (uint32_t n = 2; n <= 4; n++) {
        ws_result *r = NULL;
        ws_error_clear(&err);
        int rc = ws_analyze_threads(t, &o, n, NULL, &r, &err);
        int same;
        if (rc1 || rc) {
            same = rc == rc1 && strcmp(err.message, err1.message) == 0;
        } else {
            size_t cells = (size_t)ws_result_n_metrics(one) * ws_result_n_callpaths(one) * ws_result_n_locations(one);
            same = ws_result_n_metrics(r) == ws_result_n_metrics(one) &&
                   ws_result_n_callpaths(r) == ws_result_n_callpaths(one) &&
                   ws_result_n_locations(r) == ws_result_n_locations(one) &&
                   memcmp(ws_result_cube(r), ws_result_cube(one), cells * sizeof(double)) == 0 &&
                   ws_result_n_path_segments(r) == ws_result_n_path_segments(one);
        }
        printf("%s threads %u status %s same %d\n", path, (unsigned)n, ws_status_name(rc), same);
        bad |= !same;
        ws_result_free(r);
    }
    ws_result_free(one);
    ws_trace_free(t);
    return bad;
}

int main(int argc, char **argv)
{
    int bad = 0;
    for (int i = 1; i < argc; i++)
        bad |= check(argv[i]);
    return bad;
}
