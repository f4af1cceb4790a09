"""Call paths named as users type them: full names, unique suffixes, C/C++ function names."""

from __future__ import annotations

import pytest

from waitscope import _callpaths, synth


@pytest.fixture(scope="module")
def result():
    p = synth.Program(2)
    with p.rank(0).region("void ns::Solver::step(double) const"):
        p.rank(0).compute("work", 1.0).send(1)
    with p.rank(1).region("solve"):
        p.rank(1).recv(0)
        with p.rank(1).region("inner"):
            p.rank(1).compute("work", 0.5)
    p.rank(0).send(1)
    p.rank(1).recv(0)
    return p.run(latency=0.0).analyze()


@pytest.mark.parametrize("region,function", [
    ("int main(int, char**)", "main"),
    ("void ns::Solver::step(double) const", "ns::Solver::step"),
    ("std::vector<int, std::allocator<int> > make<int>(unsigned long)", "make<int>"),
    ("double* grid(int)", "grid"),
    ("g(void (*)(int))", "g"),
    ("MPI_Recv", "MPI_Recv"),
    ("!$omp parallel @solver.f90:12", "!$omp parallel @solver.f90:12"),
])
def test_function_name_inside_a_signature(region, function):
    assert _callpaths.function_name(region) == function


def test_full_names_suffixes_and_function_names(result):
    names = result.callpath_names
    step = names.index("synthetic/main/void ns::Solver::step(double) const")
    assert result.callpath_index("main/void ns::Solver::step(double) const") == step
    for key in ("main/ns::Solver::step", "ns::Solver::step", "step", "main/step", "/main/step/"):
        assert result.callpath_index(key) == step, key
    inner = names.index("synthetic/main/solve/inner")
    assert result.callpath_index("inner") == inner
    assert result.callpath_index("solve/inner") == inner
    # whole components only
    with pytest.raises(KeyError):
        result.callpath_index("ner")
    with pytest.raises(KeyError):
        result.callpath_index("olve/inner")


def test_a_path_from_the_root_wins_over_suffixes(result):
    names = result.callpath_names
    assert result.callpath_index("main/MPI_Recv") == names.index("synthetic/main/MPI_Recv")
    assert result.callpath_index("main") == names.index("synthetic/main")
    # the program region is the root of every call path
    assert names[0] == "synthetic" and all(n.startswith("synthetic/") for n in names[1:])
    assert result.callpath_index("synthetic/main/MPI_Recv") == names.index("synthetic/main/MPI_Recv")


def test_ambiguous_keys_name_the_candidates(result):
    # MPI_Recv is called in main and in main/solve
    with pytest.raises(ValueError) as err:
        result.callpath_index("MPI_Recv")
    assert "'synthetic/main/MPI_Recv'" in str(err.value) and "'synthetic/main/solve/MPI_Recv'" in str(err.value)
    assert result.callpath_index("solve/MPI_Recv") == result.callpath_names.index("synthetic/main/solve/MPI_Recv")


def test_unknown_keys_name_the_closest(result):
    with pytest.raises(KeyError) as err:
        result.get("mpi_latesender", "solve/MPI_Recf")
    text = str(err.value)
    assert "unknown call path 'solve/MPI_Recf'" in text
    assert "closest: 'synthetic/main/solve/MPI_Recv'" in text
    with pytest.raises(KeyError, match="unknown call path 'zzz' .callpath_names lists all"):
        result.callpath_index("zzz")
    with pytest.raises(TypeError, match="call path must be an index or a name"):
        result.callpath_index(1.5)
    with pytest.raises(IndexError):
        result.callpath_index(len(result.callpath_names))


def test_get_with_a_suffix_equals_get_with_the_full_name(result):
    full = result.get("mpi_latesender", "main/solve/MPI_Recv")
    assert list(result.get("mpi_latesender", "solve/MPI_Recv")) == list(full)
    assert full[1] == pytest.approx(1.0)  # rank 1 waited for rank 0's 1 s of work


def test_the_trace_resolves_call_paths_too(result):
    trace = result.trace
    for key in ("solve/MPI_Recv", "step", "main/solve/inner", 2):
        assert trace.callpath_index(key) == result.callpath_index(key)
    with pytest.raises(ValueError, match="ambiguous"):
        trace.callpath_index("MPI_Recv")
