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

/* ---- call-path tree shared by all processes ------------------------------ */

/* Every process built its own call-path tree while loading its
 * locations.  The trees are merged in process order, which is the order
 * of the locations (blocks are contiguous), so the ids are those a single
 * process loading all locations would create. */
static PyObject *py_unify_callpaths(PyObject *module, PyObject *args)
{
    module_state *st = state_of(module);
    PyObject *trace_obj, *comm_obj;
    if (!PyArg_ParseTuple(args, "OO", &trace_obj, &comm_obj))
        return NULL;
    ws_trace *t = get_trace(st, trace_obj);
    MPI_Comm comm;
    if (!t || get_comm(st, comm_obj, &comm) != 0)
        return NULL;
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    ws_callpaths *cp = &t->callpaths;
    int n = (int)cp->n;
    int *counts = calloc((size_t)size, sizeof *counts), *displs = calloc((size_t)size, sizeof *displs);
    uint32_t *mine = malloc((size_t)(n ? n : 1) * 2 * sizeof *mine);
    uint32_t *all = NULL, *my_map = NULL, *map = NULL;
    ws_callpaths g;
    memset(&g, 0, sizeof g);
    ws_map64_init(&g.index);
    PyObject *result = NULL;
    if (!counts || !displs || !mine) {
        PyErr_NoMemory();
        goto done;
    }
    for (int i = 0; i < n; i++) {
        mine[2 * i] = cp->parent[i];
        mine[2 * i + 1] = cp->region[i];
    }
    int n2 = 2 * n;
    MPI_Allgather(&n2, 1, MPI_INT, counts, 1, MPI_INT, comm);
    long long total = 0;
    for (int p = 0; p < size; p++) {
        displs[p] = (int)total;
        total += counts[p];
    }
    all = malloc((size_t)(total ? total : 1) * sizeof *all);
    if (!all) {
        PyErr_NoMemory();
        goto done;
    }
    MPI_Allgatherv(mine, n2, MPI_UINT32_T, all, counts, displs, MPI_UINT32_T, comm);
    for (int p = 0; p < size; p++) {
        int np = counts[p] / 2;
        free(map);
        map = malloc((size_t)(np ? np : 1) * sizeof *map);
        if (!map) {
            PyErr_NoMemory();
            goto done;
        }
        for (int i = 0; i < np; i++) {
            uint32_t parent = all[displs[p] + 2 * i], region = all[displs[p] + 2 * i + 1];
            uint32_t gp = parent == WS_NONE32 ? WS_NONE32 : map[parent];
            uint32_t id = ws_callpath_child(&g, gp, region);
            if (id == WS_NONE32) {
                PyErr_NoMemory();
                goto done;
            }
            map[i] = id;
        }
        if (p == rank) {
            my_map = map;
            map = NULL;
        }
    }
    /* renumber the local events */
    for (uint32_t l = 0; l < t->n_locations; l++) {
        ws_events *e = &t->locations[l].events;
        if (!t->locations[l].loaded)
            continue;
        for (uint64_t i = 0; i < e->n; i++)
            if (e->kind[i] == WS_EV_ENTER || e->kind[i] == WS_EV_LEAVE)
                e->ref[i] = my_map[e->ref[i]];
    }
    free(cp->parent);
    free(cp->region);
    free(cp->first_child);
    free(cp->next_sibling);
    free(cp->depth);
    ws_map64_free(&cp->index);
    *cp = g;
    memset(&g, 0, sizeof g);
    result = Py_None;
    Py_INCREF(result);
done:
    free(counts);
    free(displs);
    free(mine);
    free(all);
    free(map);
    free(my_map);
    free(g.parent);
    free(g.region);
    free(g.first_child);
    free(g.next_sibling);
    free(g.depth);
    ws_map64_free(&g.index);
    return result;
}

/* ---- results to rank 0 ----------------------------------------------------- */

static int reduce_doubles(double *data, size_t n, int rank, MPI_Comm comm)
{
    const size_t chunk = (size_t)1 << 24;
    for (size_t off = 0; off < n; off += chunk) {
        int m = (int)(n - off < chunk ? n - off : chunk);
        int rc = rank == 0 ? MPI_Reduce(MPI_IN_PLACE, data + off, m, MPI_DOUBLE, MPI_SUM, 0, comm)
                           : MPI_Reduce(data + off, NULL, m, MPI_DOUBLE, MPI_SUM, 0, comm);
        if (rc != MPI_SUCCESS)
            return -1;
    }
    return 0;
}

/* Gathers `count` elements of `size` bytes from every process to rank 0;
 * returns a malloc'ed block on rank 0 (and *total), NULL elsewhere. */
static void *gather_bytes(const void *data, size_t count, size_t size, int rank, int nprocs, MPI_Comm comm,
                          size_t *total, int **counts_out)
{
    int bytes = (int)(count * size);
    int *counts = rank == 0 ? calloc((size_t)nprocs, sizeof *counts) : NULL;
    int *displs = rank == 0 ? calloc((size_t)nprocs, sizeof *displs) : NULL;
    MPI_Gather(&bytes, 1, MPI_INT, counts, 1, MPI_INT, 0, comm);
    void *out = NULL;
    size_t sum = 0;
    if (rank == 0) {
        for (int p = 0; p < nprocs; p++) {
            displs[p] = (int)sum;
            sum += (size_t)counts[p];
        }
        out = malloc(sum ? sum : 1);
    }
    MPI_Gatherv(data, bytes, MPI_BYTE, out, counts, displs, MPI_BYTE, 0, comm);
    free(displs);
    if (counts_out)
        *counts_out = counts;
    else
        free(counts);
    *total = rank == 0 ? sum / size : 0;
    return out;
}

static int cmp_segment(const void *x, const void *y)
{
    const ws_path_segment *a = x, *b = y;
    if (a->start != b->start)
        return a->start < b->start ? -1 : 1;
    return (a->end > b->end) - (a->end < b->end);
}

/* Moves every process's share of the result to rank 0. */
static int gather_result(const ws_core_capi *capi, ws_result *r, int rank, int nprocs, MPI_Comm comm)
{
    int failed = 0;
    size_t cells = (size_t)r->n_metrics * r->n_callpaths * r->n_locations;
    if (reduce_doubles(r->cube, cells, rank, comm) != 0)
        return -1;
    if (rank == 0)
        MPI_Reduce(MPI_IN_PLACE, r->clock_violations, (int)r->n_locations, MPI_UINT64_T, MPI_SUM, 0, comm);
    else
        MPI_Reduce(r->clock_violations, NULL, (int)r->n_locations, MPI_UINT64_T, MPI_SUM, 0, comm);
    /* critical path pieces */
    size_t n_path = 0;
    ws_path_segment *path = gather_bytes(r->path, r->n_path, sizeof *r->path, rank, nprocs, comm, &n_path, NULL);
    /* delay records and their vectors */
    size_t n_rec = 0, n_ent = 0;
    int *rec_counts = NULL;
    ws_delay_record *records =
        gather_bytes(r->records, r->n_records, sizeof *r->records, rank, nprocs, comm, &n_rec, &rec_counts);
    uint32_t *cps = gather_bytes(r->record_cp, r->n_entries, sizeof *r->record_cp, rank, nprocs, comm, &n_ent, NULL);
    int *ent_counts = NULL;
    double *values =
        gather_bytes(r->record_value, r->n_entries, sizeof *r->record_value, rank, nprocs, comm, &n_ent, &ent_counts);
    if (rank == 0) {
        /* vector offsets are relative to each process's entries */
        size_t rec = 0, base = 0;
        for (int p = 0; p < nprocs; p++) {
            size_t k = (size_t)rec_counts[p] / sizeof *records;
            for (size_t i = 0; i < k; i++)
                records[rec + i].vector_offset += base;
            rec += k;
            base += (size_t)ent_counts[p] / sizeof *values;
        }
        qsort(path, n_path, sizeof *path, cmp_segment);
        free(r->path);
        r->path = path;
        r->n_path = r->cap_path = n_path;
        free(r->records);
        r->records = records;
        r->n_records = r->cap_records = n_rec;
        free(r->record_cp);
        free(r->record_value);
        r->record_cp = cps;
        r->record_value = values;
        r->n_entries = r->cap_entries = n_ent;
    }
    free(rec_counts);
    free(ent_counts);
    /* wait-state records, each process's sorted; blocks of locations in
     * process order usually leave them sorted */
    if (r->has_wait_records) {
        size_t n_wait = 0;
        ws_wait_record *waits = gather_bytes(r->wait_records, r->n_wait_records, sizeof *r->wait_records, rank,
                                             nprocs, comm, &n_wait, NULL);
        if (rank == 0 && !waits) {
            failed = 1; /* out of memory: reported after the collectives below */
        } else if (rank == 0) {
            capi->wait_records_sort(waits, n_wait);
            free(r->wait_records);
            r->wait_records = waits;
            r->n_wait_records = r->cap_wait_records = n_wait;
        }
    }
    /* the path's start is known where the path began */
    double start = r->path_start;
    MPI_Allreduce(&r->path_start, &start, 1, MPI_DOUBLE, MPI_MIN, comm);
    r->path_start = start;
    return failed ? -1 : 0;
}

/* window=None or (start, end) in seconds, start < end (the Python layer
 * checks the arguments and names them in its errors) */
static int parse_window(PyObject *obj, ws_analysis_options *opt)
{
    if (obj == Py_None)
        return 0;
    double start, end;
    if (!PyArg_ParseTuple(obj, "dd", &start, &end))
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
    module_state *st = state_of(module);
    PyObject *window_obj = Py_None;
    static char *kwlist[] = {"trace",     "comm",     "owner",      "delay_model",  "critical_path", "records",
                             "partition", "progress", "keep_share", "wait_records", "window", NULL};
    PyObject *trace_obj, *comm_obj, *owner_obj, *model_obj = Py_None, *partition_obj = Py_None, *callback = Py_None;
    int critical_path = 0, records = 0, keep_share = 0, wait_records = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOO|OppOOppO", kwlist, &trace_obj, &comm_obj, &owner_obj,
                                     &model_obj, &critical_path, &records, &partition_obj, &callback, &keep_share,
                                     &wait_records, &window_obj))
        return NULL;
    ws_trace *t = get_trace(st, trace_obj);
    MPI_Comm comm;
    if (!t || get_comm(st, comm_obj, &comm) != 0)
        return NULL;
    int rank, nprocs;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &nprocs);
    ws_analysis_options opt;
    memset(&opt, 0, sizeof opt);
    if (model_obj != Py_None) {
        const char *s = PyUnicode_AsUTF8(model_obj);
        if (!s)
            return NULL;
        if (strcmp(s, "proportional") == 0)
            opt.delay_model = WS_DELAY_PROPORTIONAL;
        else if (strcmp(s, "wait-first") == 0)
            opt.delay_model = WS_DELAY_WAIT_FIRST;
        else
            return PyErr_Format(PyExc_ValueError, "unknown delay model '%s'", s);
    }
    opt.critical_path = critical_path;
    opt.keep_delay_records = records;
    opt.wait_records = wait_records;
    if (parse_window(window_obj, &opt) != 0)
        return NULL;
    PyArrayObject *owner =
        (PyArrayObject *)PyArray_FROMANY(owner_obj, NPY_UINT32, 1, 1, NPY_ARRAY_CARRAY | NPY_ARRAY_FORCECAST);
    if (!owner)
        return NULL;
    if (PyArray_SIZE(owner) != (npy_intp)t->n_locations) {
        Py_DECREF(owner);
        return PyErr_Format(PyExc_ValueError, "owner needs one process per location");
    }
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
    uint32_t *locs = malloc((t->n_locations ? t->n_locations : 1) * sizeof *locs);
    void *progress_storage = malloc(st->capi->progress_size);
    if (!locs || !progress_storage) {
        free(locs);
        free(progress_storage);
        Py_DECREF(owner);
        Py_XDECREF(partition);
        return PyErr_NoMemory();
    }
    uint32_t n = 0;
    for (uint32_t l = 0; l < t->n_locations; l++)
        if ((int)own[l] == rank)
            locs[n++] = l;
    const ws_progress *progress = st->capi->progress_init(progress_storage, callback);
    ws_error err;
    ws_error_clear(&err);
    ws_transport *tr = NULL;
    ws_result *r = NULL;
    int rc = ws_transport_mpi_new(comm, t, own, &tr, &err);
    if (rc == WS_OK) {
        Py_BEGIN_ALLOW_THREADS
        rc = st->capi->analyze(t, locs, n, tr, &opt, progress, &r, &err);
        if (rc != WS_OK)
            ws_transport_mpi_fail(tr, &err);
        Py_END_ALLOW_THREADS
    }
    if (tr)
        tr->ops->destroy(tr);
    free(locs);
    free(progress_storage);
    Py_DECREF(owner);
    Py_XDECREF(partition);
    if (rc != WS_OK)
        return st->capi->raise_error(&err);
    if (!keep_share) {
        int grc;
        Py_BEGIN_ALLOW_THREADS
        grc = gather_result(st->capi, r, rank, nprocs, comm);
        Py_END_ALLOW_THREADS
        if (grc != 0) {
            st->capi->result_free(r);
            return PyErr_Format(PyExc_RuntimeError, "gathering the results on rank 0 failed");
        }
        if (rank != 0) {
            st->capi->result_free(r);
            Py_RETURN_NONE;
        }
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
    PyArrayObject *owner =
        (PyArrayObject *)PyArray_FROMANY(owner_obj, NPY_UINT32, 1, 1, NPY_ARRAY_CARRAY | NPY_ARRAY_FORCECAST);
    if (!owner)
        return NULL;
    if (PyArray_SIZE(owner) != (npy_intp)t->n_locations) {
        Py_DECREF(owner);
        return PyErr_Format(PyExc_ValueError, "owner needs one process per location");
    }
    const uint32_t *own = PyArray_DATA(owner);
    uint32_t *locs = malloc((t->n_locations ? t->n_locations : 1) * sizeof *locs);
    if (!locs) {
        Py_DECREF(owner);
        return PyErr_NoMemory();
    }
    uint32_t n = 0;
    for (uint32_t l = 0; l < t->n_locations; l++)
        if ((int)own[l] == rank)
            locs[n++] = l;
    ws_error err;
    ws_error_clear(&err);
    ws_transport *tr = NULL;
    PyObject *out = NULL;
    if (ws_transport_mpi_new(comm, t, own, &tr, &err) == WS_OK)
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
     "unify_callpaths(trace, comm): give every process the same call-path tree."},
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
