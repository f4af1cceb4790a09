/* Python call paths: in a Python interpreter (mpi4py), the call path of an
 * MPI call is the chain of Python frames (`halo.py:exchange`, named by the
 * file's base name and the code's qualified name) in place of the
 * interpreter's C frames, followed by the mpi4py method that the innermost
 * Python frame called (`MPI.Comm.allreduce`), then the MPI function.  So an
 * MPI call mpi4py makes internally (the point-to-point messages of a
 * pickled comm.allreduce on its duplicated communicator, the two
 * MPI_Bcast of comm.bcast, the MPI_Mprobe/MPI_Mrecv of comm.recv) stands
 * under the method the program called, apart from the program's own calls
 * of the same MPI function.
 *
 * The Python frames are read through CPython's C API, looked up in the
 * process with dlsym (the library is not linked with any Python, and works
 * with whichever runs the program): PyEval_GetFrame, PyFrame_GetBack and
 * PyFrame_GetCode (Python 3.9 and later).  They need the GIL; mpi4py
 * releases it around blocking MPI calls, so the wrapper takes it with
 * PyGILState_Ensure where the thread does not hold it and gives it back
 * before the MPI call proceeds (another Python thread running at that
 * moment may delay the MPI call by up to the interpreter's switch
 * interval, 5 ms).  Once the interpreter is finalised (mpi4py calls
 * MPI_Finalize from Py_AtExit) no frame is read: the call stands right
 * under the program.  Each code object is named once and kept referenced,
 * so its address is never reused for another.  The frames of the import
 * machinery (`<frozen importlib._bootstrap>`) are left out: MPI_Init,
 * called while `from mpi4py import MPI` runs, stands under the importing
 * frame.
 *
 * The mpi4py method is the innermost Cython wrapper on the C stack (the
 * cached walk of stackwalk.c), `__pyx_pw_6mpi4py_3MPI_4Comm_259recv`
 * (a method) or `__pyx_getprop_6mpi4py_3MPI_4Comm_rank` (a property),
 * demangled by ws_python_cython_name; an mpi4py built without its symbol
 * table has no method on the path. */
#define _GNU_SOURCE
#include "pmpi.h"

#include <ctype.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct py_api {
    int (*is_initialized)(void);
    int (*gil_check)(void);
    int (*gil_ensure)(void);
    void (*gil_release)(int);
    void *(*get_frame)(void);
    void *(*frame_back)(void *);
    void *(*frame_code)(void *);
    void *(*get_attr)(void *, const char *);
    const char *(*utf8)(void *);
    void (*incref)(void *);
    void (*decref)(void *);
    void (*err_clear)(void);
    void (*err_fetch)(void **, void **, void **);
    void (*err_restore)(void *, void *, void *);
};
typedef struct py_api py_api;

static int lookup(ws_python_rt *p)
{
    static const char *const names[] = {"Py_IsInitialized", "PyGILState_Check", "PyGILState_Ensure",
                                        "PyGILState_Release", "PyEval_GetFrame", "PyFrame_GetBack",
                                        "PyFrame_GetCode", "PyObject_GetAttrString", "PyUnicode_AsUTF8",
                                        "Py_IncRef", "Py_DecRef", "PyErr_Clear", "PyErr_Fetch",
                                        "PyErr_Restore"};
    _Static_assert(sizeof names / sizeof names[0] == sizeof(py_api) / sizeof(void (*)(void)), "one name per entry");
    void *found[sizeof names / sizeof names[0]];
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if ((found[i] = dlsym(RTLD_DEFAULT, names[i])) == NULL)
            return -1;
    py_api *api = malloc(sizeof *api);
    if (!api)
        return -1;
    memcpy(api, found, sizeof *api); /* function pointers in the order of `names` */
    p->api = api;
    return 0;
}

/* "halo.py:exchange" of a code object, or "" for one to leave out. */
static void code_name(const py_api *api, void *code, char *out, size_t size)
{
    out[0] = '\0';
    void *file = api->get_attr(code, "co_filename");
    void *qual = api->get_attr(code, "co_qualname");
    if (!qual) {
        api->err_clear(); /* before Python 3.11 */
        qual = api->get_attr(code, "co_name");
    }
    const char *f = file ? api->utf8(file) : NULL, *q = qual ? api->utf8(qual) : NULL;
    if (!f || !q)
        api->err_clear();
    else if (strncmp(f, "<frozen importlib", 17) != 0) {
        const char *base = strrchr(f, '/');
        snprintf(out, size, "%s:%s", base ? base + 1 : f, q);
    }
    if (file)
        api->decref(file);
    if (qual)
        api->decref(qual);
}

#define LEFT_OUT (1ULL << 32)

/* The region of a code object (0: left out), named at its first sight. */
static uint32_t code_region(ws_callpaths_rt *c, const py_api *api, void *code)
{
    uint64_t v;
    if (ws_map64_get(&c->py.code_region, (uint64_t)(uintptr_t)code, &v))
        return v == LEFT_OUT ? 0 : (uint32_t)v;
    char name[512];
    void *type, *value, *trace; /* an exception mpi4py may be handling stays as it is */
    api->err_fetch(&type, &value, &trace);
    code_name(api, code, name, sizeof name);
    api->err_restore(type, value, trace);
    uint32_t r = name[0] ? ws_callpath_region_named(c, name) : 0;
    api->incref(code); /* its address now names this region: never freed */
    ws_map64_put(&c->py.code_region, (uint64_t)(uintptr_t)code, r ? r : LEFT_OUT);
    return r;
}

int ws_python_frames(ws_callpaths_rt *c, uint32_t *out, int max)
{
    ws_python_rt *p = &c->py;
    if (p->state == 0)
        p->state = lookup(p) == 0 ? 1 : -1;
    if (p->state < 0)
        return -1;
    const py_api *api = p->api;
    if (!api->is_initialized())
        return -2;
    int held = api->gil_check(), gil = 0;
    if (!held)
        gil = api->gil_ensure();
    uint32_t inner[WS_STACK_MAX];
    int n = 0;
    void *frame = api->get_frame(); /* borrowed */
    if (frame)
        api->incref(frame);
    while (frame && n < WS_STACK_MAX) {
        void *code = api->frame_code(frame);
        if (code) {
            uint32_t r = code_region(c, api, code);
            api->decref(code);
            if (r)
                inner[n++] = r;
        }
        void *back = api->frame_back(frame);
        api->decref(frame);
        frame = back;
    }
    if (frame)
        api->decref(frame);
    if (!held)
        api->gil_release(gil);
    int k = 0; /* outermost first */
    for (int i = n - 1; i >= 0 && k < max; i--)
        out[k++] = inner[i];
    return k;
}

int ws_python_cython_name(const char *symbol, char *out, size_t size)
{
    static const char pw[] = "__pyx_pw_", prop[] = "__pyx_getprop_";
    int is_prop = strncmp(symbol, prop, sizeof prop - 1) == 0;
    if (!is_prop && strncmp(symbol, pw, sizeof pw - 1) != 0)
        return -1;
    const char *s = symbol + (is_prop ? sizeof prop : sizeof pw) - 1;
    /* <len><module>_..<len><class>_ then <counter><name> (a method) or
     * <name> (a property): a piece is a scope when its length prefix
     * covers it up to a '_' and what follows is another piece (a method),
     * or the name (a property) */
    char scope[512] = "";
    size_t used = 0;
    for (int first = 1; isdigit((unsigned char)*s); first = 0) {
        char *end;
        unsigned long len = strtoul(s, &end, 10);
        if (len == 0 || len >= strlen(end) || end[len] != '_')
            break;
        const char *next = end + len + 1;
        if (!(isdigit((unsigned char)*next) || (is_prop && *next)))
            break;
        if (!(first && len == 6 && strncmp(end, "mpi4py", 6) == 0)) { /* mpi4py.MPI.Comm reads MPI.Comm */
            int w = snprintf(scope + used, sizeof scope - used, "%.*s.", (int)len, end);
            if (w < 0 || (size_t)w >= sizeof scope - used)
                return -1;
            used += (size_t)w;
        }
        s = next;
    }
    if (!is_prop)
        while (isdigit((unsigned char)*s))
            s++; /* a method's counter */
    if (!*s || used == 0)
        return -1;
    int w = snprintf(out, size, "%s%s", scope, s);
    return w < 0 || (size_t)w >= size ? -1 : 0;
}
