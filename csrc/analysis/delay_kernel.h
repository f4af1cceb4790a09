/* The delay kernel (delay_kernel.c): a pure function, also exposed to
 * Python (waitscope._core.delay_kernel) so that its equations are tested
 * on their own. */
#ifndef WS_ANALYSIS_DELAY_KERNEL_H
#define WS_ANALYSIS_DELAY_KERNEL_H

#include <stddef.h>

/* The kernel of one synchronization interval (seed 004): distributes
 * the incoming short-term (gamma_s) and long-term (gamma_l) costs over
 * the difference profile `delta` (n entries) and the delayer's wait
 * states `waits` (m entries).  Writes short[n], longc[n] and prop[m].
 * `cap` (proportional model only): the short-term scale is capped at 1,
 * as Scalasca 2.6 does for point-to-point wait states; what exceeds the
 * delayer's excess and waiting is then not distributed.  Returns 0, or -1
 * if nothing can carry the cost. */
int ws_delay_kernel(int model, int cap, double gamma_s, double gamma_l, const double *delta, size_t n,
                    const double *waits, size_t m, double *short_cost, double *long_cost, double *prop_short,
                    double *prop_long);

#endif
