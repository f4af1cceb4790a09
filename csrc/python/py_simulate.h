/* The what-if simulation's binding, shared by the embedded and the
 * parallel mode (through the C API, capi.h). */
#ifndef WS_PYTHON_PY_SIMULATE_H
#define WS_PYTHON_PY_SIMULATE_H

#include <Python.h>

#include "../replay/transport.h"

/* Simulates `locs` over `tr` and returns (new Trace, stats dict), or NULL
 * with an exception.  scale: float per call path or None; balance: bool
 * per call path or None; network: None (recorded) or (latency, bandwidth).
 * on_fail (may be NULL) is called, without the GIL, when the core fails. */
PyObject *ws_py_simulate_run(PyObject *trace, PyObject *scale, PyObject *balance, PyObject *network,
                             PyObject *progress, ws_transport *tr, const uint32_t *locs, uint32_t n,
                             void (*on_fail)(ws_transport *, ws_error *));

#endif
