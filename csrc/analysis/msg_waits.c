/* The waits of a location's message rows: a Late Sender and a Late
 * Receiver in one double per row (analysis_int.h, ws_loc_data.wait), and
 * the split into two arrays for a row that has both. */
#include "analysis_int.h"

#include <stdlib.h>

#include "../common/alloc.h"

/* Every row's Late Receiver moves out of `wait` into `lr`, for a row that
 * has both (analysis_int.h). */
static int split_waits(ws_loc_data *d, uint64_t n_rows)
{
    d->lr = ws_calloc_dense(n_rows ? (size_t)n_rows : 1, sizeof *d->lr);
    if (!d->lr)
        return -1;
    for (uint64_t k = 0; k < n_rows; k++)
        if (d->wait[k] < 0.0) {
            d->lr[k] = -d->wait[k];
            d->wait[k] = 0.0;
        }
    return 0;
}

int ws_md_set_ls(ws_loc_data *d, uint64_t n_rows, uint64_t row, double v)
{
    if (d->lr || v > 0.0) {
        if (!d->lr && d->wait[row] < 0.0 && split_waits(d, n_rows) != 0)
            return -1;
        d->wait[row] = v;
    } else if (d->wait[row] > 0.0) {
        d->wait[row] = 0.0;
    }
    return 0;
}

int ws_md_set_lr(ws_loc_data *d, uint64_t n_rows, uint64_t row, double v)
{
    if (!d->lr && v > 0.0 && d->wait[row] > 0.0 && split_waits(d, n_rows) != 0)
        return -1;
    if (d->lr)
        d->lr[row] = v;
    else if (v > 0.0)
        d->wait[row] = -v;
    else if (d->wait[row] < 0.0)
        d->wait[row] = 0.0;
    return 0;
}
