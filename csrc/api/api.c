/* The public interface (waitscope.h) on the kernel's internals: each call
 * is a thin, checked entry into the trace store, the synthesizer or the
 * analysis; the accessors read the opaque handles. */
#include "../waitscope.h"

#include <stdlib.h>
#include <string.h>

#include "../analysis/analysis.h"
#include "../analysis/metrics.h"
#include "../replay/transport.h"
#include "../trace/otf2_io.h"
#include "../trace/synth.h"
#include "../trace/trace.h"

const char *ws_version(void)
{
    return WS_VERSION_STRING;
}

/* ---- traces ------------------------------------------------------------- */

int ws_open(const char *path, ws_trace **out, ws_error *err)
{
    if (!out)
        return ws_error_set(err, WS_ERR_ARGUMENT, "ws_open: out is NULL");
    *out = NULL;
    if (!path)
        return ws_error_set(err, WS_ERR_ARGUMENT, "ws_open: path is NULL");
    return ws_otf2_open(path, out, err);
}

int ws_load(ws_trace *t, const uint32_t *locations, uint32_t n, const ws_progress *progress, ws_error *err)
{
    if (!t)
        return ws_error_set(err, WS_ERR_ARGUMENT, "ws_load: trace is NULL");
    if (n && !locations)
        return ws_error_set(err, WS_ERR_ARGUMENT, "ws_load: %u locations but no list", (unsigned)n);
    return ws_otf2_load_events(t, locations, n, progress, err);
}

int ws_load_threads(ws_trace *t, const uint32_t *locations, uint32_t n, uint32_t n_threads,
                    const ws_progress *progress, ws_error *err)
{
    if (!t)
        return ws_error_set(err, WS_ERR_ARGUMENT, "ws_load_threads: trace is NULL");
    if (n && !locations)
        return ws_error_set(err, WS_ERR_ARGUMENT, "ws_load_threads: %u locations but no list", (unsigned)n);
    if (n_threads == 0)
        return ws_error_set(err, WS_ERR_ARGUMENT, "ws_load_threads: threads must be at least 1");
    return ws_otf2_load_events_threads(t, locations, n, n_threads, progress, err);
}

uint32_t ws_trace_n_locations(const ws_trace *t)
{
    return t ? t->n_locations : 0;
}

uint64_t ws_trace_n_events(const ws_trace *t)
{
    return t ? t->n_events : 0;
}

int ws_trace_location_loaded(const ws_trace *t, uint32_t loc)
{
    return t && loc < t->n_locations && t->locations[loc].loaded;
}

uint32_t ws_trace_n_callpaths(const ws_trace *t)
{
    return t ? t->callpaths.n : 0;
}

/* ---- synthesis ----------------------------------------------------------- */

int ws_synthesize(const ws_synth_program *program, const ws_synth_params *params, const ws_progress *progress,
                  ws_trace **out, ws_error *err)
{
    if (!out)
        return ws_error_set(err, WS_ERR_ARGUMENT, "ws_synthesize: out is NULL");
    return ws_synth_run(program, params, progress, out, err);
}

/* ---- analysis ------------------------------------------------------------- */

void ws_transport_free(ws_transport *tr)
{
    if (tr)
        tr->ops->destroy(tr);
}

int ws_analyze_all(const ws_trace *t, const ws_analysis_options *options, const ws_progress *progress,
                   ws_result **out, ws_error *err)
{
    if (!out)
        return ws_error_set(err, WS_ERR_ARGUMENT, "ws_analyze_all: out is NULL");
    *out = NULL;
    if (!t || !options)
        return ws_error_set(err, WS_ERR_ARGUMENT, "ws_analyze_all: %s is NULL", t ? "options" : "trace");
    for (uint32_t i = 0; i < t->n_locations; i++)
        if (!t->locations[i].loaded)
            return ws_error_set(err, WS_ERR_ARGUMENT,
                                "location %u is not loaded: the analysis needs the events of every location",
                                (unsigned)i);
    uint32_t *locs = ws_malloc_array(t->n_locations ? t->n_locations : 1, sizeof *locs);
    ws_transport *tr = ws_transport_local_new(t->n_locations);
    int rc;
    if (!locs || !tr) {
        rc = ws_error_nomem(err, "the locations of the analysis");
    } else {
        for (uint32_t i = 0; i < t->n_locations; i++)
            locs[i] = i;
        rc = ws_analyze(t, locs, t->n_locations, tr, options, progress, out, err);
    }
    ws_transport_free(tr);
    free(locs);
    return rc;
}

/* ---- results ---------------------------------------------------------------- */

uint32_t ws_result_n_metrics(const ws_result *r)
{
    return r ? r->n_metrics : 0;
}

const char *ws_result_metric_id(const ws_result *r, uint32_t k)
{
    return r && k < r->n_metrics ? ws_metric_table[r->metric[k]].id : NULL;
}

const char *ws_result_metric_unit(const ws_result *r, uint32_t k)
{
    return r && k < r->n_metrics ? ws_metric_table[r->metric[k]].unit : NULL;
}

int ws_result_metric_index(const ws_result *r, const char *id)
{
    if (!r || !id)
        return -1;
    for (uint32_t k = 0; k < r->n_metrics; k++)
        if (strcmp(ws_metric_table[r->metric[k]].id, id) == 0)
            return (int)k;
    return -1;
}

uint32_t ws_result_n_callpaths(const ws_result *r)
{
    return r ? r->n_callpaths : 0;
}

uint32_t ws_result_n_locations(const ws_result *r)
{
    return r ? r->n_locations : 0;
}

const double *ws_result_cube(const ws_result *r)
{
    return r ? r->cube : NULL;
}

double ws_result_value(const ws_result *r, uint32_t k, uint32_t callpath, uint32_t location)
{
    if (!r || k >= r->n_metrics || callpath >= r->n_callpaths || location >= r->n_locations)
        return 0.0;
    return r->cube[((size_t)k * r->n_callpaths + callpath) * r->n_locations + location];
}

const uint64_t *ws_result_clock_violations(const ws_result *r)
{
    return r ? r->clock_violations : NULL;
}

uint64_t ws_result_n_path_segments(const ws_result *r)
{
    return r ? r->n_path : 0;
}

int ws_result_path_segment(const ws_result *r, uint64_t i, uint32_t *location, uint32_t *callpath, double *start,
                           double *end)
{
    if (!r || i >= r->n_path)
        return WS_ERR_ARGUMENT;
    const ws_path_segment *s = &r->path[i];
    if (location)
        *location = s->location;
    if (callpath)
        *callpath = s->callpath;
    if (start)
        *start = s->start;
    if (end)
        *end = s->end;
    return WS_OK;
}
