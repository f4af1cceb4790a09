"""Readable names for the OTF2 enumerations the store keeps as numbers."""

from __future__ import annotations

REGION_ROLES = (
    "unknown", "function", "wrapper", "loop", "code", "parallel", "sections", "section",
    "workshare", "single", "single_sblock", "master", "critical", "critical_sblock", "atomic",
    "barrier", "implicit_barrier", "flush", "ordered", "ordered_sblock", "task", "task_create",
    "task_wait", "coll_one2all", "coll_all2one", "coll_all2all", "coll_other", "file_io",
    "point2point", "rma", "data_transfer", "artificial", "thread_create", "thread_wait",
    "task_untied", "allocate", "deallocate", "reallocate", "file_io_metadata",
)

PARADIGMS = (
    "unknown", "user", "compiler", "openmp", "mpi", "cuda", "measurement_system", "pthread",
    "hmpp", "ompss", "hardware", "gaspi", "upc", "shmem", "winthread", "qtthread", "acethread",
    "tbbthread", "openacc", "opencl", "mtapi", "sampling", "none", "hip", "kokkos",
)

COLLECTIVE_OPS = (
    "barrier", "bcast", "gather", "gatherv", "scatter", "scatterv", "allgather", "allgatherv",
    "alltoall", "alltoallv", "alltoallw", "allreduce", "reduce", "reduce_scatter", "scan",
    "exscan", "reduce_scatter_block", "create_handle", "destroy_handle", "allocate",
    "deallocate", "create_handle_and_allocate", "destroy_handle_and_deallocate",
)

LOCATION_TYPES = ("unknown", "cpu_thread", "accelerator_stream", "metric")

# Event kinds as stored in the `kind` column (see csrc/trace/trace.h).
EVENT_KINDS = {
    1: "enter",
    2: "leave",
    3: "send",
    4: "isend",
    5: "isend_complete",
    6: "irecv_request",
    7: "recv",
    8: "irecv",
    9: "request_test",
    10: "request_cancelled",
    11: "coll_begin",
    12: "coll_end",
    13: "program_begin",
    14: "program_end",
    15: "measurement_on",
    16: "measurement_off",
}

# The OTF2 record name of each kind, as otf2-print spells it.
OTF2_RECORD_NAMES = {
    1: "ENTER",
    2: "LEAVE",
    3: "MPI_SEND",
    4: "MPI_ISEND",
    5: "MPI_ISEND_COMPLETE",
    6: "MPI_IRECV_REQUEST",
    7: "MPI_RECV",
    8: "MPI_IRECV",
    9: "MPI_REQUEST_TEST",
    10: "MPI_REQUEST_CANCELLED",
    11: "MPI_COLLECTIVE_BEGIN",
    12: "MPI_COLLECTIVE_END",
    13: "PROGRAM_BEGIN",
    14: "PROGRAM_END",
    15: "MEASUREMENT_ON_OFF",
    16: "MEASUREMENT_ON_OFF",
}

MESSAGE_KINDS = (3, 4, 7, 8)


def name_of(table: tuple[str, ...], value: int) -> str:
    """Name of an enumeration value, or 'unknown(N)' past the table."""
    return table[value] if 0 <= value < len(table) else f"unknown({value})"
