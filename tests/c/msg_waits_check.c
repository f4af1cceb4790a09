/* Checks the per-row waits of csrc/analysis/msg_waits.c: a Late Sender
 * and a Late Receiver share one double per row, and a row that gets both
 * moves every row's Late Receiver to an array of its own, values intact.
 * Prints "ok" or the first mismatch (tests/test_analysis_state.py). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis_int.h"

static int failures;

static void expect(const ws_loc_data *d, uint64_t row, double ls, double lr, const char *what)
{
    double got_ls = ws_md_ls(d, row), got_lr = ws_md_lr(d, row);
    if (got_ls != ls || got_lr != lr) {
        printf("%s: row %llu: ls %g lr %g, expected %g %g\n", what, (unsigned long long)row, got_ls, got_lr, ls, lr);
        failures++;
    }
}

int main(void)
{
    enum { N = 5 };
    ws_loc_data d;
    memset(&d, 0, sizeof d);
    d.wait = calloc(N, sizeof *d.wait);
    if (!d.wait)
        return 2;
    /* one wait per row: no second array */
    if (ws_md_set_ls(&d, N, 0, 2.0) || ws_md_set_lr(&d, N, 1, 3.0) || ws_md_set_ls(&d, N, 2, 1.0) ||
        ws_md_set_lr(&d, N, 3, 4.0))
        return 2;
    expect(&d, 0, 2.0, 0.0, "Late Sender");
    expect(&d, 1, 0.0, 3.0, "Late Receiver");
    /* clearing the one a row does not have keeps the other */
    if (ws_md_set_lr(&d, N, 2, 0.0) || ws_md_set_ls(&d, N, 3, 0.0))
        return 2;
    expect(&d, 2, 1.0, 0.0, "Late Receiver cleared");
    expect(&d, 3, 0.0, 4.0, "Late Sender cleared");
    /* replacing and clearing the one it has */
    if (ws_md_set_ls(&d, N, 2, 0.25) || ws_md_set_lr(&d, N, 1, 0.0))
        return 2;
    expect(&d, 2, 0.25, 0.0, "Late Sender replaced");
    expect(&d, 1, 0.0, 0.0, "Late Receiver removed");
    if (d.lr) {
        printf("split without a row that has both\n");
        failures++;
    }
    /* row 0 gets a Late Receiver too: the split keeps every value */
    if (ws_md_set_lr(&d, N, 0, 0.5))
        return 2;
    if (!d.lr) {
        printf("no split for a row with both\n");
        failures++;
    } else {
        expect(&d, 0, 2.0, 0.5, "both after the split");
        expect(&d, 2, 0.25, 0.0, "Late Sender after the split");
        expect(&d, 3, 0.0, 4.0, "Late Receiver after the split");
        expect(&d, 4, 0.0, 0.0, "no wait after the split");
        /* and then each is set on its own */
        if (ws_md_set_ls(&d, N, 3, 1.5) || ws_md_set_lr(&d, N, 0, 0.0) || ws_md_set_ls(&d, N, 4, 0.0))
            return 2;
        expect(&d, 3, 1.5, 4.0, "Late Sender added after the split");
        expect(&d, 0, 2.0, 0.0, "Late Receiver cleared after the split");
    }
    /* the other way round: a Late Sender on a row with a Late Receiver */
    ws_loc_data e;
    memset(&e, 0, sizeof e);
    e.wait = calloc(N, sizeof *e.wait);
    if (!e.wait || ws_md_set_lr(&e, N, 4, 7.0) || ws_md_set_ls(&e, N, 1, 6.0) || ws_md_set_ls(&e, N, 4, 8.0))
        return 2;
    expect(&e, 4, 8.0, 7.0, "Late Sender joining a Late Receiver");
    expect(&e, 1, 6.0, 0.0, "other row");
    free(d.wait);
    free(d.lr);
    free(e.wait);
    free(e.lr);
    if (failures)
        return 1;
    printf("ok\n");
    return 0;
}
