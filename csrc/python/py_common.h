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
} ws_py_trace;

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
int ws_py_register_match(PyObject *module);
int ws_py_register_constants(PyObject *module);
int ws_py_register_alloc(PyObject *module);

#endif
