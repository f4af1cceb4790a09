"""The parallel side of the parallel-mode test in tests/test_simulate.py, run as
``mpiexec -n N python mpi_simulate_worker.py OUT TRACE...``.

Every process opens each trace with ``comm=MPI.COMM_WORLD`` and simulates it
under each hypothesis of :data:`HYPOTHESES`; the simulated (parallel-mode)
trace is analysed again in the parallel mode.  Rank 0 writes, per trace i
and hypothesis h, ``OUT/i-h.npz``: the new event times of every location
(gathered from their owners) and the analysis cube of the simulated trace.
"""
from __future__ import annotations

import os
import sys
from typing import Any

import numpy as np

HYPOTHESES: dict[str, dict[str, Any]] = {
    "identity": {},
    "balance": {"balance": "work"},
    "scale-ideal": {"scale": {"work": 2}, "network": "ideal"},
    "model": {"balance": ["work"], "network": (1e-5, 1e9)},
}


def main() -> None:
    from mpi4py import MPI

    import waitscope

    comm = MPI.COMM_WORLD
    out = sys.argv[1]
    for i, path in enumerate(sys.argv[2:]):
        trace = waitscope.open(path, comm=comm, progress=False)
        for name, hypothesis in HYPOTHESES.items():
            sim = trace.simulate(progress=False, **hypothesis)
            mine = {int(loc): np.array(sim.events(int(loc)).time) for loc in sim.loaded_locations}
            gathered = comm.gather(mine, root=0)
            result = sim.analyze(progress=False)
            if comm.Get_rank() == 0:
                times = {}
                for part in gathered:
                    times.update(part)
                arrays = {f"t{loc}": t for loc, t in times.items()}
                np.savez(os.path.join(out, f"{i}-{name}.npz"), cube=result.cube,
                         run_length=np.array(sim.run_length),
                         counts=np.array([sim.simulation["sync_sends"], sim.simulation["balanced_visits"]]),
                         **arrays)


if __name__ == "__main__":
    main()
