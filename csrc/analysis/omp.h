/* OpenMP thread teams as the analyses see them (omp.c).
 *
 * Scalasca counts the time of every thread of a team from the master's
 * ThreadFork to its ThreadJoin as time of the parallel region (the part
 * before the thread entered the region is OpenMP fork time, the part
 * after it left join time, both OpenMP management).  The analyses read
 * the events through a view of the store that has exactly these times:
 * per location a copy of the time column in which the events from the
 * fork to the thread's Enter of the parallel region carry the fork's time
 * and those from its Leave to the join the join's time.  Nothing else of
 * the store changes; the view shares it. */
#ifndef WS_ANALYSIS_OMP_H
#define WS_ANALYSIS_OMP_H

#include "../trace/trace.h"

/* A fork of a team's master (the thread that forked it). */
typedef struct ws_omp_fork {
    uint32_t fork_ev;      /* its ThreadFork */
    uint32_t join_ev;      /* its ThreadJoin (WS_NONE32: none) */
    uint32_t team;         /* the team's communicator (WS_NONE32: no team began) */
    uint32_t n_members;    /* threads that began the team */
    uint32_t depth;        /* forks of this master open around it (0: not nested) */
    uint32_t pad;
    double fork, join;     /* times of the fork and the join */
    double earliest_enter; /* the earliest Enter of the parallel region among the team (recorded time) */
} ws_omp_fork;

/* A location's part in one team: its visit of the parallel region. */
typedef struct ws_omp_visit {
    uint32_t begin_ev;    /* ThreadTeamBegin */
    uint32_t end_ev;      /* ThreadTeamEnd (WS_NONE32: none) */
    uint32_t enter_ev;    /* the Enter of the parallel region (WS_NONE32: none) */
    uint32_t leave_ev;    /* its Leave */
    uint32_t master;      /* location that forked the team */
    uint32_t fork;        /* index into the master's forks */
    double enter, leave;  /* recorded times of the Enter and Leave */
} ws_omp_visit;

typedef struct ws_omp_loc {
    ws_omp_fork *forks;
    uint32_t n_forks;
    ws_omp_visit *visits;
    uint32_t n_visits;
    double *time; /* the view's time column (NULL: the store's) */
    /* a thread other than its team's master: its time per call path after
     * the last OpenMP synchronization of each of its parallel regions
     * (that barrier included), which Scalasca 2.6 leaves out of its
     * activity (the time it counts on a thread between synchronizations;
     * omp_metrics.c, derived.c) */
    uint32_t *tail_cp;
    double *tail_time;
    uint32_t n_tail;
} ws_omp_loc;



typedef struct ws_omp {
    const ws_trace *store; /* the store the view is of */
    ws_trace view;         /* its shallow copy with the view's time columns */
    ws_location *view_locations;
    ws_omp_loc *locs;      /* by location; filled for the local ones */
    uint32_t *group_threads; /* per location group: its locations */
    uint32_t *group_master;  /* per location group: its master thread (the MPI location, else the first) */
    uint32_t *group_first;   /* per location group: its first local location (WS_NONE32: none) ... */
    uint32_t *next_in_group; /* ... per location: the next local one of its group */
} ws_omp;

/* Does the trace define OpenMP regions (decided on the definitions, so
 * that every process of a parallel analysis agrees)? */
int ws_trace_has_openmp(const ws_trace *t);

/* The teams of the local locations and the view of the store (NULL in
 * *out when none of them has a thread team).  The threads of a process
 * must be local together. */
int ws_omp_build(const ws_trace *t, const uint32_t *locations, uint32_t n, ws_omp **out, ws_error *err);
void ws_omp_free(ws_omp *o);

/* The tail time of call path cp on loc (ws_omp_loc.tail_cp; 0 when none
 * or without teams). */
double ws_omp_tail(const ws_omp *o, uint32_t loc, uint32_t cp);

#endif
