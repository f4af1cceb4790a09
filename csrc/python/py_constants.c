/* The kernel's numbers and their names for Python, so that they are
 * declared once (in C: trace.h, OTF2's headers, analysis/names.c):
 *   _core.names: {table: tuple of names indexed by value (None: unused)}
 *   _core.MESSAGE_KINDS: the event kinds that carry a message record
 *   _core.EV_<KIND>: each event kind's number. */
#include "py_common.h"

#include <ctype.h>
#include <stdio.h>

#include "../analysis/names.h"
#include "../replay/sync.h"

static PyObject *names_dict(void)
{
    PyObject *d = PyDict_New();
    for (int k = 0; d && k < WS_NAMES_COUNT; k++) {
        const ws_name_table *t = &ws_name_tables[k];
        PyObject *tuple = PyTuple_New((Py_ssize_t)t->count);
        if (!tuple) {
            Py_CLEAR(d);
            break;
        }
        for (size_t i = 0; i < t->count; i++) {
            PyObject *name = t->names[i] ? PyUnicode_FromString(t->names[i]) : Py_NewRef(Py_None);
            if (!name) {
                Py_DECREF(tuple);
                Py_CLEAR(d);
                return NULL;
            }
            PyTuple_SET_ITEM(tuple, (Py_ssize_t)i, name);
        }
        int rc = PyDict_SetItemString(d, t->name, tuple);
        Py_DECREF(tuple);
        if (rc != 0)
            Py_CLEAR(d);
    }
    return d;
}

int ws_py_register_constants(PyObject *module)
{
    PyObject *names = names_dict();
    if (!names || PyModule_AddObject(module, "names", names) != 0) {
        Py_XDECREF(names);
        return -1;
    }
    PyObject *kinds = PyList_New(0);
    if (!kinds)
        return -1;
    const ws_name_table *ev = &ws_name_tables[WS_NAMES_EVENT_KINDS];
    for (size_t kind = 0; kind < ev->count; kind++) {
        if (!ev->names[kind])
            continue;
        char upper[64] = "EV_";
        size_t j = 3;
        for (const char *c = ev->names[kind]; *c && j + 1 < sizeof upper; c++)
            upper[j++] = (char)toupper((unsigned char)*c);
        upper[j] = '\0';
        if (PyModule_AddIntConstant(module, upper, (long)kind) != 0)
            goto fail;
        if (ws_is_message_kind((uint8_t)kind)) {
            PyObject *v = PyLong_FromSize_t(kind);
            if (!v || PyList_Append(kinds, v) != 0) {
                Py_XDECREF(v);
                goto fail;
            }
            Py_DECREF(v);
        }
    }
    PyObject *tuple = PyList_AsTuple(kinds);
    Py_DECREF(kinds);
    if (!tuple || PyModule_AddObject(module, "MESSAGE_KINDS", tuple) != 0) {
        Py_XDECREF(tuple);
        return -1;
    }
    return 0;
fail:
    Py_DECREF(kinds);
    return -1;
}
