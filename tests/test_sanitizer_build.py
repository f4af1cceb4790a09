"""Out of memory at every allocation, from Python: tests of the sanitizer build only.

They need the allocation-failure switch of csrc/common/alloc.h, which only
the sanitizer build has (``WAITSCOPE_SANITIZE=1``, ``.ci/sanitize``), so
conftest.py collects this file only there: in a normal build they are not
tests of anything and would only be skipped.
Every run must end in a MemoryError or in the result of the run without
failures, never in a crash or a leak (the sanitizers watch).
"""

from __future__ import annotations

import numpy as np

import waitscope
from waitscope import _core

from conftest import BUNDLED
from test_load_threads import assert_same_store, big_locations, snapshot  # noqa: F401 (a fixture)


def analyze_bundled() -> np.ndarray:
    trace = waitscope.open(BUNDLED)
    r = trace.analyze(delay_model="proportional", critical_path=True, delay_records=True, wait_records=True)
    return np.array(r.cube)


def test_every_allocation_failure_in_python_is_a_memory_error():
    want = analyze_bundled()
    before = _core._alloc_count()
    analyze_bundled()
    total = _core._alloc_count() - before
    assert total > 100
    n_memory_errors = 0
    for n in range(total + 1):
        _core._alloc_fail_after(n)
        try:
            got = analyze_bundled()
        except MemoryError:
            n_memory_errors += 1
            continue
        finally:
            _core._alloc_fail_after(-1)
        np.testing.assert_array_equal(got, want)
    assert n_memory_errors == total


def test_every_allocation_failure_loading_big_locations(big_locations):  # noqa: F811
    """Out of memory anywhere in the load of a big location (with one and
    two threads): a MemoryError or the same store, never a crash or a leak."""
    want = snapshot(waitscope.open(big_locations, progress=False))
    for threads in (1, 2):
        before = _core._alloc_count()
        waitscope.open(big_locations, progress=False, threads=threads)
        total = _core._alloc_count() - before
        for n in range(0, total + 1, max(1, total // 150)):
            _core._alloc_fail_after(n)
            try:
                got = waitscope.open(big_locations, progress=False, threads=threads)
            except MemoryError:
                continue
            finally:
                _core._alloc_fail_after(-1)
            assert_same_store(snapshot(got), want)
