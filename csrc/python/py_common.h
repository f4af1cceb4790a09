/* Shared pieces of the CPython binding layer. */
#ifndef WS_PYTHON_COMMON_H
#define WS_PYTHON_COMMON_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#define PY_ARRAY_UNIQUE_SYMBOL waitscope_ARRAY_API
#ifndef WS_PY_MODULE_MAIN
#define NO_IMPORT_ARRAY
#endif
#include <numpy/arrayobject.h>

#include "../common/error.h"
#include "../trace/otf2_io.h"
#include "../trace/trace.h"

/* The module's exception type for trace problems (waitscope.TraceError). */
PyObject *ws_py_trace_error(void);

/* Raises the Python exception that matches a core error and returns NULL. */
PyObject *ws_py_raise(const ws_error *err);

/* A progress object that checks for Ctrl-C (and calls an optional Python
 * callable) from inside long C work running without the GIL. */
typedef struct ws_py_progress {
    ws_progress progress;
    PyObject *callback; /* borrowed; may be NULL */
    int interrupted;
    double last_report;
} ws_py_progress;

void ws_py_progress_init(ws_py_progress *p, PyObject *callback);

/* The Trace type: owns a ws_trace.  Arrays it hands out keep it alive. */
typedef struct ws_py_trace {
    PyObject_HEAD
    ws_trace *trace;
    /* Work running without the GIL on this trace: readers (analyze, write,
     * clock correction) may overlap; a writer (load, call-path
     * unification) excludes everything else.  Changed with the GIL held. */
    int readers;
    int writer;
} ws_py_trace;

/* Starts work on the trace that runs without the GIL: `write` nonzero for
 * work that changes the store.  Returns 0, or raises RuntimeError naming
 * `what` (e.g. "load") and returns -1 if another thread's work on the
 * same trace conflicts.  Each successful call is paired with
 * ws_py_trace_end(t, write). */
int ws_py_trace_begin(ws_py_trace *t, int write, const char *what);
void ws_py_trace_end(ws_py_trace *t, int write);
/* For work that holds the GIL throughout (reading columns and definitions,
 * or writing times): 0, or RuntimeError and -1 while a conflicting
 * operation of another thread runs without the GIL. */
int ws_py_trace_check(ws_py_trace *t, int write, const char *what);

PyTypeObject *ws_py_trace_type(void);
/* Wraps (and takes ownership of) a trace. */
PyObject *ws_py_trace_wrap(ws_trace *t);

/* Zero-copy read-only 1-D NumPy view of `data` that keeps `owner` alive. */
PyObject *ws_py_view(PyObject *owner, void *data, npy_intp n, int typenum);

/* Registration functions of the binding's parts. */
int ws_py_register_trace(PyObject *module);
int ws_py_register_synth(PyObject *module);
int ws_py_register_analysis(PyObject *module);
int ws_py_register_clock(PyObject *module);
int ws_py_register_simulate(PyObject *module);
int ws_py_register_match(PyObject *module);
int ws_py_register_constants(PyObject *module);
int ws_py_register_alloc(PyObject *module);

#endif
