/* Binding of the timestamp correction (replay/clock_correction.h). */
#include "py_common.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../replay/clock_correction.h"

static void free_times(double **times, uint32_t n)
{
    if (!times)
        return;
    for (uint32_t i = 0; i < n; i++)
        free(times[i]);
    free(times);
}

/* correct_clocks(trace, method="clc", keep_original=False): corrects the
 * event times of the store in place (the NumPy views see the new values).
 * Returns a dict: n_jumps, n_moved, max_shift and, with keep_original, the
 * previous times per location ("original"), for set_times. */
static PyObject *py_correct_clocks(PyObject *module, PyObject *args, PyObject *kwargs)
{
    (void)module;
    static char *kwlist[] = {"trace", "method", "keep_original", NULL};
    PyObject *trace_obj;
    const char *method = "clc";
    int keep = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O!|sp", kwlist, ws_py_trace_type(), &trace_obj, &method, &keep))
        return NULL;
    if (strcmp(method, "clc") != 0)
        return PyErr_Format(PyExc_ValueError, "clock_correction: unknown method '%s' (known: 'clc')", method);
    ws_trace *t = ((ws_py_trace *)trace_obj)->trace;
    double **times = calloc(t->n_locations ? t->n_locations : 1, sizeof *times);
    if (!times)
        return PyErr_NoMemory();
    ws_error err;
    ws_error_clear(&err);
    ws_clc_stats stats;
    int rc;
    if (ws_py_trace_begin((ws_py_trace *)trace_obj, 0, "correct_clocks") != 0) {
        free(times);
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    rc = ws_clock_correct_clc(t, NULL, times, &stats, &err);
    Py_END_ALLOW_THREADS
    ws_py_trace_end((ws_py_trace *)trace_obj, 0);
    if (rc != WS_OK) {
        free_times(times, t->n_locations);
        return ws_py_raise(&err);
    }
    PyObject *original = NULL;
    if (keep) {
        original = PyList_New(t->n_locations);
        if (!original) {
            free_times(times, t->n_locations);
            return NULL;
        }
        for (uint32_t i = 0; i < t->n_locations; i++) {
            npy_intp n = (npy_intp)t->locations[i].events.n;
            PyObject *a = PyArray_SimpleNew(1, &n, NPY_FLOAT64);
            if (!a) {
                Py_DECREF(original);
                free_times(times, t->n_locations);
                return NULL;
            }
            ws_events_times(&t->locations[i].events, PyArray_DATA((PyArrayObject *)a));
            PyList_SET_ITEM(original, i, a);
        }
    }
    /* the corrected times are no whole ticks: the store takes them as seconds */
    for (uint32_t i = 0; i < t->n_locations; i++)
        if (t->locations[i].events.n && times[i]) {
            ws_events_adopt_seconds(&t->locations[i].events, times[i]);
            times[i] = NULL;
        }
    free_times(times, t->n_locations);
    PyObject *out = Py_BuildValue("{s:K,s:K,s:d}", "n_jumps", (unsigned long long)stats.n_jumps, "n_moved",
                                  (unsigned long long)stats.n_moved, "max_shift", stats.max_shift);
    if (!out) {
        Py_XDECREF(original);
        return NULL;
    }
    if (original) {
        int bad = PyDict_SetItemString(out, "original", original);
        Py_DECREF(original);
        if (bad) {
            Py_DECREF(out);
            return NULL;
        }
    }
    return out;
}

/* set_times(trace, times): writes event times, one float64 array per
 * location (e.g. those kept by correct_clocks(..., keep_original=True));
 * each must be finite and non-decreasing. */
static PyObject *py_set_times(PyObject *module, PyObject *args)
{
    (void)module;
    PyObject *trace_obj, *list;
    if (!PyArg_ParseTuple(args, "O!O!", ws_py_trace_type(), &trace_obj, &PyList_Type, &list))
        return NULL;
    if (ws_py_trace_check((ws_py_trace *)trace_obj, 1, "set_times") != 0)
        return NULL;
    ws_trace *t = ((ws_py_trace *)trace_obj)->trace;
    if (PyList_GET_SIZE(list) != (Py_ssize_t)t->n_locations)
        return PyErr_Format(PyExc_ValueError, "set_times needs one array per location (%u), got %zd",
                            (unsigned)t->n_locations, PyList_GET_SIZE(list));
    for (uint32_t i = 0; i < t->n_locations; i++) {
        PyObject *a = PyList_GET_ITEM(list, i);
        if (!PyArray_Check(a) || PyArray_TYPE((PyArrayObject *)a) != NPY_FLOAT64 ||
            PyArray_NDIM((PyArrayObject *)a) != 1 || !PyArray_IS_C_CONTIGUOUS((PyArrayObject *)a) ||
            PyArray_SIZE((PyArrayObject *)a) != (npy_intp)t->locations[i].events.n)
            return PyErr_Format(PyExc_ValueError, "set_times: entry %u is not a float64 array of the location's "
                                "%llu event times", (unsigned)i, (unsigned long long)t->locations[i].events.n);
        const double *v = PyArray_DATA((PyArrayObject *)a);
        for (npy_intp k = 0; k < PyArray_SIZE((PyArrayObject *)a); k++)
            if (!isfinite(v[k]) || (k > 0 && v[k] < v[k - 1]))
                return PyErr_Format(PyExc_ValueError, "set_times: the times of location %u are not finite and "
                                    "non-decreasing (event %zd)", (unsigned)i, (Py_ssize_t)k);
    }
    for (uint32_t i = 0; i < t->n_locations; i++)
        if (ws_events_widen(&t->locations[i].events) != 0)
            return PyErr_NoMemory();
    for (uint32_t i = 0; i < t->n_locations; i++)
        if (t->locations[i].events.n)
            memcpy(t->locations[i].events.time, PyArray_DATA((PyArrayObject *)PyList_GET_ITEM(list, i)),
                   t->locations[i].events.n * sizeof(double));
    Py_RETURN_NONE;
}

static PyMethodDef functions[] = {
    {"correct_clocks", (PyCFunction)(void (*)(void))py_correct_clocks, METH_VARARGS | METH_KEYWORDS,
     "correct_clocks(trace, method='clc', keep_original=False) -> dict: restores the clock condition in place"},
    {"set_times", py_set_times, METH_VARARGS, "set_times(trace, times): writes the event times of every location"},
    {NULL, NULL, 0, NULL}};

int ws_py_register_clock(PyObject *module)
{
    return PyModule_AddFunctions(module, functions);
}
