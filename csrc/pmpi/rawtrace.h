/* The per-rank files the interposition library writes while the program
 * runs, read by the unification step (unify.c) that builds the OTF2
 * archive at MPI_Finalize, or after a run that was cut short.
 *
 * Both live in DIR/.waitscope/ (DIR = WAITSCOPE_TRACE_DIR):
 *
 *   p<pid>.evt   fixed-size binary records (ws_raw_event), appended in
 *                blocks; a crash loses at most the unwritten block and a
 *                torn last record, which the reader drops.
 *   p<pid>.t<k>.evt  the same for OpenMP thread k of the process (ompt.c):
 *                its constructs, with the thread records below.
 *   p<pid>.defs  local definitions, one line each, appended and written
 *                through at once (tab-separated fields):
 *       rank   <world rank> <world size> <pid> <hostname>
 *       start  <ns>                     program begin (local clock)
 *       command <argv joined by spaces>
 *       option <name> <value>           a WAITSCOPE_* variable the run had (rank 0)
 *       mpi    <the MPI library's version, first line>  (rank 0)
 *       date   <UTC, ISO 8601>          when MPI_Init returned (rank 0)
 *       region <local id> <kind> <name> <canonical name>
 *                                       kind: mpi:<OTF2 role> | user | program
 *       comm   <local id> <key> <name> <size> <world ranks, comma-separated> <parent local id>
 *                                       key: "world", "self" or "<world rank of comm rank 0>.<serial>"
 *       cart   <comm local id> <ndims> <dims,> <periods,> <comm rank> <coords,>
 *       clock  <local ns> <offset ns>   global = local + offset (ClockOffset)
 *       thread <k>                      OpenMP thread k has an event file
 *       ompregion <index> <role> <name> OpenMP construct, local region id
 *                                       WS_RAW_FIRST_OMP_REGION + index; a
 *                                       later line for the same index renames it
 *       openmp <runtime>                OpenMP recorded through OMPT
 *       openmp-none <library>           an OpenMP runtime without OMPT ran
 *       openmp-off <library>            recording OpenMP was turned off
 *       teams                           at MPI_Finalize, before "end", what the
 *                                       process found in its own event files:
 *       threadfirst <k> <index>         thread k's index in its first team
 *       teamset <slots,>                a distinct thread team (unify_teams.c)
 *       end    <events>                 the rank reached MPI_Finalize
 *       abort  <code>                   the rank called MPI_Abort
 *       signal <number>                 the rank died of a signal
 */
#ifndef WS_PMPI_RAWTRACE_H
#define WS_PMPI_RAWTRACE_H

#include <stdint.h>

#define WS_RAW_SUBDIR ".waitscope"

/* local region ids of the OpenMP constructs start here */
#define WS_RAW_FIRST_OMP_REGION 0x80000000u

/* Event kinds use the store's numbering (trace/trace.h, enum ws_event_kind).
 * The thread records: ThreadFork a = requested threads; ThreadTeamBegin
 * req = the parallel region's number in the process, tag = the thread's
 * index in the team, bytes = the team's size; ThreadTeamEnd req = the
 * number; ThreadAcquireLock/ReleaseLock a = lock id, bytes = acquisition
 * order. */
typedef struct ws_raw_event {
    uint64_t time;  /* local clock, nanoseconds */
    uint8_t kind;   /* ws_event_kind */
    uint8_t op;     /* OTF2_CollectiveOp of WS_EV_COLL_END */
    uint16_t unused;
    uint32_t a;     /* region (enter/leave), peer (messages), root (collectives) */
    uint32_t comm;  /* local communicator id */
    uint32_t tag;
    uint64_t bytes; /* message bytes; bytes sent by a collective */
    uint64_t req;   /* request id; bytes received by a collective */
} ws_raw_event;

#endif
