/* The C API that waitscope._core exports (as the capsule
 * "waitscope._core._C_API") to the optional waitscope._mpi extension,
 * which is built separately so that _core never depends on MPI. */
#ifndef WS_PYTHON_CAPI_H
#define WS_PYTHON_CAPI_H

#include <Python.h>

#include "../analysis/analysis.h"
#include "py_simulate.h"

#define WS_CAPI_VERSION 3u /* 2: ws_analysis_options.wait_records, ws_result.wait_records; 3: simulate */

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
    /* sorts wait-state records gathered from several processes */
    void (*wait_records_sort)(ws_wait_record *records, size_t n);
    /* the what-if simulation (py_simulate.h) */
    PyObject *(*simulate)(PyObject *trace, PyObject *scale, PyObject *balance, PyObject *network, PyObject *progress,
                          ws_transport *tr, const uint32_t *locs, uint32_t n,
                          void (*on_fail)(ws_transport *, ws_error *));
} ws_core_capi;

#endif
