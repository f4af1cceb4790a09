/* The allocation-failure switch for the tests, only in the sanitizer build
 * (WS_ALLOC_FAILURES, see csrc/common/alloc.h):
 *   _core._alloc_fail_after(n): n more kernel allocations succeed, later
 *   ones fail (n < 0: none fails);  _core._alloc_count(): allocations so far.
 * Without the macro the module has neither function. */
#include "py_common.h"

#include "../common/alloc.h"

#ifdef WS_ALLOC_FAILURES
static PyObject *py_alloc_fail_after(PyObject *module, PyObject *arg)
{
    (void)module;
    long long n = PyLong_AsLongLong(arg);
    if (n == -1 && PyErr_Occurred())
        return NULL;
    ws_alloc_fail_after(n);
    Py_RETURN_NONE;
}

static PyObject *py_alloc_count(PyObject *module, PyObject *unused)
{
    (void)module;
    (void)unused;
    return PyLong_FromUnsignedLongLong(ws_alloc_count());
}

static PyMethodDef functions[] = {
    {"_alloc_fail_after", py_alloc_fail_after, METH_O, "_alloc_fail_after(n): later kernel allocations fail"},
    {"_alloc_count", py_alloc_count, METH_NOARGS, "_alloc_count() -> kernel allocations so far"},
    {NULL, NULL, 0, NULL}};

int ws_py_register_alloc(PyObject *module)
{
    return PyModule_AddFunctions(module, functions);
}
#else
int ws_py_register_alloc(PyObject *module)
{
    (void)module;
    return 0;
}
#endif
