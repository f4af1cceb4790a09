/* Synthetic trace generation (waitscope.synth) — binding.
 *
 * _core.synth_run(...) takes a program packed by waitscope.synth into
 * NumPy arrays, runs the C executor without the GIL and returns a Trace.
 * _core.synth_ops maps operation names to the codes of the packed rows.
 */
#include "py_common.h"

#include <string.h>

#include "../trace/synth.h"

/* Holds the converted inputs; everything is released by release(). */
typedef struct inputs {
    PyArrayObject *rank_ptr, *ops, *dur_ptr, *durations, *req_ptr, *requests, *comm_ptr, *comm_members;
    PyArrayObject *teams, *thread_ptr, *thread_ops; /* OpenMP */
    PyObject *regions, *comm_names, *carts, *parallel_names; /* tuples */
    const char **region_names, **comm_name_ptrs, **parallel_name_ptrs;
    ws_synth_cart *cart_list;
    PyArrayObject **cart_arrays; /* 2 per topology */
    Py_ssize_t n_carts;
} inputs;

static void release(inputs *in)
{
    Py_XDECREF(in->rank_ptr);
    Py_XDECREF(in->ops);
    Py_XDECREF(in->dur_ptr);
    Py_XDECREF(in->durations);
    Py_XDECREF(in->req_ptr);
    Py_XDECREF(in->requests);
    Py_XDECREF(in->comm_ptr);
    Py_XDECREF(in->comm_members);
    Py_XDECREF(in->teams);
    Py_XDECREF(in->thread_ptr);
    Py_XDECREF(in->thread_ops);
    if (in->cart_arrays)
        for (Py_ssize_t i = 0; i < 2 * in->n_carts; i++)
            Py_XDECREF(in->cart_arrays[i]);
    PyMem_Free(in->cart_arrays);
    PyMem_Free(in->cart_list);
    PyMem_Free(in->region_names);
    PyMem_Free(in->comm_name_ptrs);
    PyMem_Free(in->parallel_name_ptrs);
    Py_XDECREF(in->regions);
    Py_XDECREF(in->comm_names);
    Py_XDECREF(in->parallel_names);
    Py_XDECREF(in->carts);
}

static PyArrayObject *as_array(PyObject *obj, int typenum, const char *what)
{
    PyArrayObject *a = (PyArrayObject *)PyArray_FROMANY(obj, typenum, 0, 2, NPY_ARRAY_IN_ARRAY | NPY_ARRAY_FORCECAST);
    if (!a && PyErr_ExceptionMatches(PyExc_TypeError)) {
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError, "synth_run: %s must be an array of numbers", what);
    }
    return a;
}

/* A tuple of str and a parallel array of UTF-8 pointers into it. */
static int string_list(PyObject *seq, PyObject **tuple, const char ***out, const char *what)
{
    *tuple = PySequence_Tuple(seq);
    if (!*tuple)
        return -1;
    Py_ssize_t n = PyTuple_GET_SIZE(*tuple);
    *out = PyMem_Calloc((size_t)(n ? n : 1), sizeof **out);
    if (!*out) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PyTuple_GET_ITEM(*tuple, i);
        if (!PyUnicode_Check(item)) {
            PyErr_Format(PyExc_TypeError, "synth_run: %s must be strings", what);
            return -1;
        }
        (*out)[i] = PyUnicode_AsUTF8(item);
        if (!(*out)[i])
            return -1;
    }
    return 0;
}

static int parse_carts(inputs *in, PyObject *carts)
{
    in->carts = PySequence_Tuple(carts);
    if (!in->carts)
        return -1;
    Py_ssize_t n = PyTuple_GET_SIZE(in->carts);
    in->n_carts = n;
    in->cart_list = PyMem_Calloc((size_t)(n ? n : 1), sizeof *in->cart_list);
    in->cart_arrays = PyMem_Calloc((size_t)(2 * n + 1), sizeof *in->cart_arrays);
    if (!in->cart_list || !in->cart_arrays) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *comm, *dims, *periods, *name;
        if (!PyArg_ParseTuple(PyTuple_GET_ITEM(in->carts, i), "OOOU", &comm, &dims, &periods, &name)) {
            PyErr_SetString(PyExc_TypeError, "synth_run: a topology is (comm, dims, periods, name)");
            return -1;
        }
        long c = PyLong_AsLong(comm);
        if (c == -1 && PyErr_Occurred())
            return -1;
        PyArrayObject *d = in->cart_arrays[2 * i] = as_array(dims, NPY_INT64, "topology dimensions");
        if (!d)
            return -1;
        PyArrayObject *p = in->cart_arrays[2 * i + 1] = as_array(periods, NPY_INT64, "topology periods");
        if (!p)
            return -1;
        if (PyArray_NDIM(d) != 1 || PyArray_SIZE(d) != PyArray_SIZE(p) || PyArray_SIZE(d) > 255 || c < 0 ||
            c > (long)UINT32_MAX) {
            PyErr_SetString(PyExc_ValueError, "synth_run: invalid Cartesian topology");
            return -1;
        }
        ws_synth_cart *k = &in->cart_list[i];
        k->comm = (uint32_t)c;
        k->n_dims = (uint32_t)PyArray_SIZE(d);
        k->dims = PyArray_DATA(d);
        k->periodic = PyArray_DATA(p);
        k->name = PyUnicode_AsUTF8(name);
        if (!k->name)
            return -1;
    }
    return 0;
}

static int check_offsets(PyArrayObject *ptr, npy_intp entries, npy_intp target, const char *what)
{
    if (PyArray_NDIM(ptr) != 1 || PyArray_SIZE(ptr) != entries) {
        PyErr_Format(PyExc_ValueError, "synth_run: %s offsets need %zd entries", what, (Py_ssize_t)entries);
        return -1;
    }
    const int64_t *v = PyArray_DATA(ptr);
    if (v[entries - 1] < 0 || v[entries - 1] > (int64_t)target) {
        PyErr_Format(PyExc_ValueError, "synth_run: %s offsets point past the data", what);
        return -1;
    }
    return 0;
}

static PyObject *py_synth_run(PyObject *module, PyObject *args, PyObject *kwargs)
{
    (void)module;
    static char *kwlist[] = {"nranks",   "rank_ptr", "ops",          "dur_ptr",    "durations",  "req_ptr",
                             "requests", "regions",  "comm_ptr",     "comm_members", "comm_names", "carts",
                             "latency",  "bandwidth", "eager_limit", "overhead",   "resolution", "progress",
                             "name",     "threads",  "teams",        "thread_ptr", "thread_ops", "parallel_names",
                             NULL};
    unsigned long long nranks_arg, eager_limit, resolution, threads = 1;
    PyObject *o_rank_ptr, *o_ops, *o_dur_ptr, *o_durations, *o_req_ptr, *o_requests, *o_regions, *o_comm_ptr,
        *o_comm_members, *o_comm_names, *o_carts, *callback = Py_None;
    PyObject *o_teams = NULL, *o_thread_ptr = NULL, *o_thread_ops = NULL, *o_parallel_names = NULL;
    const char *name = NULL;
    double latency, bandwidth, overhead;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "KOOOOOOOOOOOddKdK|OzKOOOO", kwlist, &nranks_arg, &o_rank_ptr,
                                     &o_ops, &o_dur_ptr, &o_durations, &o_req_ptr, &o_requests, &o_regions,
                                     &o_comm_ptr, &o_comm_members, &o_comm_names, &o_carts, &latency, &bandwidth,
                                     &eager_limit, &overhead, &resolution, &callback, &name, &threads, &o_teams,
                                     &o_thread_ptr, &o_thread_ops, &o_parallel_names))
        return NULL;
    if (threads == 0 || threads > UINT32_MAX / 2) {
        PyErr_SetString(PyExc_ValueError, "synth_run: threads out of range");
        return NULL;
    }
    if ((o_teams || o_thread_ptr || o_thread_ops || o_parallel_names) &&
        !(o_teams && o_thread_ptr && o_thread_ops && o_parallel_names)) {
        PyErr_SetString(PyExc_TypeError, "synth_run: teams, thread_ptr, thread_ops and parallel_names go together");
        return NULL;
    }
    if (nranks_arg == 0 || nranks_arg >= UINT32_MAX - 1) {
        PyErr_SetString(PyExc_ValueError, "synth_run: nranks out of range");
        return NULL;
    }
    npy_intp nranks = (npy_intp)nranks_arg;

    inputs in;
    memset(&in, 0, sizeof in);
    PyObject *result = NULL;
    if (!(in.rank_ptr = as_array(o_rank_ptr, NPY_INT64, "rank_ptr")) ||
        !(in.ops = as_array(o_ops, NPY_INT64, "ops")) || !(in.dur_ptr = as_array(o_dur_ptr, NPY_INT64, "dur_ptr")) ||
        !(in.durations = as_array(o_durations, NPY_FLOAT64, "durations")) ||
        !(in.req_ptr = as_array(o_req_ptr, NPY_INT64, "req_ptr")) ||
        !(in.requests = as_array(o_requests, NPY_INT64, "requests")) ||
        !(in.comm_ptr = as_array(o_comm_ptr, NPY_INT64, "comm_ptr")) ||
        !(in.comm_members = as_array(o_comm_members, NPY_INT64, "comm_members")))
        goto done;
    if (string_list(o_regions, &in.regions, &in.region_names, "region names") != 0 ||
        string_list(o_comm_names, &in.comm_names, &in.comm_name_ptrs, "communicator names") != 0 ||
        parse_carts(&in, o_carts) != 0)
        goto done;
    Py_ssize_t n_comms = PyTuple_GET_SIZE(in.comm_names);
    if (PyArray_SIZE(in.ops) % WS_SYNTH_FIELDS != 0) {
        PyErr_Format(PyExc_ValueError, "synth_run: ops must have rows of %d values", WS_SYNTH_FIELDS);
        goto done;
    }
    npy_intp n_teams = 0;
    if (o_teams) {
        if (!(in.teams = as_array(o_teams, NPY_INT64, "teams")) ||
            !(in.thread_ptr = as_array(o_thread_ptr, NPY_INT64, "thread_ptr")) ||
            !(in.thread_ops = as_array(o_thread_ops, NPY_INT64, "thread_ops")) ||
            string_list(o_parallel_names, &in.parallel_names, &in.parallel_name_ptrs, "parallel region names") != 0)
            goto done;
        if (PyArray_SIZE(in.teams) % WS_SYNTH_FIELDS != 0 || PyArray_SIZE(in.thread_ops) % WS_SYNTH_FIELDS != 0) {
            PyErr_Format(PyExc_ValueError, "synth_run: teams and thread_ops must have rows of %d values",
                         WS_SYNTH_FIELDS);
            goto done;
        }
        n_teams = PyArray_SIZE(in.teams) / WS_SYNTH_FIELDS;
        /* thread_ptr: one entry per team thread, plus one */
        npy_intp n_team_threads = 0;
        const int64_t *rows = PyArray_DATA(in.teams);
        for (npy_intp j = 0; j < n_teams; j++) {
            int64_t size = rows[j * WS_SYNTH_FIELDS];
            if (size < 1 || (uint64_t)size > threads) {
                PyErr_Format(PyExc_ValueError, "synth_run: parallel region %zd has a team of %lld threads (1 to %llu)",
                             (Py_ssize_t)j, (long long)size, threads);
                goto done;
            }
            n_team_threads += (npy_intp)size;
        }
        if (check_offsets(in.thread_ptr, n_team_threads + 1, PyArray_SIZE(in.thread_ops) / WS_SYNTH_FIELDS,
                          "thread operation"))
            goto done;
        if (n_teams > (npy_intp)UINT32_MAX / 2 || PyTuple_GET_SIZE(in.parallel_names) > (Py_ssize_t)UINT32_MAX / 2) {
            PyErr_SetString(PyExc_ValueError, "synth_run: too many parallel regions");
            goto done;
        }
    }
    if (check_offsets(in.rank_ptr, nranks + 1, PyArray_SIZE(in.ops) / WS_SYNTH_FIELDS, "operation") ||
        check_offsets(in.dur_ptr, nranks + 1, PyArray_SIZE(in.durations), "duration") ||
        check_offsets(in.req_ptr, nranks + 1, PyArray_SIZE(in.requests), "request") ||
        check_offsets(in.comm_ptr, n_comms + 1, PyArray_SIZE(in.comm_members), "communicator"))
        goto done;
    if (PyTuple_GET_SIZE(in.regions) > (Py_ssize_t)UINT32_MAX / 2 || n_comms > (Py_ssize_t)UINT32_MAX / 2) {
        PyErr_SetString(PyExc_ValueError, "synth_run: too many regions or communicators");
        goto done;
    }

    ws_synth_program program = {
        .n_ranks = (uint32_t)nranks,
        .rank_ptr = PyArray_DATA(in.rank_ptr),
        .ops = PyArray_DATA(in.ops),
        .dur_ptr = PyArray_DATA(in.dur_ptr),
        .durations = PyArray_DATA(in.durations),
        .req_ptr = PyArray_DATA(in.req_ptr),
        .requests = PyArray_DATA(in.requests),
        .n_regions = (uint32_t)PyTuple_GET_SIZE(in.regions),
        .region_names = in.region_names,
        .n_comms = (uint32_t)n_comms,
        .comm_ptr = PyArray_DATA(in.comm_ptr),
        .comm_members = PyArray_DATA(in.comm_members),
        .comm_names = in.comm_name_ptrs,
        .n_carts = (uint32_t)in.n_carts,
        .carts = in.cart_list,
        .name = name,
        .n_threads = (uint32_t)threads,
        .n_teams = (uint32_t)n_teams,
        .teams = in.teams ? PyArray_DATA(in.teams) : NULL,
        .thread_ptr = in.thread_ptr ? PyArray_DATA(in.thread_ptr) : NULL,
        .thread_ops = in.thread_ops ? PyArray_DATA(in.thread_ops) : NULL,
        .n_parallel_names = in.parallel_names ? (uint32_t)PyTuple_GET_SIZE(in.parallel_names) : 0,
        .parallel_names = in.parallel_name_ptrs,
    };
    ws_synth_params params = {
        .latency = latency,
        .bandwidth = bandwidth,
        .eager_limit = eager_limit,
        .overhead = overhead,
        .resolution = resolution,
    };
    ws_py_progress progress;
    ws_py_progress_init(&progress, callback);
    ws_error err;
    ws_error_clear(&err);
    ws_trace *t = NULL;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = ws_synthesize(&program, &params, &progress.progress, &t, &err);
    Py_END_ALLOW_THREADS
    if (rc != WS_OK)
        ws_py_raise(&err);
    else
        result = ws_py_trace_wrap(t);
done:
    release(&in);
    return result;
}

static PyMethodDef synth_functions[] = {
    {"synth_run", (PyCFunction)(void (*)(void))py_synth_run, METH_VARARGS | METH_KEYWORDS,
     "synth_run(nranks, rank_ptr, ops, dur_ptr, durations, req_ptr, requests, regions, comm_ptr, comm_members,\n"
     "          comm_names, carts, latency, bandwidth, eager_limit, overhead, resolution, progress=None,\n"
     "          name=None, threads=1, teams=None, thread_ptr=None, thread_ops=None, parallel_names=None)\n"
     "Executes a packed synthetic MPI(+OpenMP) program (see waitscope.synth) and returns a Trace."},
    {NULL, NULL, 0, NULL},
};

int ws_py_register_synth(PyObject *module)
{
    static const struct {
        const char *name;
        int code;
    } ops[] = {
        {"compute", WS_SYNTH_COMPUTE},     {"enter", WS_SYNTH_ENTER},         {"leave", WS_SYNTH_LEAVE},
        {"send", WS_SYNTH_SEND},           {"ssend", WS_SYNTH_SSEND},         {"recv", WS_SYNTH_RECV},
        {"isend", WS_SYNTH_ISEND},         {"irecv", WS_SYNTH_IRECV},         {"wait", WS_SYNTH_WAIT},
        {"waitall", WS_SYNTH_WAITALL},     {"barrier", WS_SYNTH_BARRIER},     {"bcast", WS_SYNTH_BCAST},
        {"scatter", WS_SYNTH_SCATTER},     {"reduce", WS_SYNTH_REDUCE},       {"gather", WS_SYNTH_GATHER},
        {"allreduce", WS_SYNTH_ALLREDUCE}, {"alltoall", WS_SYNTH_ALLTOALL},   {"allgather", WS_SYNTH_ALLGATHER},
        {"scan", WS_SYNTH_SCAN},           {"parallel", WS_SYNTH_PARALLEL},   {"omp_barrier", WS_SYNTH_OMP_BARRIER},
        {"omp_critical", WS_SYNTH_OMP_CRITICAL}, {"omp_lock", WS_SYNTH_OMP_LOCK},
    };
    PyObject *d = PyDict_New();
    if (!d)
        return -1;
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        PyObject *v = PyLong_FromLong(ops[i].code);
        if (!v || PyDict_SetItemString(d, ops[i].name, v) != 0) {
            Py_XDECREF(v);
            Py_DECREF(d);
            return -1;
        }
        Py_DECREF(v);
    }
    if (PyModule_AddObject(module, "synth_ops", d) != 0) {
        Py_DECREF(d);
        return -1;
    }
    if (PyModule_AddIntConstant(module, "SYNTH_FIELDS", WS_SYNTH_FIELDS) != 0)
        return -1;
    return PyModule_AddFunctions(module, synth_functions);
}
