/* The cost accounting of one synchronization interval, as written in
 * seed 004 (004_18d3349e8623e862.txt):
 *
 * proportional model (section 2.3.3, eqs. 2.3-2.6; seed 000 section IV):
 *   s = 1 / (sum(delta) + sum(wait))
 *   short[c] = s * gamma_s * delta[c]
 *   long[c]  = s * gamma_l * delta[c]
 *   prop[w]  = s * (gamma_s + gamma_l) * wait[w]   (returned in its two parts)
 *
 * wait-first model (section 3.3, eqs. 3.1-3.9):
 *   comp = sum(delta), wait_t = sum(wait)
 *   gamma_wait = min(wait_t, gamma_s), gamma_comp = max(0, gamma_s - wait_t)
 *   short[c] = gamma_comp / comp * delta[c]
 *   long[c]  = gamma_l * (gamma_comp / gamma_s) / comp * delta[c]
 *   prop[w]  = (gamma_wait + gamma_l * gamma_wait / gamma_s) / wait_t * wait[w]
 *
 * Both distribute exactly gamma_s + gamma_l (seed 004, Theorem 5).
 *
 * With `cap` (point-to-point wait states in the proportional model, as
 * Scalasca 2.6 computes them): the short-term scale s * gamma_s is capped
 * at 1, so that no call path is charged more than its excess and no wait
 * state of the delayer more than its length; the rest of gamma_s stays
 * uncharged (the caller counts it as undistributed).
 */
#include "analysis_int.h"

static double sum(const double *v, size_t n)
{
    double s = 0.0;
    for (size_t i = 0; i < n; i++)
        s += v[i];
    return s;
}

int ws_delay_kernel(int model, int cap, double gamma_s, double gamma_l, const double *delta, size_t n,
                    const double *waits, size_t m, double *short_cost, double *long_cost, double *prop_short,
                    double *prop_long)
{
    double comp = sum(delta, n), wait_t = sum(waits, m);
    for (size_t i = 0; i < n; i++)
        short_cost[i] = long_cost[i] = 0.0;
    for (size_t w = 0; w < m; w++)
        prop_short[w] = prop_long[w] = 0.0;
    if (gamma_s <= 0.0 && gamma_l <= 0.0)
        return 0;
    if (comp <= 0.0 && wait_t <= 0.0)
        return -1;

    if (model == WS_DELAY_WAIT_FIRST && gamma_s > 0.0) {
        double g_wait = wait_t < gamma_s ? wait_t : gamma_s;
        double g_comp = gamma_s - wait_t > 0.0 ? gamma_s - wait_t : 0.0;
        /* rounding can leave a sliver on a side that has nothing */
        if (comp <= 0.0) {
            g_wait = gamma_s;
            g_comp = 0.0;
        } else if (wait_t <= 0.0) {
            g_comp = gamma_s;
            g_wait = 0.0;
        }
        if (comp > 0.0) {
            double s_short = g_comp / comp;
            double s_long = gamma_l * (g_comp / gamma_s) / comp;
            for (size_t i = 0; i < n; i++) {
                short_cost[i] = s_short * delta[i];
                long_cost[i] = s_long * delta[i];
            }
        }
        if (wait_t > 0.0) {
            double s_short = g_wait / wait_t, s_long = gamma_l * g_wait / gamma_s / wait_t;
            for (size_t w = 0; w < m; w++) {
                prop_short[w] = s_short * waits[w];
                prop_long[w] = s_long * waits[w];
            }
        }
        return 0;
    }
    double s = 1.0 / (comp + wait_t);
    double s_short = s * gamma_s;
    if (cap && s_short > 1.0)
        s_short = 1.0;
    for (size_t i = 0; i < n; i++) {
        short_cost[i] = s_short * delta[i];
        long_cost[i] = s * gamma_l * delta[i];
    }
    for (size_t w = 0; w < m; w++) {
        prop_short[w] = s_short * waits[w];
        prop_long[w] = s * gamma_l * waits[w];
    }
    return 0;
}
