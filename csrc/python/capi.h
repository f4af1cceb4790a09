/* The C API that waitscope._core exports (as the capsule
 * "waitscope._core._C_API") to the optional waitscope._mpi extension,
 * which is built separately so that _core never depends on MPI. */
#ifndef WS_PYTHON_CAPI_H
#define WS_PYTHON_CAPI_H

#include <Python.h>

#include "../replay/transport.h"
#include "../waitscope.h"
#include "py_simulate.h"

/* The version covers this table and every structure whose fields both
 * modules read: ws_analysis_options, ws_progress, ws_error (waitscope.h)
 * and ws_comm_layout, ws_transport, ws_transport_ops (replay/transport.h).
 * _mpi reads no field of ws_trace or ws_result: it holds them as opaque
 * handles and leaves them to the functions below.
 * 3: unify_callpaths, result_gather, comm_layout, trace_begin/end;
 * 4: simulate, ws_analysis_options' window, parse_options;
 * 5: ws_analysis_options' path_walk, ws_transport_ops' gather_apply,
 *    ws_coll_view without its list of present members */
#define WS_CAPI_VERSION 5u

typedef struct ws_core_capi {
    unsigned version;
    PyTypeObject *(*trace_type)(void); /* waitscope._core.Trace */
    /* the trace owned by a waitscope._core.Trace object */
    ws_trace *(*trace_of)(PyObject *trace);
    int (*analyze)(const ws_trace *t, const uint32_t *locations, uint32_t n, ws_transport *tr,
                   const ws_analysis_options *options, const ws_progress *progress, ws_result **out,
                   ws_error *err);
    /* converts a result into the dict that waitscope.AnalysisResult wraps
     * (takes ownership of r) */
    PyObject *(*result_to_python)(ws_result *r);
    void (*result_free)(ws_result *r);
    /* raises the Python exception of a core error; returns NULL */
    PyObject *(*raise_error)(const ws_error *err);
    /* a progress object checking Ctrl-C and calling an optional Python
     * callable; `storage` must hold capi->progress_size bytes */
    size_t progress_size;
    const ws_progress *(*progress_init)(void *storage, PyObject *callback);
    uint32_t (*trace_n_locations)(const ws_trace *t);
    /* brackets work on a Trace object that runs without the GIL (see
     * ws_py_trace_begin in py_common.h); begin raises and returns -1 on a
     * conflict with another thread's work */
    int (*trace_begin)(PyObject *trace, int write, const char *what);
    void (*trace_end)(PyObject *trace, int write);
    /* the parallel mode's collectives (waitscope.h) on any transport */
    int (*unify_callpaths)(ws_trace *t, ws_transport *tr, ws_error *err);
    int (*result_gather)(ws_result *r, ws_transport *tr, ws_error *err);
    /* the trace's communicators for a transport (replay/parallel.h) */
    int (*comm_layout)(const ws_trace *t, ws_comm_layout *out, ws_error *err);
    void (*comm_layout_free)(ws_comm_layout *layout);
    /* delay_model and window from Python into `opt`; raises and returns -1 */
    int (*parse_options)(PyObject *delay_model, PyObject *window, ws_analysis_options *opt);
    /* the what-if simulation (py_simulate.h) */
    PyObject *(*simulate)(PyObject *trace, PyObject *scale, PyObject *balance, PyObject *network, PyObject *progress,
                          ws_transport *tr, const uint32_t *locs, uint32_t n,
                          void (*on_fail)(ws_transport *, ws_error *));
} ws_core_capi;

#endif
