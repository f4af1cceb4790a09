/* The metric tree.  Identifiers are Scalasca's unique names so that the
 * results read like a Cube report; docs/metrics.md defines each one. */
#ifndef WS_ANALYSIS_METRICS_H
#define WS_ANALYSIS_METRICS_H

#include <stdint.h>

typedef struct ws_metric_def {
    const char *id;          /* unique name, e.g. "mpi_latesender" */
    const char *name;        /* display name */
    const char *unit;        /* "sec", "occ" or "bytes" */
    const char *parent;      /* id of the parent or NULL for a root */
    const char *description; /* one line */
    uint32_t group;          /* which analysis computes it (WS_GROUP_*) */
} ws_metric_def;

enum {
    WS_METRICS_WAITSTATES = 1,
    WS_METRICS_DELAY = 2,
    WS_METRICS_CRITICAL_PATH = 4
};

/* Indices into ws_metric_table (keep in the table's order). */
enum ws_metric {
    M_TIME,
    M_EXECUTION,
    M_COMP,
    M_MPI,
    M_MPI_MANAGEMENT,
    M_MPI_INIT_EXIT,
    M_MPI_INIT_COMPLETION,
    M_MPI_FINALIZE_WAIT,
    M_MPI_MGMT_COMM,
    M_MPI_MGMT_FILE,
    M_MPI_MGMT_WIN,
    M_MPI_SYNCHRONIZATION,
    M_MPI_SYNC_COLLECTIVE,
    M_MPI_BARRIER_WAIT,
    M_MPI_BARRIER_COMPLETION,
    M_MPI_COMMUNICATION,
    M_MPI_POINT2POINT,
    M_MPI_LATESENDER,
    M_MPI_LATESENDER_WO,
    M_MPI_LSWO_DIFFERENT,
    M_MPI_LSWO_SAME,
    M_MPI_LATERECEIVER,
    M_MPI_COLLECTIVE,
    M_MPI_EARLYREDUCE,
    M_MPI_EARLYSCAN,
    M_MPI_LATEBROADCAST,
    M_MPI_WAIT_NXN,
    M_MPI_NXN_COMPLETION,
    M_MPI_IO,
    M_MPI_IO_INDIVIDUAL,
    M_MPI_IO_COLLECTIVE,
    M_OVERHEAD,
    M_VISITS,
    M_SYNCS,
    M_SYNCS_P2P,
    M_SYNCS_SEND,
    M_MPI_SLR_COUNT,
    M_SYNCS_RECV,
    M_MPI_SLS_COUNT,
    M_MPI_SLSWO_COUNT,
    M_SYNCS_COLL,
    M_COMMS,
    M_COMMS_P2P,
    M_COMMS_SEND,
    M_MPI_CLR_COUNT,
    M_COMMS_RECV,
    M_MPI_CLS_COUNT,
    M_MPI_CLSWO_COUNT,
    M_COMMS_COLL,
    M_COMMS_CXCH,
    M_COMMS_CSRC,
    M_COMMS_CDST,
    M_BYTES,
    M_BYTES_P2P,
    M_BYTES_SENT,
    M_BYTES_RCVD,
    M_BYTES_COLL,
    M_BYTES_COUT,
    M_BYTES_CIN,
    /* delay analysis */
    M_DELAY,
    M_DELAY_MPI,
    M_DELAY_P2P,
    M_DELAY_LATESENDER_AGGREGATE,
    M_DELAY_LATESENDER,
    M_DELAY_LATESENDER_LONGTERM,
    M_DELAY_LATERECEIVER_AGGREGATE,
    M_DELAY_LATERECEIVER,
    M_DELAY_LATERECEIVER_LONGTERM,
    M_DELAY_COLLECTIVE,
    M_DELAY_BARRIER_AGGREGATE,
    M_DELAY_BARRIER,
    M_DELAY_BARRIER_LONGTERM,
    M_DELAY_N2N_AGGREGATE,
    M_DELAY_N2N,
    M_DELAY_N2N_LONGTERM,
    M_DELAY_12N_AGGREGATE,
    M_DELAY_12N,
    M_DELAY_12N_LONGTERM,
    M_DELAY_N21_AGGREGATE,
    M_DELAY_N21,
    M_DELAY_N21_LONGTERM,
    M_WAITSTATES_DIRECT_VS_INDIRECT,
    M_MPI_WAIT_DIRECT,
    M_MPI_WAIT_DIRECT_LATESENDER,
    M_MPI_WAIT_DIRECT_LATERECEIVER,
    M_MPI_WAIT_DIRECT_COLLECTIVE,
    M_MPI_WAIT_INDIRECT,
    M_MPI_WAIT_INDIRECT_LATESENDER,
    M_MPI_WAIT_INDIRECT_LATERECEIVER,
    M_MPI_WAIT_INDIRECT_COLLECTIVE,
    M_WAITSTATES_PROPAGATING_VS_TERMINAL,
    M_MPI_WAIT_PROPAGATING,
    M_MPI_WAIT_PROPAGATING_LS,
    M_MPI_WAIT_PROPAGATING_LR,
    M_MPI_WAIT_PROPAGATING_COLLECTIVE,
    M_MPI_WAIT_TERMINAL,
    M_MPI_WAIT_TERMINAL_LS,
    M_MPI_WAIT_TERMINAL_LR,
    M_MPI_WAIT_TERMINAL_COLLECTIVE,
    /* critical path */
    M_CRITICAL_PATH,
    M_CRITICAL_PATH_IMBALANCE,
    M_PERFORMANCE_IMPACT,
    M_PERFORMANCE_IMPACT_CRITICALPATH,
    M_CRITICAL_PATH_ACTIVITIES,
    M_CRITICAL_IMBALANCE_IMPACT,
    M_INTRA_PARTITION_IMBALANCE,
    M_INTER_PARTITION_IMBALANCE,
    M_NON_CRITICAL_PATH_ACTIVITIES,
    M_COUNT
};

extern const ws_metric_def ws_metric_table[M_COUNT];

/* Index of the parent of metric m in the table, or -1. */
int ws_metric_parent(int m);

#endif
