/* waitscope._core.analyze: runs the analyses of the C core. */
#include "py_common.h"

#include <math.h>
#include <string.h>

#include "../analysis/analysis.h"
#include "../analysis/delay_kernel.h"
#include "../replay/parallel.h"
#include "capi.h"

static void result_capsule_free(PyObject *capsule)
{
    ws_result *r = PyCapsule_GetPointer(capsule, "waitscope.result");
    ws_result_free(r);
}

static PyObject *metric_list(const ws_result *r)
{
    PyObject *list = PyList_New(r->n_metrics);
    if (!list)
        return NULL;
    for (uint32_t k = 0; k < r->n_metrics; k++) {
        const ws_metric_def *m = &ws_metric_table[r->metric[k]];
        PyObject *item = Py_BuildValue("{s:s,s:s,s:s,s:z,s:s}", "id", m->id, "name", m->name, "unit", m->unit,
                                       "parent", m->parent, "description", m->description);
        if (!item) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, k, item);
    }
    return list;
}

static PyObject *view_of(PyObject *owner, void *data, int nd, npy_intp *shape, int typenum)
{
    PyObject *arr = PyArray_SimpleNewFromData(nd, shape, typenum, data);
    if (!arr)
        return NULL;
    Py_INCREF(owner);
    if (PyArray_SetBaseObject((PyArrayObject *)arr, owner) != 0) {
        Py_DECREF(arr);
        return NULL;
    }
    return arr;
}

/* Adds a 1-D column `name` of n values (NPY_INT64 or NPY_FLOAT64) to
 * dict d; returns its data, or NULL with a Python error set.  Not zeroed:
 * every caller writes each element (the critical path's 1.6 million
 * pieces on the barrier trace: 51 MB not cleared first). */
static void *column(PyObject *d, const char *name, npy_intp n, int type)
{
    PyObject *a = PyArray_EMPTY(1, &n, type, 0);
    if (!a)
        return NULL;
    int rc = PyDict_SetItemString(d, name, a);
    Py_DECREF(a); /* the dict holds it */
    return rc == 0 ? PyArray_DATA((PyArrayObject *)a) : NULL;
}

static int64_t id_or_minus_one(uint32_t x)
{
    return x == WS_NONE32 ? -1 : (int64_t)x;
}

/* The critical path's segments as columns. */
static PyObject *path_arrays(const ws_result *r)
{
    npy_intp n = (npy_intp)r->n_path;
    PyObject *d = PyDict_New();
    if (!d)
        return NULL;
    int64_t *loc = column(d, "location", n, NPY_INT64), *cp = loc ? column(d, "callpath", n, NPY_INT64) : NULL;
    double *start = cp ? column(d, "start", n, NPY_FLOAT64) : NULL;
    double *end = start ? column(d, "end", n, NPY_FLOAT64) : NULL;
    if (!end) {
        Py_DECREF(d);
        return NULL;
    }
    for (npy_intp i = 0; i < n; i++) {
        loc[i] = r->path[i].location;
        cp[i] = id_or_minus_one(r->path[i].callpath);
        start[i] = r->path[i].start;
        end[i] = r->path[i].end;
    }
    return d;
}

/* The delay records as columns, with their delay vectors (entries
 * vector_offset .. + vector_length of vector_callpath/vector_value). */
static PyObject *record_arrays(const ws_result *r)
{
    npy_intp n = (npy_intp)r->n_records, m = (npy_intp)r->n_entries;
    PyObject *d = PyDict_New();
    if (!d)
        return NULL;
    static const char *const icols[] = {"delayer", "waiter", "kind", "sync_event", "vector_offset",
                                        "vector_length", NULL};
    static const char *const fcols[] = {"sync_time", "wait", "longterm_in", "short_cost", "long_cost",
                                        "propagated", NULL};
    for (int c = 0; icols[c]; c++) {
        int64_t *v = column(d, icols[c], n, NPY_INT64);
        if (!v)
            goto fail;
        for (npy_intp i = 0; i < n; i++) {
            const ws_delay_record *rec = &r->records[i];
            v[i] = c == 0   ? rec->delayer
                   : c == 1 ? rec->waiter
                   : c == 2 ? rec->kind
                   : c == 3 ? rec->sync_event
                   : c == 4 ? (int64_t)rec->vector_offset
                            : rec->vector_length;
        }
    }
    for (int c = 0; fcols[c]; c++) {
        double *v = column(d, fcols[c], n, NPY_FLOAT64);
        if (!v)
            goto fail;
        for (npy_intp i = 0; i < n; i++) {
            const ws_delay_record *rec = &r->records[i];
            v[i] = c == 0   ? rec->sync_time
                   : c == 1 ? rec->wait
                   : c == 2 ? rec->longterm_in
                   : c == 3 ? rec->short_cost
                   : c == 4 ? rec->long_cost
                            : rec->propagated;
        }
    }
    int64_t *vcp = column(d, "vector_callpath", m, NPY_INT64);
    double *vval = vcp ? column(d, "vector_value", m, NPY_FLOAT64) : NULL;
    if (!vval)
        goto fail;
    for (npy_intp i = 0; i < m; i++) {
        vcp[i] = r->record_cp[i];
        vval[i] = r->record_value[i];
    }
    return d;
fail:
    Py_DECREF(d);
    return NULL;
}

/* The wait-state records as columns (None without the option wait_records):
 * location, callpath, pattern, wrong_order, event, partner (int64, -1 for
 * WS_NONE32), start, end, wait (float64), and "metrics", the metric id of
 * each pattern code.  The C records are freed once copied. */
static PyObject *wait_record_arrays(ws_result *r)
{
    if (!r->has_wait_records)
        Py_RETURN_NONE;
    npy_intp n = (npy_intp)r->n_wait_records;
    static const char *const icols[] = {"location", "callpath", "pattern", "wrong_order", "event", "partner", NULL};
    static const char *const fcols[] = {"start", "end", "wait", NULL};
    PyObject *d = PyDict_New();
    if (!d)
        return NULL;
    for (int c = 0; icols[c]; c++) {
        int64_t *v = column(d, icols[c], n, NPY_INT64);
        if (!v)
            goto fail;
        for (npy_intp i = 0; i < n; i++) {
            const ws_wait_record *w = &r->wait_records[i];
            v[i] = id_or_minus_one(c == 0   ? w->location
                                   : c == 1 ? w->callpath
                                   : c == 2 ? w->pattern
                                   : c == 3 ? w->wrong_order
                                   : c == 4 ? w->event
                                            : w->partner);
        }
    }
    for (int c = 0; fcols[c]; c++) {
        double *v = column(d, fcols[c], n, NPY_FLOAT64);
        if (!v)
            goto fail;
        for (npy_intp i = 0; i < n; i++) {
            const ws_wait_record *w = &r->wait_records[i];
            v[i] = c == 0 ? w->start : c == 1 ? w->end : w->wait;
        }
    }
    PyObject *metrics = PyTuple_New(WS_WP_COUNT);
    if (!metrics)
        goto fail;
    for (int p = 0; p < WS_WP_COUNT; p++) {
        PyObject *id = PyUnicode_FromString(ws_metric_table[ws_wait_pattern_metric(p)].id);
        if (!id) {
            Py_DECREF(metrics);
            goto fail;
        }
        PyTuple_SET_ITEM(metrics, p, id);
    }
    int rc = PyDict_SetItemString(d, "metrics", metrics);
    Py_DECREF(metrics);
    if (rc != 0)
        goto fail;
    free(r->wait_records);
    r->wait_records = NULL;
    r->n_wait_records = r->cap_wait_records = 0;
    return d;
fail:
    Py_DECREF(d);
    return NULL;
}

/* The seconds of the steps that ran, by name, in the order they ran. */
static PyObject *step_timings(const ws_result *r)
{
    PyObject *d = PyDict_New();
    if (!d)
        return NULL;
    for (int k = 0; k < WS_STEP_COUNT; k++) {
        if (isnan(r->step_seconds[k]))
            continue;
        PyObject *v = PyFloat_FromDouble(r->step_seconds[k]);
        if (!v || PyDict_SetItemString(d, ws_analysis_step_name(k), v) != 0) {
            Py_XDECREF(v);
            Py_DECREF(d);
            return NULL;
        }
        Py_DECREF(v);
    }
    return d;
}

/* Converts a finished result into the dict the Python layer wraps. */
PyObject *ws_py_result_to_python(ws_result *r);
PyObject *ws_py_result_to_python(ws_result *r)
{
    PyObject *capsule = PyCapsule_New(r, "waitscope.result", result_capsule_free);
    if (!capsule) {
        ws_result_free(r);
        return NULL;
    }
    npy_intp shape[3] = {r->n_metrics, r->n_callpaths, r->n_locations};
    PyObject *cube = view_of(capsule, r->cube, 3, shape, NPY_FLOAT64);
    npy_intp nl = r->n_locations;
    PyObject *violations = PyArray_ZEROS(1, &nl, NPY_INT64, 0);
    if (violations)
        for (npy_intp i = 0; i < nl; i++)
            ((int64_t *)PyArray_DATA((PyArrayObject *)violations))[i] = (int64_t)r->clock_violations[i];
    PyObject *delay_model = r->delay_model == WS_DELAY_PROPORTIONAL ? PyUnicode_FromString("proportional")
                            : r->delay_model == WS_DELAY_WAIT_FIRST ? PyUnicode_FromString("wait-first")
                                                                    : (Py_INCREF(Py_None), Py_None);
    PyObject *partition = PyArray_ZEROS(1, &nl, NPY_INT64, 0);
    if (partition)
        for (npy_intp i = 0; i < nl; i++)
            ((int64_t *)PyArray_DATA((PyArrayObject *)partition))[i] = r->partition ? r->partition[i] : -1;
    PyObject *out = Py_BuildValue("{s:N,s:N,s:N,s:N,s:N,s:N,s:N,s:d,s:d,s:N,s:d,s:N}", "cube", cube, "metrics",
                                  metric_list(r), "clock_violations", violations, "delay_model", delay_model,
                                  "path", path_arrays(r), "records", record_arrays(r), "wait_records",
                                  wait_record_arrays(r), "path_start", r->path_start, "path_end", r->path_end,
                                  "partition", partition, "undistributed", r->undistributed, "timings",
                                  step_timings(r));
    Py_DECREF(capsule);
    return out;
}

static int parse_model(PyObject *obj, int *model)
{
    if (obj == Py_None) {
        *model = WS_DELAY_NONE;
        return 0;
    }
    const char *s = PyUnicode_AsUTF8(obj);
    if (!s)
        return -1;
    if (strcmp(s, "proportional") == 0)
        *model = WS_DELAY_PROPORTIONAL;
    else if (strcmp(s, "wait-first") == 0)
        *model = WS_DELAY_WAIT_FIRST;
    else {
        PyErr_Format(PyExc_ValueError, "unknown delay model '%s' (use 'proportional' or 'wait-first')", s);
        return -1;
    }
    return 0;
}

/* The options both modules take from Python (capi.h): delay_model (see
 * parse_model) and window None or (start, end) in seconds, start < end
 * (the Python layer checks the arguments and names them in its errors).
 * Raises and returns -1 on a bad value. */
static int parse_options(PyObject *model_obj, PyObject *window_obj, ws_analysis_options *opt)
{
    if (parse_model(model_obj, &opt->delay_model) != 0)
        return -1;
    if (window_obj == Py_None)
        return 0;
    double start, end;
    if (!PyArg_ParseTuple(window_obj, "dd", &start, &end))
        return -1;
    if (!(start < end)) {
        PyErr_Format(PyExc_ValueError, "window: start (%g) must be before end (%g)", start, end);
        return -1;
    }
    opt->has_window = 1;
    opt->window_start = start;
    opt->window_end = end;
    return 0;
}

static PyObject *py_analyze(PyObject *module, PyObject *args, PyObject *kwargs)
{
    (void)module;
    PyObject *window_obj = Py_None;
    static char *kwlist[] = {"trace",     "delay_model", "critical_path", "records",
                             "partition", "progress",    "schedule_seed", "wait_records", "window", "threads",
                             "replays", "path_walk", "scalasca_compat", NULL};
    PyObject *trace_obj, *model_obj = Py_None, *partition_obj = Py_None, *callback = Py_None;
    int critical_path = 0, records = 0, wait_records = 0, scalasca_compat = 0;
    const char *replays = "auto", *path_walk = "auto";
    unsigned long long seed = 0;
    unsigned int threads = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O!|OppOOKpOIssp", kwlist, ws_py_trace_type(), &trace_obj,
                                     &model_obj, &critical_path, &records, &partition_obj, &callback, &seed,
                                     &wait_records, &window_obj, &threads, &replays, &path_walk, &scalasca_compat))
        return NULL;
    if (threads == 0)
        return PyErr_Format(PyExc_ValueError, "threads must be at least 1");
    ws_trace *t = ((ws_py_trace *)trace_obj)->trace;
    ws_analysis_options opt;
    memset(&opt, 0, sizeof opt);
    if (parse_options(model_obj, window_obj, &opt) != 0)
        return NULL;
    opt.critical_path = critical_path;
    opt.keep_delay_records = records;
    opt.wait_records = wait_records;
    opt.schedule_seed = seed;
    /* for the comparison with Scalasca 2.6 (waitscope.h): its defects reproduced */
    opt.scalasca_compat = scalasca_compat;
    /* for the tests: "scheduled" (no replay as a join) or "joins" (every
     * replay that allows it as a join) */
    if (strcmp(replays, "auto") == 0)
        opt.replays = WS_REPLAYS_AUTO;
    else if (strcmp(replays, "scheduled") == 0)
        opt.replays = WS_REPLAYS_SCHEDULED;
    else if (strcmp(replays, "joins") == 0)
        opt.replays = WS_REPLAYS_JOINS;
    else
        return PyErr_Format(PyExc_ValueError, "replays must be 'auto', 'scheduled' or 'joins', got '%s'", replays);
    /* for the tests: the critical path "never" or "always" walked in one
     * place after the backward replay */
    if (strcmp(path_walk, "auto") == 0)
        opt.path_walk = WS_PATH_WALK_AUTO;
    else if (strcmp(path_walk, "never") == 0)
        opt.path_walk = WS_PATH_WALK_NEVER;
    else if (strcmp(path_walk, "always") == 0)
        opt.path_walk = WS_PATH_WALK_ALWAYS;
    else
        return PyErr_Format(PyExc_ValueError, "path_walk must be 'auto', 'never' or 'always', got '%s'", path_walk);
    PyArrayObject *partition = NULL;
    if (partition_obj != Py_None) {
        partition = (PyArrayObject *)PyArray_FROMANY(partition_obj, NPY_INT32, 1, 1, NPY_ARRAY_CARRAY | NPY_ARRAY_FORCECAST);
        if (!partition)
            return NULL;
        if (PyArray_SIZE(partition) != (npy_intp)ws_trace_n_locations(t)) {
            Py_DECREF(partition);
            return PyErr_Format(PyExc_ValueError, "partition needs one entry per location (%u), got %zd",
                                (unsigned)ws_trace_n_locations(t), (Py_ssize_t)PyArray_SIZE(partition));
        }
        opt.partition = PyArray_DATA(partition);
    }
    ws_py_progress progress;
    ws_py_progress_init(&progress, callback);
    ws_error err;
    ws_error_clear(&err);
    ws_result *r = NULL;
    int rc;
    if (ws_py_trace_begin((ws_py_trace *)trace_obj, 0, "analyze") != 0) {
        Py_XDECREF(partition);
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    rc = threads > 1 ? ws_analyze_threads(t, &opt, threads, &progress.progress, &r, &err)
                     : ws_analyze_all(t, &opt, &progress.progress, &r, &err);
    Py_END_ALLOW_THREADS
    ws_py_trace_end((ws_py_trace *)trace_obj, 0);
    Py_XDECREF(partition);
    ws_release_memory();
    if (rc != WS_OK)
        return ws_py_raise(&err);
    return ws_py_result_to_python(r);
}

static PyObject *py_metric_table(PyObject *module, PyObject *unused)
{
    (void)module;
    (void)unused;
    PyObject *list = PyList_New(WS_M_COUNT);
    if (!list)
        return NULL;
    for (int k = 0; k < WS_M_COUNT; k++) {
        const ws_metric_def *m = &ws_metric_table[k];
        PyObject *item = Py_BuildValue("{s:s,s:s,s:s,s:z,s:s,s:I}", "id", m->id, "name", m->name, "unit", m->unit,
                                       "parent", m->parent, "description", m->description, "group", m->group);
        if (!item) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, k, item);
    }
    return list;
}

static PyObject *py_delay_kernel(PyObject *module, PyObject *args, PyObject *kwargs)
{
    (void)module;
    static char *kwlist[] = {"model", "gamma_short", "gamma_long", "delta", "waits", "cap", NULL};
    PyObject *model_obj, *delta_obj, *waits_obj;
    double gs, gl;
    int cap = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OddOO|p", kwlist, &model_obj, &gs, &gl, &delta_obj, &waits_obj,
                                     &cap))
        return NULL;
    int model;
    if (parse_model(model_obj, &model) != 0)
        return NULL;
    if (model == WS_DELAY_NONE)
        return PyErr_Format(PyExc_ValueError, "a delay model is needed");
    PyArrayObject *delta = (PyArrayObject *)PyArray_FROMANY(delta_obj, NPY_FLOAT64, 1, 1, NPY_ARRAY_CARRAY);
    PyArrayObject *waits = (PyArrayObject *)PyArray_FROMANY(waits_obj, NPY_FLOAT64, 1, 1, NPY_ARRAY_CARRAY);
    if (!delta || !waits) {
        Py_XDECREF(delta);
        Py_XDECREF(waits);
        return NULL;
    }
    npy_intp n = PyArray_SIZE(delta), m = PyArray_SIZE(waits);
    PyObject *s = PyArray_ZEROS(1, &n, NPY_FLOAT64, 0), *l = PyArray_ZEROS(1, &n, NPY_FLOAT64, 0),
             *p = PyArray_ZEROS(1, &m, NPY_FLOAT64, 0), *q = PyArray_ZEROS(1, &m, NPY_FLOAT64, 0);
    if (!s || !l || !p || !q) {
        Py_XDECREF(s);
        Py_XDECREF(l);
        Py_XDECREF(p);
        Py_XDECREF(q);
        Py_DECREF(delta);
        Py_DECREF(waits);
        return NULL;
    }
    int rc = ws_delay_kernel(model, cap, gs, gl, PyArray_DATA(delta), (size_t)n, PyArray_DATA(waits), (size_t)m,
                             PyArray_DATA((PyArrayObject *)s), PyArray_DATA((PyArrayObject *)l),
                             PyArray_DATA((PyArrayObject *)p), PyArray_DATA((PyArrayObject *)q));
    Py_DECREF(delta);
    Py_DECREF(waits);
    if (rc != 0) {
        Py_DECREF(s);
        Py_DECREF(l);
        Py_DECREF(p);
        Py_DECREF(q);
        return PyErr_Format(PyExc_ValueError, "no computation and no wait state can carry the incoming cost");
    }
    return Py_BuildValue("(NNNN)", s, l, p, q);
}

static PyMethodDef functions[] = {
    {"analyze", (PyCFunction)(void (*)(void))py_analyze, METH_VARARGS | METH_KEYWORDS,
     "analyze(trace, delay_model=None, critical_path=False, records=False, partition=None, progress=None, "
     "schedule_seed=0, wait_records=False, window=None, threads=1, replays='auto', path_walk='auto', "
     "scalasca_compat=False)"},
    {"metric_table", (PyCFunction)py_metric_table, METH_NOARGS, "All metrics the core knows."},
    {"delay_kernel", (PyCFunction)(void (*)(void))py_delay_kernel, METH_VARARGS | METH_KEYWORDS,
     "delay_kernel(model, gamma_short, gamma_long, delta, waits, cap=False) -> (short, long, propagated short, "
     "propagated long)"},
    {NULL, NULL, 0, NULL},
};

static ws_trace *trace_of(PyObject *obj)
{
    return ((ws_py_trace *)obj)->trace;
}

static const ws_progress *progress_init(void *storage, PyObject *callback)
{
    ws_py_progress *p = storage;
    ws_py_progress_init(p, callback);
    return &p->progress;
}

static int capi_trace_begin(PyObject *trace, int write, const char *what)
{
    return ws_py_trace_begin((ws_py_trace *)trace, write, what);
}

static void capi_trace_end(PyObject *trace, int write)
{
    ws_py_trace_end((ws_py_trace *)trace, write);
}

static const ws_core_capi capi = {
    .version = WS_CAPI_VERSION,
    .trace_type = ws_py_trace_type,
    .trace_of = trace_of,
    .analyze = ws_analyze,
    .result_to_python = ws_py_result_to_python,
    .result_free = ws_result_free,
    .raise_error = ws_py_raise,
    .progress_size = sizeof(ws_py_progress),
    .progress_init = progress_init,
    .simulate = ws_py_simulate_run,
    .trace_n_locations = ws_trace_n_locations,
    .trace_begin = capi_trace_begin,
    .trace_end = capi_trace_end,
    .unify_callpaths = ws_unify_callpaths,
    .result_gather = ws_result_gather,
    .comm_layout = ws_comm_layout_of,
    .comm_layout_free = ws_comm_layout_free,
    .parse_options = parse_options,
};

int ws_py_register_analysis(PyObject *module)
{
    PyObject *capsule = PyCapsule_New((void *)&capi, "waitscope._core._C_API", NULL);
    if (!capsule || PyModule_AddObject(module, "_C_API", capsule) != 0) {
        Py_XDECREF(capsule);
        return -1;
    }
    return PyModule_AddFunctions(module, functions);
}
