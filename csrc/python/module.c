/* waitscope._core: module definition, error mapping, progress checks. */
#define WS_PY_MODULE_MAIN
#include "py_common.h"

#include "../common/clock.h"

typedef struct module_state {
    PyObject *trace_error;
} module_state;

static struct PyModuleDef core_module;

PyObject *ws_py_trace_error(void)
{
    PyObject *m = PyState_FindModule(&core_module);
    if (!m)
        return PyExc_RuntimeError;
    module_state *st = PyModule_GetState(m);
    return st->trace_error;
}

PyObject *ws_py_raise(const ws_error *err)
{
    if (PyErr_Occurred())
        return NULL; /* e.g. KeyboardInterrupt raised during a check */
    PyObject *type;
    switch (err->code) {
    case WS_ERR_NOMEM:
        return PyErr_NoMemory();
    case WS_ERR_ARGUMENT:
        type = PyExc_ValueError;
        break;
    case WS_ERR_INTERRUPTED:
        type = PyExc_KeyboardInterrupt;
        break;
    case WS_ERR_INTERNAL:
        type = PyExc_RuntimeError;
        break;
    default:
        type = ws_py_trace_error();
        break;
    }
    PyErr_SetString(type, err->message[0] ? err->message : "unknown error");
    return NULL;
}

/* Runs without the GIL held by the caller: takes it briefly. */
static int progress_check(void *context, const char *stage, uint64_t done, uint64_t total)
{
    ws_py_progress *p = context;
    int stop = 0;
    PyGILState_STATE g = PyGILState_Ensure();
    if (PyErr_CheckSignals() != 0) {
        stop = 1;
    } else if (p->callback && p->callback != Py_None) {
        double now = ws_monotonic_seconds();
        if (now - p->last_report >= 0.2 || done == total) {
            p->last_report = now;
            PyObject *r = PyObject_CallFunction(p->callback, "sKK", stage, (unsigned long long)done,
                                                (unsigned long long)total);
            if (!r)
                stop = 1;
            Py_XDECREF(r);
        }
    }
    PyGILState_Release(g);
    if (stop)
        p->interrupted = 1;
    return stop;
}

/* Runs without the GIL held by the caller: only looks at Ctrl-C. */
static int interrupt_check(void *context)
{
    ws_py_progress *p = context;
    PyGILState_STATE g = PyGILState_Ensure();
    int stop = PyErr_CheckSignals() != 0;
    PyGILState_Release(g);
    if (stop)
        p->interrupted = 1;
    return stop;
}

void ws_py_progress_init(ws_py_progress *p, PyObject *callback)
{
    p->progress.callback = progress_check;
    p->progress.interrupted = interrupt_check;
    p->progress.context = p;
    p->callback = callback;
    p->interrupted = 0;
    p->last_report = 0.0;
}

PyObject *ws_py_view(PyObject *owner, void *data, npy_intp n, int typenum)
{
    /* an empty column may have no storage (stores built in memory) */
    static const uint64_t empty[1] = {0};
    if (!data && n == 0)
        data = (void *)empty;
    PyObject *arr = PyArray_SimpleNewFromData(1, &n, typenum, data);
    if (!arr)
        return NULL;
    Py_INCREF(owner);
    if (PyArray_SetBaseObject((PyArrayObject *)arr, owner) != 0) {
        Py_DECREF(arr);
        return NULL;
    }
    PyArray_CLEARFLAGS((PyArrayObject *)arr, NPY_ARRAY_WRITEABLE);
    return arr;
}

static int core_exec(PyObject *m)
{
    module_state *st = PyModule_GetState(m);
    st->trace_error = PyErr_NewExceptionWithDoc(
        "waitscope.TraceError",
        "A trace cannot be read or is inconsistent; the message names the file and the problem.",
        NULL, NULL);
    if (!st->trace_error)
        return -1;
    Py_INCREF(st->trace_error);
    if (PyModule_AddObject(m, "TraceError", st->trace_error) != 0) {
        Py_DECREF(st->trace_error);
        return -1;
    }
    if (ws_py_register_trace(m) != 0)
        return -1;
    if (ws_py_register_synth(m) != 0)
        return -1;
    if (ws_py_register_analysis(m) != 0)
        return -1;
    if (ws_py_register_clock(m) != 0)
        return -1;
    if (ws_py_register_simulate(m) != 0)
        return -1;
    if (ws_py_register_match(m) != 0)
        return -1;
    if (ws_py_register_constants(m) != 0)
        return -1;
    if (ws_py_register_alloc(m) != 0)
        return -1;
    return 0;
}

static int core_traverse(PyObject *m, visitproc visit, void *arg)
{
    module_state *st = PyModule_GetState(m);
    Py_VISIT(st->trace_error);
    return 0;
}

static int core_clear(PyObject *m)
{
    module_state *st = PyModule_GetState(m);
    Py_CLEAR(st->trace_error);
    return 0;
}

static struct PyModuleDef core_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "waitscope._core",
    .m_doc = "The C core of waitscope: trace store, replay engine and analyses.",
    .m_size = sizeof(module_state),
    .m_traverse = core_traverse,
    .m_clear = core_clear,
};

PyMODINIT_FUNC PyInit__core(void)
{
    import_array();
    PyObject *m = PyModule_Create(&core_module);
    if (!m)
        return NULL;
    if (core_exec(m) != 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
