/* waitscope._mpi_<MPI>: the parallel mode.  Built once per MPI library
 * found (mpicc.mpich, mpicc.openmpi, or mpicc); it reaches the analysis
 * through waitscope._core's C API and the MPI communicator through
 * mpi4py's C API (PyMPIComm_Get). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#define PY_ARRAY_UNIQUE_SYMBOL waitscope_mpi_ARRAY_API
#include <numpy/arrayobject.h>

#include <mpi.h>
#include <string.h>

#include "../replay/transport_mpi.h"
#include "capi.h"

/* One build per MPI library (setup.py): WS_MPI_MODULE names it, e.g.
 * _mpi_mpich or _mpi_openmpi; waitscope/_parallel.py imports the one
 * matching the MPI that mpi4py uses. */
#ifndef WS_MPI_MODULE
#define WS_MPI_MODULE _mpi
#endif
#define WS_STRINGIFY_(x) #x
#define WS_STRINGIFY(x) WS_STRINGIFY_(x)
#define WS_CONCAT_(a, b) a##b
#define WS_CONCAT(a, b) WS_CONCAT_(a, b)

typedef struct module_state {
    const ws_core_capi *capi;
    MPI_Comm *(*comm_get)(PyObject *);
} module_state;

static module_state *state_of(PyObject *module)
{
    return PyModule_GetState(module);
}

static int get_comm(module_state *st, PyObject *obj, MPI_Comm *comm)
{
    MPI_Comm *p = st->comm_get(obj);
    if (!p)
        return -1;
    *comm = *p;
    return 0;
}

static ws_trace *get_trace(module_state *st, PyObject *obj)
{
    if (!PyObject_TypeCheck(obj, st->capi->trace_type())) {
        PyErr_SetString(PyExc_TypeError, "expected a waitscope._core.Trace");
        return NULL;
    }
    return st->capi->trace_of(obj);
}

/* Parses the owner array (one process per location) of a trace. */
static PyArrayObject *owner_array(module_state *st, ws_trace *t, PyObject *owner_obj)
{
    PyArrayObject *owner =
        (PyArrayObject *)PyArray_FROMANY(owner_obj, NPY_UINT32, 1, 1, NPY_ARRAY_CARRAY | NPY_ARRAY_FORCECAST);
    if (owner && PyArray_SIZE(owner) != (npy_intp)st->capi->trace_n_locations(t)) {
        Py_DECREF(owner);
        PyErr_Format(PyExc_ValueError, "owner needs one process per location");
        return NULL;
    }
    return owner;
}

/* The locations `owner` gives to `rank` (caller frees), their count in *n;
 * NULL when out of memory. */
static uint32_t *own_locations(const uint32_t *owner, uint32_t n_locations, int rank, uint32_t *n)
{
    uint32_t *locs = malloc((n_locations ? n_locations : 1) * sizeof *locs);
    *n = 0;
    if (locs)
        for (uint32_t l = 0; l < n_locations; l++)
            if ((int)owner[l] == rank)
                locs[(*n)++] = l;
    return locs;
}

/* The MPI transport over comm for the trace's locations. */
static int new_transport(module_state *st, MPI_Comm comm, ws_trace *t, const uint32_t *owner, ws_transport **tr,
                         ws_error *err)
{
    ws_comm_layout layout;
    int rc = st->capi->comm_layout(t, &layout, err);
    if (rc == WS_OK)
        rc = ws_transport_mpi_new(comm, &layout, owner, tr, err);
    st->capi->comm_layout_free(&layout);
    return rc;
}

/* ---- call-path tree shared by all processes ------------------------------ */

static PyObject *py_unify_callpaths(PyObject *module, PyObject *args)
{
    module_state *st = state_of(module);
    PyObject *trace_obj, *comm_obj, *owner_obj;
    if (!PyArg_ParseTuple(args, "OOO", &trace_obj, &comm_obj, &owner_obj))
        return NULL;
    ws_trace *t = get_trace(st, trace_obj);
    MPI_Comm comm;
    if (!t || get_comm(st, comm_obj, &comm) != 0)
        return NULL;
    PyArrayObject *owner = owner_array(st, t, owner_obj);
    if (!owner)
        return NULL;
    ws_error err;
    ws_error_clear(&err);
    ws_transport *tr = NULL;
    int rc;
    if (st->capi->trace_begin(trace_obj, 1, "unify_callpaths") != 0) {
        Py_DECREF(owner);
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    rc = new_transport(st, comm, t, PyArray_DATA(owner), &tr, &err);
    if (rc == WS_OK)
        rc = st->capi->unify_callpaths(t, tr, &err);
    if (tr)
        tr->ops->destroy(tr);
    Py_END_ALLOW_THREADS
    st->capi->trace_end(trace_obj, 1);
    Py_DECREF(owner);
    if (rc != WS_OK)
        return st->capi->raise_error(&err);
    Py_RETURN_NONE;
}

/* ---- the analyses over the processes of comm, result on rank 0 ------------ */

static PyObject *py_analyze(PyObject *module, PyObject *args, PyObject *kwargs)
{
    module_state *st = state_of(module);
    PyObject *window_obj = Py_None;
    static char *kwlist[] = {"trace",     "comm",     "owner",      "delay_model",  "critical_path", "records",
                             "partition", "progress", "keep_share", "wait_records", "window", "scalasca_compat", NULL};
    PyObject *trace_obj, *comm_obj, *owner_obj, *model_obj = Py_None, *partition_obj = Py_None, *callback = Py_None;
    int critical_path = 0, records = 0, keep_share = 0, wait_records = 0, scalasca_compat = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOO|OppOOppOp", kwlist, &trace_obj, &comm_obj, &owner_obj,
                                     &model_obj, &critical_path, &records, &partition_obj, &callback, &keep_share,
                                     &wait_records, &window_obj, &scalasca_compat))
        return NULL;
    ws_trace *t = get_trace(st, trace_obj);
    MPI_Comm comm;
    if (!t || get_comm(st, comm_obj, &comm) != 0)
        return NULL;
    int rank;
    MPI_Comm_rank(comm, &rank);
    ws_analysis_options opt;
    memset(&opt, 0, sizeof opt);
    if (st->capi->parse_options(model_obj, window_obj, &opt) != 0)
        return NULL;
    opt.critical_path = critical_path;
    opt.keep_delay_records = records;
    opt.wait_records = wait_records;
    opt.scalasca_compat = scalasca_compat;
    PyArrayObject *owner = owner_array(st, t, owner_obj);
    if (!owner)
        return NULL;
    PyArrayObject *partition = NULL;
    if (partition_obj != Py_None) {
        partition =
            (PyArrayObject *)PyArray_FROMANY(partition_obj, NPY_INT32, 1, 1, NPY_ARRAY_CARRAY | NPY_ARRAY_FORCECAST);
        if (!partition) {
            Py_DECREF(owner);
            return NULL;
        }
        opt.partition = PyArray_DATA(partition);
    }
    const uint32_t *own = PyArray_DATA(owner);
    uint32_t n;
    uint32_t *locs = own_locations(own, st->capi->trace_n_locations(t), rank, &n);
    void *progress_storage = malloc(st->capi->progress_size);
    if (!locs || !progress_storage) {
        free(locs);
        free(progress_storage);
        Py_DECREF(owner);
        Py_XDECREF(partition);
        return PyErr_NoMemory();
    }
    const ws_progress *progress = st->capi->progress_init(progress_storage, callback);
    ws_error err;
    ws_error_clear(&err);
    ws_transport *tr = NULL;
    ws_result *r = NULL;
    int rc;
    if (st->capi->trace_begin(trace_obj, 0, "analyze") != 0) {
        free(locs);
        free(progress_storage);
        Py_DECREF(owner);
        Py_XDECREF(partition);
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    rc = new_transport(st, comm, t, own, &tr, &err);
    if (rc == WS_OK) {
        rc = st->capi->analyze(t, locs, n, tr, &opt, progress, &r, &err);
        if (rc != WS_OK)
            ws_transport_mpi_fail(tr, &err);
    }
    /* every process's share to rank 0, with the same transport */
    if (rc == WS_OK && !keep_share && (rc = st->capi->result_gather(r, tr, &err)) != WS_OK) {
        st->capi->result_free(r);
        r = NULL;
    }
    if (tr)
        tr->ops->destroy(tr);
    Py_END_ALLOW_THREADS
    st->capi->trace_end(trace_obj, 0);
    free(locs);
    free(progress_storage);
    Py_DECREF(owner);
    Py_XDECREF(partition);
    if (rc != WS_OK)
        return st->capi->raise_error(&err);
    if (!keep_share && rank != 0) {
        st->capi->result_free(r);
        Py_RETURN_NONE;
    }
    return st->capi->result_to_python(r);
}

/* simulate(trace, comm, owner, scale=None, balance=None, network=None,
 * progress=None) -> (this process's share of the new trace, stats) */
static PyObject *py_simulate(PyObject *module, PyObject *args, PyObject *kwargs)
{
    module_state *st = state_of(module);
    static char *kwlist[] = {"trace", "comm", "owner", "scale", "balance", "network", "progress", NULL};
    PyObject *trace_obj, *comm_obj, *owner_obj, *scale = Py_None, *balance = Py_None, *network = Py_None,
                                                *callback = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOO|OOOO", kwlist, &trace_obj, &comm_obj, &owner_obj, &scale,
                                     &balance, &network, &callback))
        return NULL;
    ws_trace *t = get_trace(st, trace_obj);
    MPI_Comm comm;
    if (!t || get_comm(st, comm_obj, &comm) != 0)
        return NULL;
    int rank;
    MPI_Comm_rank(comm, &rank);
    PyArrayObject *owner = owner_array(st, t, owner_obj);
    if (!owner)
        return NULL;
    const uint32_t *own = PyArray_DATA(owner);
    uint32_t n;
    uint32_t *locs = own_locations(own, st->capi->trace_n_locations(t), rank, &n);
    if (!locs) {
        Py_DECREF(owner);
        return PyErr_NoMemory();
    }
    ws_error err;
    ws_error_clear(&err);
    ws_transport *tr = NULL;
    PyObject *out = NULL;
    if (new_transport(st, comm, t, own, &tr, &err) == WS_OK)
        out = st->capi->simulate(trace_obj, scale, balance, network, callback, tr, locs, n, ws_transport_mpi_fail);
    else
        st->capi->raise_error(&err);
    if (tr)
        tr->ops->destroy(tr);
    free(locs);
    Py_DECREF(owner);
    return out;
}

static PyMethodDef functions[] = {
    {"unify_callpaths", py_unify_callpaths, METH_VARARGS,
     "unify_callpaths(trace, comm, owner): give every process the same call-path tree."},
    {"analyze", (PyCFunction)(void (*)(void))py_analyze, METH_VARARGS | METH_KEYWORDS,
     "analyze(trace, comm, owner, ...): the analyses over the processes of comm."},
    {"simulate", (PyCFunction)(void (*)(void))py_simulate, METH_VARARGS | METH_KEYWORDS,
     "simulate(trace, comm, owner, ...): the what-if simulation over the processes of comm."},
    {NULL, NULL, 0, NULL},
};

static int mpi_exec(PyObject *m)
{
    module_state *st = state_of(m);
    st->capi = PyCapsule_Import("waitscope._core._C_API", 0);
    if (!st->capi)
        return -1;
    if (st->capi->version != WS_CAPI_VERSION) {
        PyErr_SetString(PyExc_ImportError, "waitscope." WS_STRINGIFY(WS_MPI_MODULE) " does not match waitscope._core");
        return -1;
    }
    /* mpi4py's C API: the capsule of PyMPIComm_Get */
    PyObject *mpi = PyImport_ImportModule("mpi4py.MPI");
    if (!mpi)
        return -1;
    PyObject *capi = PyObject_GetAttrString(mpi, "__pyx_capi__");
    Py_DECREF(mpi);
    if (!capi)
        return -1;
    PyObject *capsule = PyDict_GetItemString(capi, "PyMPIComm_Get");
    if (!capsule) {
        Py_DECREF(capi);
        PyErr_SetString(PyExc_ImportError, "mpi4py does not export PyMPIComm_Get");
        return -1;
    }
    void *fn = PyCapsule_GetPointer(capsule, PyCapsule_GetName(capsule));
    Py_DECREF(capi);
    if (!fn)
        return -1;
    st->comm_get = (MPI_Comm * (*)(PyObject *)) fn;
    return 0;
}

static struct PyModuleDef mpi_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "waitscope." WS_STRINGIFY(WS_MPI_MODULE),
    .m_doc = "The parallel mode of waitscope (MPI transport).",
    .m_size = sizeof(module_state),
    .m_methods = functions,
};

PyMODINIT_FUNC WS_CONCAT(PyInit_, WS_MPI_MODULE)(void)
{
    import_array();
    PyObject *m = PyModule_Create(&mpi_module);
    if (!m)
        return NULL;
    if (mpi_exec(m) != 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
