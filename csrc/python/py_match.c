/* Message matching (common/match.h) for Python: the timeline's messages
 * (waitscope/_messages.py) are matched by the kernel's one matcher. */
#include "py_common.h"

#include "../common/match.h"

typedef struct pairs {
    int64_t *send, *recv;
    size_t n;
} pairs;

static void on_pair(void *context, const ws_match_key *send, const ws_match_key *recv)
{
    pairs *p = context;
    p->send[p->n] = (int64_t)send->order;
    p->recv[p->n++] = (int64_t)recv->order;
}

/* Keys from an (n, 4) uint32 channel array and an (n,) order array. */
static ws_match_key *keys_of(PyObject *channels_obj, PyObject *order_obj, npy_intp *n)
{
    PyArrayObject *ch = (PyArrayObject *)PyArray_FROMANY(channels_obj, NPY_UINT32, 2, 2, NPY_ARRAY_CARRAY);
    PyArrayObject *order = (PyArrayObject *)PyArray_FROMANY(order_obj, NPY_INT64, 1, 1, NPY_ARRAY_CARRAY);
    ws_match_key *keys = NULL;
    if (!ch || !order)
        goto done;
    *n = PyArray_DIM(order, 0);
    if (PyArray_DIM(ch, 1) != 4 || PyArray_DIM(ch, 0) != *n) {
        PyErr_SetString(PyExc_ValueError, "match_messages: channels must be (n, 4) and order (n,)");
        goto done;
    }
    keys = PyMem_Malloc((size_t)(*n ? *n : 1) * sizeof *keys);
    if (!keys) {
        PyErr_NoMemory();
        goto done;
    }
    const uint32_t *c = PyArray_DATA(ch);
    const int64_t *o = PyArray_DATA(order);
    for (npy_intp i = 0; i < *n; i++) {
        if (o[i] < 0) {
            PyMem_Free(keys);
            keys = NULL;
            PyErr_SetString(PyExc_ValueError, "match_messages: order values must be non-negative");
            goto done;
        }
        for (int k = 0; k < 4; k++)
            keys[i].channel[k] = c[4 * i + k];
        keys[i].order = (uint64_t)o[i];
    }
done:
    Py_XDECREF(ch);
    Py_XDECREF(order);
    return keys;
}

static PyObject *py_match_messages(PyObject *module, PyObject *args)
{
    (void)module;
    PyObject *sc, *so, *rc, *ro;
    if (!PyArg_ParseTuple(args, "OOOO", &sc, &so, &rc, &ro))
        return NULL;
    npy_intp ns = 0, nr = 0;
    ws_match_key *sends = keys_of(sc, so, &ns);
    if (!sends)
        return NULL;
    ws_match_key *recvs = keys_of(rc, ro, &nr);
    if (!recvs) {
        PyMem_Free(sends);
        return NULL;
    }
    npy_intp cap = ns < nr ? ns : nr;
    PyObject *send_out = PyArray_SimpleNew(1, &cap, NPY_INT64), *recv_out = PyArray_SimpleNew(1, &cap, NPY_INT64);
    PyObject *result = NULL;
    if (send_out && recv_out) {
        pairs p = {PyArray_DATA((PyArrayObject *)send_out), PyArray_DATA((PyArrayObject *)recv_out), 0};
        ws_match_fifo(sends, (size_t)ns, recvs, (size_t)nr, on_pair, NULL, &p);
        /* the pairs fill a prefix: shrink to it */
        npy_intp n = (npy_intp)p.n;
        PyObject *a = PySequence_GetSlice(send_out, 0, n), *b = PySequence_GetSlice(recv_out, 0, n);
        if (a && b)
            result = PyTuple_Pack(2, a, b);
        Py_XDECREF(a);
        Py_XDECREF(b);
    }
    Py_XDECREF(send_out);
    Py_XDECREF(recv_out);
    PyMem_Free(sends);
    PyMem_Free(recvs);
    return result;
}

static PyMethodDef functions[] = {
    {"match_messages", py_match_messages, METH_VARARGS,
     "match_messages(send_channels, send_order, recv_channels, recv_order) -> (send_order, recv_order): "
     "pairs the n-th send of every channel (rows of 4 uint32) with its n-th receive, in order; "
     "order values identify the records"},
    {NULL, NULL, 0, NULL}};

int ws_py_register_match(PyObject *module)
{
    return PyModule_AddFunctions(module, functions);
}
