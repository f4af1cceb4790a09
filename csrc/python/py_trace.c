/* The Trace type of waitscope._core. */
#include "py_common.h"

#include <stdlib.h>

#include "../pmpi/unify.h"

#include <string.h>

static void trace_dealloc(ws_py_trace *self)
{
    ws_trace_free(self->trace);
    self->trace = NULL;
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyTypeObject trace_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "waitscope._core.Trace",
    .tp_basicsize = sizeof(ws_py_trace),
    .tp_dealloc = (destructor)trace_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "An OTF2 trace held in the C core (use waitscope.open).",
};

PyTypeObject *ws_py_trace_type(void)
{
    return &trace_type;
}

PyObject *ws_py_trace_wrap(ws_trace *t)
{
    ws_py_trace *self = PyObject_New(ws_py_trace, &trace_type);
    if (!self) {
        ws_trace_free(t);
        return NULL;
    }
    self->trace = t;
    self->readers = 0;
    self->writer = 0;
    return (PyObject *)self;
}

static PyObject *str_of(const ws_trace *t, uint32_t index)
{
    const char *s = ws_trace_string(t, index);
    return PyUnicode_DecodeUTF8(s, (Py_ssize_t)strlen(s), "replace");
}

/* A new 1-D array of n elements of the given type (owned copy). */
static PyObject *new_array(npy_intp n, int typenum)
{
    return PyArray_ZEROS(1, &n, typenum, 0);
}

#define ARR_DATA(a, T) ((T *)PyArray_DATA((PyArrayObject *)(a)))

static int set_item(PyObject *dict, const char *key, PyObject *value)
{
    if (!value)
        return -1;
    int rc = PyDict_SetItemString(dict, key, value);
    Py_DECREF(value);
    return rc;
}

/* index columns use -1 for "none" */
static int64_t idx(uint32_t v)
{
    return v == WS_NONE32 ? -1 : (int64_t)v;
}

int ws_py_trace_check(ws_py_trace *t, int write, const char *what)
{
    if (t->writer || (write && t->readers)) {
        PyErr_Format(PyExc_RuntimeError,
                     "Trace.%s: another thread is %s this trace; a trace is loaded by one thread at a time and "
                     "not used meanwhile",
                     what, t->writer ? "loading (changing)" : "reading");
        return -1;
    }
    return 0;
}

int ws_py_trace_begin(ws_py_trace *t, int write, const char *what)
{
    if (ws_py_trace_check(t, write, what) != 0)
        return -1;
    if (write)
        t->writer = 1;
    else
        t->readers++;
    return 0;
}

void ws_py_trace_end(ws_py_trace *t, int write)
{
    if (write)
        t->writer = 0;
    else
        t->readers--;
}

static PyObject *py_open(PyObject *module, PyObject *args, PyObject *kwargs)
{
    (void)module;
    static char *kwlist[] = {"path", NULL};
    PyObject *path_obj;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O&", kwlist, PyUnicode_FSConverter, &path_obj))
        return NULL;
    const char *path = PyBytes_AS_STRING(path_obj);
    ws_error err;
    ws_error_clear(&err);
    ws_trace *t = NULL;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = ws_open(path, &t, &err);
    Py_END_ALLOW_THREADS
    Py_DECREF(path_obj);
    if (rc != WS_OK)
        return ws_py_raise(&err);
    return ws_py_trace_wrap(t);
}

static int parse_locations(ws_py_trace *self, PyObject *obj, uint32_t **out, uint32_t *n)
{
    *out = NULL;
    *n = 0;
    if (!obj || obj == Py_None)
        return 0;
    PyArrayObject *a = (PyArrayObject *)PyArray_FROMANY(obj, NPY_INT64, 1, 1, NPY_ARRAY_CARRAY | NPY_ARRAY_FORCECAST);
    if (!a)
        return -1;
    npy_intp count = PyArray_SIZE(a);
    const int64_t *v = PyArray_DATA(a);
    uint32_t *list = PyMem_Malloc((size_t)(count ? count : 1) * sizeof *list);
    if (!list) {
        Py_DECREF(a);
        PyErr_NoMemory();
        return -1;
    }
    for (npy_intp i = 0; i < count; i++) {
        if (v[i] < 0 || v[i] >= (int64_t)self->trace->n_locations) {
            PyErr_Format(PyExc_IndexError, "location index %lld out of range (trace has %u locations)",
                         (long long)v[i], (unsigned)self->trace->n_locations);
            PyMem_Free(list);
            Py_DECREF(a);
            return -1;
        }
        list[i] = (uint32_t)v[i];
    }
    Py_DECREF(a);
    *out = list;
    *n = (uint32_t)count;
    if (count == 0) {
        /* an explicit empty selection loads nothing */
        *n = 0;
    }
    return 1;
}

static PyObject *trace_load(ws_py_trace *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"locations", "progress", "threads", NULL};
    PyObject *locs = Py_None, *callback = Py_None;
    unsigned int threads = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|OOI", kwlist, &locs, &callback, &threads))
        return NULL;
    if (threads == 0) {
        PyErr_SetString(PyExc_ValueError, "threads must be a positive integer");
        return NULL;
    }
    uint32_t *list = NULL, n = 0;
    int explicit_list = parse_locations(self, locs, &list, &n);
    if (explicit_list < 0)
        return NULL;
    if (explicit_list && n == 0) {
        PyMem_Free(list);
        Py_RETURN_NONE;
    }
    ws_py_progress progress;
    ws_py_progress_init(&progress, callback);
    ws_error err;
    ws_error_clear(&err);
    int rc;
    if (ws_py_trace_begin(self, 1, "load") != 0) {
        PyMem_Free(list);
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    rc = ws_load_threads(self->trace, list, n, threads, &progress.progress, &err);
    Py_END_ALLOW_THREADS
    ws_py_trace_end(self, 1);
    PyMem_Free(list);
    if (rc != WS_OK)
        return ws_py_raise(&err);
    Py_RETURN_NONE;
}

static PyObject *trace_write(ws_py_trace *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"path", "progress", "repeat", NULL};
    PyObject *path_obj, *callback = Py_None;
    unsigned int repeat = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O&|OI", kwlist, PyUnicode_FSConverter, &path_obj, &callback,
                                     &repeat))
        return NULL;
    ws_py_progress progress;
    ws_py_progress_init(&progress, callback);
    ws_error err;
    ws_error_clear(&err);
    int rc;
    const char *path = PyBytes_AS_STRING(path_obj);
    if (ws_py_trace_begin(self, 0, "write") != 0) {
        Py_DECREF(path_obj);
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    rc = repeat == 1 ? ws_otf2_write(self->trace, path, &progress.progress, &err)
                     : ws_otf2_write_repeated(self->trace, path, repeat, &progress.progress, &err);
    Py_END_ALLOW_THREADS
    ws_py_trace_end(self, 0);
    Py_DECREF(path_obj);
    if (rc != WS_OK)
        return ws_py_raise(&err);
    Py_RETURN_NONE;
}

static PyObject *strings_list(const ws_trace *t)
{
    PyObject *list = PyList_New(t->n_strings);
    if (!list)
        return NULL;
    for (uint32_t i = 0; i < t->n_strings; i++) {
        PyObject *s = str_of(t, i);
        if (!s) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, i, s);
    }
    return list;
}

static PyObject *regions_dict(const ws_trace *t)
{
    npy_intp n = t->n_regions;
    PyObject *d = PyDict_New();
    PyObject *name = new_array(n, NPY_INT64), *canon = new_array(n, NPY_INT64), *descr = new_array(n, NPY_INT64),
             *role = new_array(n, NPY_UINT8), *paradigm = new_array(n, NPY_UINT8), *flags = new_array(n, NPY_UINT32),
             *file = new_array(n, NPY_INT64), *begin = new_array(n, NPY_UINT32), *end = new_array(n, NPY_UINT32),
             *id = new_array(n, NPY_UINT64);
    if (!d || !name || !canon || !descr || !role || !paradigm || !flags || !file || !begin || !end || !id)
        goto fail;
    for (npy_intp i = 0; i < n; i++) {
        const ws_region *r = &t->regions[i];
        ARR_DATA(name, int64_t)[i] = idx(r->name);
        ARR_DATA(canon, int64_t)[i] = idx(r->canonical_name);
        ARR_DATA(descr, int64_t)[i] = idx(r->description);
        ARR_DATA(role, uint8_t)[i] = r->role;
        ARR_DATA(paradigm, uint8_t)[i] = r->paradigm;
        ARR_DATA(flags, uint32_t)[i] = r->flags;
        ARR_DATA(file, int64_t)[i] = idx(r->source_file);
        ARR_DATA(begin, uint32_t)[i] = r->begin_line;
        ARR_DATA(end, uint32_t)[i] = r->end_line;
        ARR_DATA(id, uint64_t)[i] = r->otf2_id;
    }
    if (set_item(d, "name", name) || set_item(d, "canonical_name", canon) || set_item(d, "description", descr) ||
        set_item(d, "role", role) || set_item(d, "paradigm", paradigm) || set_item(d, "flags", flags) ||
        set_item(d, "source_file", file) || set_item(d, "begin_line", begin) || set_item(d, "end_line", end) ||
        set_item(d, "otf2_id", id)) {
        Py_DECREF(d);
        return NULL;
    }
    return d;
fail:
    Py_XDECREF(d);
    Py_XDECREF(name);
    Py_XDECREF(canon);
    Py_XDECREF(descr);
    Py_XDECREF(role);
    Py_XDECREF(paradigm);
    Py_XDECREF(flags);
    Py_XDECREF(file);
    Py_XDECREF(begin);
    Py_XDECREF(end);
    Py_XDECREF(id);
    return NULL;
}

static PyObject *locations_dict(const ws_trace *t)
{
    npy_intp n = t->n_locations;
    PyObject *d = PyDict_New();
    PyObject *id = new_array(n, NPY_UINT64), *name = new_array(n, NPY_INT64), *type = new_array(n, NPY_UINT8),
             *group = new_array(n, NPY_INT64), *nev = new_array(n, NPY_UINT64), *rank = new_array(n, NPY_INT64),
             *thread = new_array(n, NPY_INT64), *loaded = new_array(n, NPY_BOOL), *stored = new_array(n, NPY_UINT64),
             *mpi_rank = new_array(n, NPY_INT64);
    if (!d || !id || !name || !type || !group || !nev || !rank || !thread || !loaded || !stored || !mpi_rank)
        goto fail;
    for (npy_intp i = 0; i < n; i++) {
        const ws_location *l = &t->locations[i];
        ARR_DATA(id, uint64_t)[i] = l->otf2_id;
        ARR_DATA(name, int64_t)[i] = idx(l->name);
        ARR_DATA(type, uint8_t)[i] = l->type;
        ARR_DATA(group, int64_t)[i] = idx(l->group);
        ARR_DATA(nev, uint64_t)[i] = l->n_events_defined;
        ARR_DATA(rank, int64_t)[i] = idx(l->process);
        ARR_DATA(mpi_rank, int64_t)[i] = idx(l->rank);
        ARR_DATA(thread, int64_t)[i] = idx(l->thread);
        ARR_DATA(loaded, npy_bool)[i] = (npy_bool)(l->loaded != 0);
        ARR_DATA(stored, uint64_t)[i] = l->loaded ? l->events.n : 0;
    }
    if (set_item(d, "otf2_id", id) || set_item(d, "name", name) || set_item(d, "type", type) ||
        set_item(d, "group", group) || set_item(d, "n_records", nev) || set_item(d, "rank", rank) ||
        set_item(d, "thread", thread) || set_item(d, "loaded", loaded) || set_item(d, "n_events", stored) ||
        set_item(d, "mpi_rank", mpi_rank)) {
        Py_DECREF(d);
        return NULL;
    }
    return d;
fail:
    Py_XDECREF(d);
    Py_XDECREF(id);
    Py_XDECREF(name);
    Py_XDECREF(type);
    Py_XDECREF(group);
    Py_XDECREF(nev);
    Py_XDECREF(rank);
    Py_XDECREF(thread);
    Py_XDECREF(loaded);
    Py_XDECREF(stored);
    Py_XDECREF(mpi_rank);
    return NULL;
}

static PyObject *groups_list(const ws_trace *t)
{
    PyObject *list = PyList_New(t->n_groups);
    if (!list)
        return NULL;
    for (uint32_t i = 0; i < t->n_groups; i++) {
        const ws_group *g = &t->groups[i];
        npy_intp n = (npy_intp)g->n_members;
        PyObject *members = new_array(n, NPY_UINT64);
        if (!members) {
            Py_DECREF(list);
            return NULL;
        }
        if (n)
            memcpy(PyArray_DATA((PyArrayObject *)members), g->members, (size_t)n * sizeof *g->members);
        PyObject *item = Py_BuildValue("{s:N,s:i,s:i,s:I,s:N,s:K}", "name", str_of(t, g->name), "type", (int)g->type,
                                       "paradigm", (int)g->paradigm, "flags", (unsigned)g->flags, "members", members,
                                       "otf2_id", (unsigned long long)g->otf2_id);
        if (!item) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, i, item);
    }
    return list;
}

static PyObject *comms_list(const ws_trace *t)
{
    PyObject *list = PyList_New(t->n_comms);
    if (!list)
        return NULL;
    for (uint32_t i = 0; i < t->n_comms; i++) {
        const ws_comm *c = &t->comms[i];
        npy_intp n = c->is_self ? 0 : c->size;
        PyObject *ranks = new_array(n, NPY_INT64);
        if (!ranks) {
            Py_DECREF(list);
            return NULL;
        }
        for (npy_intp r = 0; r < n; r++)
            ARR_DATA(ranks, int64_t)[r] = idx(c->rank_location[r]);
        PyObject *item = Py_BuildValue("{s:N,s:L,s:L,s:I,s:N,s:O,s:K}", "name", str_of(t, c->name), "group",
                                       (long long)idx(c->group), "parent", (long long)idx(c->parent), "size",
                                       (unsigned)c->size, "locations", ranks, "is_self",
                                       c->is_self ? Py_True : Py_False, "otf2_id", (unsigned long long)c->otf2_id);
        if (!item) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, i, item);
    }
    return list;
}

static PyObject *system_tree_list(const ws_trace *t)
{
    PyObject *list = PyList_New(t->n_system_nodes);
    if (!list)
        return NULL;
    for (uint32_t i = 0; i < t->n_system_nodes; i++) {
        const ws_system_node *s = &t->system_nodes[i];
        PyObject *item = Py_BuildValue("{s:N,s:N,s:L}", "name", str_of(t, s->name), "class", str_of(t, s->class_name),
                                       "parent", (long long)idx(s->parent));
        if (!item) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, i, item);
    }
    return list;
}

static PyObject *location_groups_list(const ws_trace *t)
{
    PyObject *list = PyList_New(t->n_location_groups);
    if (!list)
        return NULL;
    for (uint32_t i = 0; i < t->n_location_groups; i++) {
        const ws_location_group *g = &t->location_groups[i];
        PyObject *item = Py_BuildValue("{s:N,s:i,s:L}", "name", str_of(t, g->name), "type", (int)g->type,
                                       "system_node", (long long)idx(g->system_node));
        if (!item) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, i, item);
    }
    return list;
}

static PyObject *topologies_list(const ws_trace *t)
{
    PyObject *list = PyList_New(t->n_cart_topologies);
    if (!list)
        return NULL;
    for (uint32_t i = 0; i < t->n_cart_topologies; i++) {
        const ws_cart_topology *k = &t->cart_topologies[i];
        PyObject *names = PyList_New(k->n_dims);
        npy_intp nd = k->n_dims;
        PyObject *sizes = new_array(nd, NPY_INT64), *periodic = new_array(nd, NPY_BOOL);
        npy_intp shape[2] = {k->n_ranks, k->n_dims};
        PyObject *coords = PyArray_ZEROS(2, shape, NPY_INT64, 0);
        if (!names || !sizes || !periodic || !coords) {
            Py_XDECREF(names);
            Py_XDECREF(sizes);
            Py_XDECREF(periodic);
            Py_XDECREF(coords);
            Py_DECREF(list);
            return NULL;
        }
        for (uint32_t d = 0; d < k->n_dims; d++) {
            const ws_cart_dim *dim = &t->cart_dims[k->dims[d]];
            PyList_SET_ITEM(names, d, str_of(t, dim->name));
            ARR_DATA(sizes, int64_t)[d] = dim->size;
            ARR_DATA(periodic, npy_bool)[d] = (npy_bool)(dim->periodic != 0);
        }
        for (size_t j = 0; j < (size_t)k->n_ranks * k->n_dims; j++)
            ARR_DATA(coords, int64_t)[j] = idx(k->coords[j]);
        PyObject *item = Py_BuildValue("{s:N,s:I,s:N,s:N,s:N,s:N}", "name", str_of(t, k->name), "comm",
                                       (unsigned)k->comm, "dim_names", names, "dims", sizes, "periodic", periodic,
                                       "coords", coords);
        if (!item) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, i, item);
    }
    return list;
}

/* ranks named by the WAITSCOPE::CUT_SHORT_RANKS property ("1,3") */
static PyObject *cut_short_list(const ws_trace *t)
{
    PyObject *list = PyList_New(0);
    const char *s = t->cut_short_ranks;
    while (list && s && *s) {
        char *end;
        unsigned long r = strtoul(s, &end, 10);
        if (end == s)
            break;
        PyObject *v = PyLong_FromUnsignedLong(r);
        if (!v || PyList_Append(list, v) != 0) {
            Py_XDECREF(v);
            Py_DECREF(list);
            return NULL;
        }
        Py_DECREF(v);
        s = *end == ',' ? end + 1 : end;
    }
    return list;
}

static PyObject *trace_definitions(ws_py_trace *self, PyObject *unused)
{
    if (ws_py_trace_check(self, 0, "definitions") != 0)
        return NULL;
    (void)unused;
    const ws_trace *t = self->trace;
    PyObject *d = PyDict_New();
    if (!d)
        return NULL;
    PyObject *clock = Py_BuildValue("{s:K,s:K,s:K,s:K}", "resolution", (unsigned long long)t->clock.resolution,
                                    "offset", (unsigned long long)t->clock.offset, "length",
                                    (unsigned long long)t->clock.length, "realtime",
                                    (unsigned long long)t->clock.realtime);
    if (set_item(d, "path", PyUnicode_DecodeFSDefault(t->path ? t->path : "")) ||
        set_item(d, "clock", clock) || set_item(d, "strings", strings_list(t)) ||
        set_item(d, "regions", regions_dict(t)) || set_item(d, "locations", locations_dict(t)) ||
        set_item(d, "groups", groups_list(t)) || set_item(d, "comms", comms_list(t)) ||
        set_item(d, "system_tree", system_tree_list(t)) ||
        set_item(d, "location_groups", location_groups_list(t)) ||
        set_item(d, "cart_topologies", topologies_list(t)) ||
        set_item(d, "world_comm", PyLong_FromLongLong(idx(t->world_comm))) ||
        set_item(d, "world_size", PyLong_FromUnsignedLong(t->world_size)) ||
        set_item(d, "cut_short_ranks", cut_short_list(t)) ||
        set_item(d, "openmp_recording", t->openmp_recording ? PyUnicode_FromString(t->openmp_recording)
                                                            : (Py_INCREF(Py_None), Py_None))) {
        Py_DECREF(d);
        return NULL;
    }
    return d;
}

static PyObject *trace_callpaths(ws_py_trace *self, PyObject *unused)
{
    if (ws_py_trace_check(self, 0, "callpaths") != 0)
        return NULL;
    (void)unused;
    const ws_callpaths *cp = &self->trace->callpaths;
    npy_intp n = cp->n;
    PyObject *parent = new_array(n, NPY_INT64), *region = new_array(n, NPY_INT64);
    if (!parent || !region) {
        Py_XDECREF(parent);
        Py_XDECREF(region);
        return NULL;
    }
    for (npy_intp i = 0; i < n; i++) {
        ARR_DATA(parent, int64_t)[i] = idx(cp->parent[i]);
        ARR_DATA(region, int64_t)[i] = cp->region[i];
    }
    return Py_BuildValue("(NN)", parent, region);
}

/* The location given as the only argument, if its events are loaded;
 * NULL with a Python error otherwise. */
static ws_location *loaded_location(ws_py_trace *self, PyObject *args)
{
    long long loc;
    if (!PyArg_ParseTuple(args, "L", &loc))
        return NULL;
    ws_trace *t = self->trace;
    if (loc < 0 || loc >= (long long)t->n_locations) {
        PyErr_Format(PyExc_IndexError, "location index %lld out of range (trace has %u locations)", loc,
                     (unsigned)t->n_locations);
        return NULL;
    }
    if (!t->locations[loc].loaded) {
        PyErr_Format(PyExc_ValueError, "the events of location %lld are not loaded", loc);
        return NULL;
    }
    return &t->locations[loc];
}

/* A computed column, read-only as the views are. */
static PyObject *new_column(npy_intp n, int typenum)
{
    PyObject *a = PyArray_SimpleNew(1, &n, typenum);
    if (a)
        PyArray_CLEARFLAGS((PyArrayObject *)a, NPY_ARRAY_WRITEABLE);
    return a;
}

/* name(owner, wide, narrow, n): a column of dtype typenum: a view of
 * `wide`, or when the store holds it narrower (`narrow`, trace.h) an
 * owned copy widened. */
#define DEFINE_WIDE_COLUMN(name, wide_t, narrow_t, typenum)                                 \
    static PyObject *name(PyObject *owner, wide_t *wide, const narrow_t *narrow, npy_intp n) \
    {                                                                                       \
        if (wide || !narrow)                                                                \
            return ws_py_view(owner, wide, n, typenum);                                     \
        PyObject *a = new_column(n, typenum);                                               \
        if (a) {                                                                            \
            wide_t *out = PyArray_DATA((PyArrayObject *)a);                                 \
            for (npy_intp i = 0; i < n; i++)                                                \
                out[i] = narrow[i];                                                         \
        }                                                                                   \
        return a;                                                                           \
    }
DEFINE_WIDE_COLUMN(wide_column, uint64_t, uint32_t, NPY_UINT64)
DEFINE_WIDE_COLUMN(wide_column32, uint32_t, uint16_t, NPY_UINT32)
#undef DEFINE_WIDE_COLUMN

static PyObject *trace_events(ws_py_trace *self, PyObject *args)
{
    if (ws_py_trace_check(self, 0, "events") != 0)
        return NULL;
    ws_location *l = loaded_location(self, args);
    if (!l)
        return NULL;
    ws_events *e = &l->events;
    PyObject *o = (PyObject *)self;
    PyObject *d = PyDict_New();
    if (!d)
        return NULL;
    npy_intp n = (npy_intp)e->n, m = (npy_intp)e->n_messages, r = (npy_intp)e->n_requests,
             c = (npy_intp)e->n_collectives, h = (npy_intp)e->n_threads;
    /* compact times (trace.h) are converted: an owned array */
    PyObject *time = e->time ? ws_py_view(o, e->time, n, NPY_FLOAT64) : new_column(n, NPY_FLOAT64);
    if (time && !e->time)
        ws_events_times(e, PyArray_DATA((PyArrayObject *)time));
    if (set_item(d, "time", time) ||
        set_item(d, "kind", ws_py_view(o, e->kind, n, NPY_UINT8)) ||
        set_item(d, "ref", ws_py_view(o, e->ref, n, NPY_UINT32)) ||
        set_item(d, "msg_event", ws_py_view(o, e->msg_event, m, NPY_UINT32)) ||
        set_item(d, "msg_peer", wide_column32(o, e->msg_peer, e->msg_peer16, m)) ||
        set_item(d, "msg_comm", wide_column32(o, e->msg_comm, e->msg_comm16, m)) ||
        set_item(d, "msg_tag", wide_column32(o, e->msg_tag, e->msg_tag16, m)) ||
        set_item(d, "msg_bytes", wide_column(o, e->msg_bytes, e->msg_bytes32, m)) ||
        set_item(d, "req_event", ws_py_view(o, e->req_event, r, NPY_UINT32)) ||
        set_item(d, "req_id", wide_column(o, e->req_id, e->req_id32, r)) ||
        set_item(d, "coll_event", ws_py_view(o, e->coll_event, c, NPY_UINT32)) ||
        set_item(d, "coll_comm", ws_py_view(o, e->coll_comm, c, NPY_UINT32)) ||
        set_item(d, "coll_root", ws_py_view(o, e->coll_root, c, NPY_UINT32)) ||
        set_item(d, "coll_op", ws_py_view(o, e->coll_op, c, NPY_UINT8)) ||
        set_item(d, "coll_sent", ws_py_view(o, e->coll_sent, c, NPY_UINT64)) ||
        set_item(d, "coll_received", ws_py_view(o, e->coll_received, c, NPY_UINT64)) ||
        set_item(d, "thr_event", ws_py_view(o, e->thr_event, h, NPY_UINT32)) ||
        set_item(d, "thr_comm", ws_py_view(o, e->thr_comm, h, NPY_UINT32)) ||
        set_item(d, "thr_model", ws_py_view(o, e->thr_model, h, NPY_UINT8)) ||
        set_item(d, "thr_a", ws_py_view(o, e->thr_a, h, NPY_UINT64)) ||
        set_item(d, "thr_b", ws_py_view(o, e->thr_b, h, NPY_UINT64)) ||
        set_item(d, "n_skipped", PyLong_FromUnsignedLongLong(e->n_skipped))) {
        Py_DECREF(d);
        return NULL;
    }
    return d;
}

static PyObject *trace_event_callpaths(ws_py_trace *self, PyObject *args)
{
    if (ws_py_trace_check(self, 0, "event_callpaths") != 0)
        return NULL;
    const ws_location *l = loaded_location(self, args);
    if (!l)
        return NULL;
    const ws_trace *t = self->trace;
    const ws_events *e = &l->events;
    PyObject *out = new_array((npy_intp)e->n, NPY_INT64);
    if (!out)
        return NULL;
    int64_t *cp = ARR_DATA(out, int64_t);
    /* the innermost open region's call path; enter/leave carry their own */
    int64_t current = -1;
    for (uint64_t i = 0; i < e->n; i++) {
        if (e->kind[i] == WS_EV_ENTER) {
            current = e->ref[i];
            cp[i] = current;
        } else if (e->kind[i] == WS_EV_LEAVE) {
            cp[i] = e->ref[i];
            uint32_t parent = t->callpaths.parent[e->ref[i]];
            current = parent == WS_NONE32 ? -1 : (int64_t)parent;
        } else {
            cp[i] = current;
        }
    }
    return out;
}

static PyObject *trace_n_events(ws_py_trace *self, void *closure)
{
    if (ws_py_trace_check(self, 0, "n_events") != 0)
        return NULL;
    (void)closure;
    return PyLong_FromUnsignedLongLong(self->trace->n_events);
}

static PyObject *trace_n_locations(ws_py_trace *self, void *closure)
{
    (void)closure;
    return PyLong_FromUnsignedLong(self->trace->n_locations);
}

static PyObject *trace_memory(ws_py_trace *self, PyObject *unused)
{
    if (ws_py_trace_check(self, 0, "memory") != 0)
        return NULL;
    (void)unused;
    /* bytes held by the event columns of loaded locations */
    unsigned long long bytes = 0;
    const ws_trace *t = self->trace;
    for (uint32_t i = 0; i < t->n_locations; i++) {
        const ws_events *e = &t->locations[i].events;
        bytes += ws_events_bytes(e);
    }
    return PyLong_FromUnsignedLongLong(bytes);
}

static PyMethodDef trace_methods[] = {
    {"load", (PyCFunction)(void (*)(void))trace_load, METH_VARARGS | METH_KEYWORDS,
     "load(locations=None, progress=None, threads=1): read the events of the given locations (all by default) "
     "on up to `threads` threads."},
    {"write", (PyCFunction)(void (*)(void))trace_write, METH_VARARGS | METH_KEYWORDS,
     "write(path, progress=None, repeat=1): write the loaded trace as an OTF2 archive; with repeat=K the events "
     "between MPI_Init and MPI_Finalize K times one after the other (benchmarks of large traces)."},
    {"definitions", (PyCFunction)trace_definitions, METH_NOARGS, "The global definitions as a dict."},
    {"callpaths", (PyCFunction)trace_callpaths, METH_NOARGS, "(parent, region) arrays of the call-path tree."},
    {"events", (PyCFunction)trace_events, METH_VARARGS, "events(location): the columns of one location (zero-copy views, or read-only copies of compact "
     "columns)."},
    {"event_memory", (PyCFunction)trace_memory, METH_NOARGS, "Bytes held by the event columns."},
    {"event_callpaths", (PyCFunction)trace_event_callpaths, METH_VARARGS,
     "event_callpaths(location): call path of every event (owned array)."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef trace_getset[] = {
    {"n_events", (getter)trace_n_events, NULL, "Events stored over all loaded locations.", NULL},
    {"n_locations", (getter)trace_n_locations, NULL, "Number of locations defined.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyObject *py_bare_read(PyObject *module, PyObject *args)
{
    (void)module;
    PyObject *path_obj;
    int global = 0;
    if (!PyArg_ParseTuple(args, "O&|p", PyUnicode_FSConverter, &path_obj, &global))
        return NULL;
    ws_error err;
    ws_error_clear(&err);
    uint64_t n = 0;
    int rc;
    const char *path = PyBytes_AS_STRING(path_obj);
    Py_BEGIN_ALLOW_THREADS
    rc = ws_otf2_bare_read(path, global, &n, &err);
    Py_END_ALLOW_THREADS
    Py_DECREF(path_obj);
    if (rc != WS_OK)
        return ws_py_raise(&err);
    return PyLong_FromUnsignedLongLong(n);
}

static PyObject *py_pmpi_unify(PyObject *module, PyObject *args)
{
    (void)module;
    PyObject *path_obj;
    if (!PyArg_ParseTuple(args, "O&", PyUnicode_FSConverter, &path_obj))
        return NULL;
    ws_error err;
    ws_error_clear(&err);
    uint32_t n_cut = 0;
    int rc;
    const char *path = PyBytes_AS_STRING(path_obj);
    Py_BEGIN_ALLOW_THREADS
    rc = ws_pmpi_unify(path, &n_cut, &err);
    Py_END_ALLOW_THREADS
    Py_DECREF(path_obj);
    if (rc != WS_OK)
        return ws_py_raise(&err);
    return PyLong_FromUnsignedLong(n_cut);
}

static PyMethodDef module_functions[] = {
    {"pmpi_unify", (PyCFunction)py_pmpi_unify, METH_VARARGS,
     "pmpi_unify(dir): build DIR/traces.otf2 from the per-rank files the interposition library left in "
     "DIR/.waitscope; returns the number of ranks that were cut short."},
    {"bare_read", (PyCFunction)py_bare_read, METH_VARARGS,
     "bare_read(path, global=False): decode every event record with callbacks that do nothing (location by "
     "location, or with global through OTF2's global event reader); returns the record count."},
    {"open", (PyCFunction)(void (*)(void))py_open, METH_VARARGS | METH_KEYWORDS,
     "open(path): read the anchor and global definitions of an OTF2 archive."},
    {NULL, NULL, 0, NULL},
};

int ws_py_register_trace(PyObject *module)
{
    trace_type.tp_methods = trace_methods;
    trace_type.tp_getset = trace_getset;
    if (PyType_Ready(&trace_type) < 0)
        return -1;
    Py_INCREF(&trace_type);
    if (PyModule_AddObject(module, "Trace", (PyObject *)&trace_type) < 0) {
        Py_DECREF(&trace_type);
        return -1;
    }
    return PyModule_AddFunctions(module, module_functions);
}
