"""The parallel side of tests/test_mpi.py, run as ``mpiexec -n N python mpi_worker.py MODE OUT TRACE...``.

Modes:

``compare``
    Every process opens each trace with ``comm=MPI.COMM_WORLD`` and runs
    the analyses of :data:`CONFIGS`; rank 0 writes the result of trace i
    and configuration c as ``OUT/i-c.npz`` (see :func:`result_arrays`).
``share``
    The same with ``keep_share=True``: every process writes its own share
    as ``OUT/i-c-rRANK.npz``, with ``owner`` and the ``loaded`` locations.
``error``
    Opens and analyses each trace; every process writes ``ok`` or
    ``TraceError: MESSAGE`` (one line per trace) to ``OUT/error-rRANK.txt``
    (not to stdout, where mpiexec may interleave the processes' lines) and
    exits with 3 if any raised TraceError.

The test process compares the files with the embedded (one-process)
mode through :func:`result_arrays`, which both sides share.
"""
from __future__ import annotations

import os
import sys
from typing import Any

import numpy as np

CONFIGS: dict[str, dict[str, Any]] = {
    "waitstates": {},
    "proportional": {"delay_model": "proportional", "critical_path": True, "delay_records": True},
    "wait-first": {"delay_model": "wait-first", "critical_path": True, "delay_records": True,
                   "wait_records": True},
}


def result_arrays(result: Any) -> dict[str, np.ndarray]:
    """The comparable content of an AnalysisResult as plain arrays (for np.savez)."""
    out: dict[str, np.ndarray] = {
        "cube": result.cube,
        "metric_ids": np.array(result.metric_ids, dtype=str),
        "callpath_names": np.array(result.callpath_names, dtype=str),
        "clock_violations": np.asarray(result.clock_violations),
    }
    if "critical_path" in result.metric_ids:
        cp = result.critical_path
        out["segments"] = cp.segments
        out["path_bounds"] = np.array([cp.start, cp.end])
    if result.delay_model is not None and "records" in result._raw:
        rec = result.delay_records
        out["records"] = rec
        raw = result._raw["records"]
        out["vector_callpath"] = np.asarray(raw["vector_callpath"])
        out["vector_value"] = np.asarray(raw["vector_value"])
    if result.has_wait_states:
        out["wait_states"] = result.wait_states
    return out


def records_as_rows(arrays: dict[str, Any]) -> list[tuple]:
    """Delay records with their vectors in place of the offsets, sorted."""
    rec = arrays["records"]
    fields = [f for f in rec.dtype.names if f not in ("vector_offset", "vector_length")]
    cps, values = arrays["vector_callpath"], arrays["vector_value"]
    rows = []
    for r in rec:
        off, n = int(r["vector_offset"]), int(r["vector_length"])
        vector = tuple(zip((int(c) for c in cps[off:off + n]), (float(v) for v in values[off:off + n])))
        rows.append(tuple(r[f].item() for f in fields) + (vector,))
    return sorted(rows)


def main(argv: list[str]) -> int:
    from mpi4py import MPI

    import waitscope

    mode, out, traces = argv[0], argv[1], argv[2:]
    comm = MPI.COMM_WORLD
    rank = comm.Get_rank()
    status = 0
    for i, path in enumerate(traces):
        if mode == "error":
            try:
                waitscope.open(path, comm=comm).analyze(**CONFIGS["proportional"])
                line = "ok"
            except waitscope.TraceError as exc:
                line = f"TraceError: {exc}"
                status = 3
            with open(os.path.join(out, f"error-r{rank}.txt"), "a") as f:
                f.write(line.replace("\n", " ") + "\n")
            continue
        trace = waitscope.open(path, comm=comm)
        for name, options in CONFIGS.items():
            if mode == "share":
                share = trace.analyze(keep_share=True, **options)
                arrays = result_arrays(share)
                arrays["owner"] = trace.owner
                arrays["loaded"] = trace.loaded_locations
                np.savez(os.path.join(out, f"{i}-{name}-r{rank}.npz"), **arrays)
            else:
                result = trace.analyze(**options)
                if rank == 0:
                    np.savez(os.path.join(out, f"{i}-{name}.npz"), **result_arrays(result))
                else:
                    assert result is None
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
