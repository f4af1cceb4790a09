/* Binding of the what-if simulation (analysis/simulate.h): a new Trace
 * with the simulated timestamps. */
#include "py_common.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../analysis/simulate.h"
#include "py_simulate.h"

/* per call path arrays from Python (None: NULL); *keep holds the array */
static int per_callpath(PyObject *obj, int type, uint32_t n, const char *what, PyArrayObject **keep)
{
    *keep = NULL;
    if (obj == Py_None)
        return 0;
    PyArrayObject *a = (PyArrayObject *)PyArray_FROMANY(obj, type, 1, 1, NPY_ARRAY_CARRAY | NPY_ARRAY_FORCECAST);
    if (!a)
        return -1;
    if (PyArray_SIZE(a) != (npy_intp)n) {
        PyErr_Format(PyExc_ValueError, "simulate: %s needs one entry per call path (%u), got %zd", what, (unsigned)n,
                     (Py_ssize_t)PyArray_SIZE(a));
        Py_DECREF(a);
        return -1;
    }
    *keep = a;
    return 0;
}

PyObject *ws_py_simulate_run(PyObject *trace_obj, PyObject *scale_obj, PyObject *balance_obj, PyObject *network_obj,
                             PyObject *callback, ws_transport *tr, const uint32_t *locs, uint32_t n,
                             void (*on_fail)(ws_transport *, ws_error *))
{
    ws_trace *t = ((ws_py_trace *)trace_obj)->trace;
    ws_sim_options o;
    memset(&o, 0, sizeof o);
    if (network_obj != Py_None) {
        if (!PyArg_ParseTuple(network_obj, "dd;simulate: network must be (latency_s, bandwidth_Bps)", &o.latency,
                              &o.bandwidth))
            return NULL;
        o.network = WS_NET_MODEL;
    }
    PyArrayObject *scale = NULL, *balance = NULL;
    if (per_callpath(scale_obj, NPY_FLOAT64, t->callpaths.n, "scale", &scale) != 0 ||
        per_callpath(balance_obj, NPY_UINT8, t->callpaths.n, "balance", &balance) != 0) {
        Py_XDECREF(scale);
        return NULL;
    }
    o.scale = scale ? PyArray_DATA(scale) : NULL;
    o.balance = balance ? PyArray_DATA(balance) : NULL;
    double **times = calloc(t->n_locations ? t->n_locations : 1, sizeof *times);
    if (!times) {
        Py_XDECREF(scale);
        Py_XDECREF(balance);
        return PyErr_NoMemory();
    }
    ws_py_progress progress;
    ws_py_progress_init(&progress, callback);
    ws_error err;
    ws_error_clear(&err);
    ws_sim_stats stats;
    ws_trace *copy = NULL;
    int rc;
    if (ws_py_trace_begin((ws_py_trace *)trace_obj, 0, "simulate") != 0) {
        Py_XDECREF(scale);
        Py_XDECREF(balance);
        free(times);
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    rc = ws_simulate(t, locs, n, tr, &o, &progress.progress, times, &stats, &err);
    if (rc == WS_OK && !(copy = ws_trace_copy(t, &err)))
        rc = err.code;
    if (rc != WS_OK && on_fail)
        on_fail(tr, &err);
    Py_END_ALLOW_THREADS
    ws_py_trace_end((ws_py_trace *)trace_obj, 0);
    Py_XDECREF(scale);
    Py_XDECREF(balance);
    if (rc == WS_OK && copy->clock.length && isfinite(stats.simulated_end) && isfinite(stats.recorded_end)) {
        /* the run's length changes by as much as its end moved */
        double length = (double)copy->clock.length +
                        (stats.simulated_end - stats.recorded_end) * (double)copy->clock.resolution;
        copy->clock.length = length > 0.0 ? (uint64_t)llround(length) : 0;
    }
    if (rc == WS_OK)
        for (uint32_t i = 0; i < n; i++)
            if (copy->locations[locs[i]].events.n && times[locs[i]]) {
                /* simulated times are no whole ticks: the copy takes them as seconds */
                ws_events_adopt_seconds(&copy->locations[locs[i]].events, times[locs[i]]);
                times[locs[i]] = NULL;
            }
    for (uint32_t i = 0; i < n; i++)
        free(times[locs[i]]);
    free(times);
    if (rc != WS_OK)
        return ws_py_raise(&err);
    PyObject *core = ws_py_trace_wrap(copy);
    if (!core)
        return NULL;
    return Py_BuildValue("N{s:K,s:K}", core, "sync_sends", (unsigned long long)stats.sync_sends, "balanced_visits",
                         (unsigned long long)stats.balanced_visits);
}

/* simulate(trace, scale=None, balance=None, network=None, progress=None)
 * -> (new trace, stats): every location must be loaded. */
static PyObject *py_simulate(PyObject *module, PyObject *args, PyObject *kwargs)
{
    (void)module;
    static char *kwlist[] = {"trace", "scale", "balance", "network", "progress", NULL};
    PyObject *trace_obj, *scale = Py_None, *balance = Py_None, *network = Py_None, *callback = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O!|OOOO", kwlist, ws_py_trace_type(), &trace_obj, &scale,
                                     &balance, &network, &callback))
        return NULL;
    ws_trace *t = ((ws_py_trace *)trace_obj)->trace;
    uint32_t *locs = PyMem_Malloc((t->n_locations ? t->n_locations : 1) * sizeof *locs);
    if (!locs)
        return PyErr_NoMemory();
    for (uint32_t i = 0; i < t->n_locations; i++) {
        if (!t->locations[i].loaded) {
            PyMem_Free(locs);
            return PyErr_Format(PyExc_ValueError,
                                "location %u is not loaded: the simulation needs the events of every location",
                                (unsigned)i);
        }
        locs[i] = i;
    }
    ws_transport *tr = ws_transport_local_new(t->n_locations);
    if (!tr) {
        PyMem_Free(locs);
        return PyErr_NoMemory();
    }
    PyObject *out = ws_py_simulate_run(trace_obj, scale, balance, network, callback, tr, locs, t->n_locations, NULL);
    tr->ops->destroy(tr);
    PyMem_Free(locs);
    return out;
}

static PyMethodDef functions[] = {
    {"simulate", (PyCFunction)(void (*)(void))py_simulate, METH_VARARGS | METH_KEYWORDS,
     "simulate(trace, scale=None, balance=None, network=None, progress=None) -> (trace, stats): what-if timestamps"},
    {NULL, NULL, 0, NULL}};

int ws_py_register_simulate(PyObject *module)
{
    return PyModule_AddFunctions(module, functions);
}
