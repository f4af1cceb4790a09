/* The per-rank definition files of the interposition library (format in
 * rawtrace.h), parsed for the unification step. */
#ifndef WS_PMPI_RANKFILES_H
#define WS_PMPI_RANKFILES_H

#include <stdint.h>

#include "../common/error.h"

typedef struct ws_local_region {
    uint32_t id;
    char *kind, *name, *canonical;
    uint32_t global;
} ws_local_region;

typedef struct ws_local_comm {
    uint32_t id;
    char *key, *name;
    uint32_t size;
    char *members; /* comma-separated world ranks or "-" */
    uint32_t parent; /* local id of the communicator it was made from, UINT32_MAX if unknown */
    uint32_t global;
} ws_local_comm;

typedef struct ws_local_cart {
    uint32_t comm; /* local id */
    uint32_t ndims, rank;
    uint32_t dims[16], periods[16], coords[16];
} ws_local_cart;

/* an OpenMP construct (ompt.c): role and name; the last line for an index wins */
typedef struct ws_local_omp_region {
    int role; /* OTF2_RegionRole; -1: index never defined */
    char *name;
    uint32_t global;
} ws_local_omp_region;

enum { WS_RANK_OPENMP_NONE, WS_RANK_OPENMP_RECORDED, WS_RANK_OPENMP_NO_TOOL, WS_RANK_OPENMP_OFF };

typedef struct ws_rankfile {
    char *defs, *evt;
    int rank, size;
    char host[256];
    int complete;
    uint32_t n_regions, n_comms, n_carts, n_clocks;
    ws_local_region *regions;
    ws_local_comm *comms;
    ws_local_cart *carts;
    uint64_t clock_local[2];
    int64_t clock_offset[2];
    uint32_t *region_map; /* local region id -> global region index */
    uint32_t region_map_n;
    /* OpenMP (ompt.c): the threads with their own event files, the constructs */
    uint32_t *threads;
    uint32_t n_threads;
    ws_local_omp_region *omp_regions; /* by index (region id - WS_REGION_FIRST_OMP) */
    uint32_t n_omp_regions;
    int openmp;          /* WS_RANK_OPENMP_* */
    /* given by the process itself when it unified in parallel (lines
     * "threadfirst <k> <index>", "teamset <slots>", "teams"): its threads'
     * first team indices (else read from the thread files), its distinct
     * thread teams as slot lists (unify_teams.c) */
    /* what the run was (lines "command", "option NAME VALUE", "mpi", "date"), for its manifest */
    char *command, *options; /* options: "NAME=VALUE\n" each */
    char mpi[256], date[64];
    uint32_t *thread_first;
    int team_known;
    uint32_t n_team_sets, n_team_slots;
    uint32_t *team_start, *team_size, *team_slots;
    char openmp_text[200]; /* the runtime's version, or its library */
} ws_rankfile;

/* The event file of thread `k` of the process whose files these are. */
char *ws_rank_thread_path(const ws_rankfile *r, uint32_t k);

/* "a/b", malloc'ed; NULL when out of memory */
char *ws_rank_path(const char *a, const char *b);
/* Reads r->defs (set by the caller); a torn last line is ignored. */
int ws_rankfile_read(ws_rankfile *r, ws_error *err);
/* The same from the text of such a file (r->defs, if set, names it in errors). */
int ws_rankfile_parse(ws_rankfile *r, const char *text, size_t len, ws_error *err);
void ws_rankfile_free(ws_rankfile *r);
/* Time on rank 0's clock (ns) of a local timestamp, with the offsets
 * measured at MPI_Init and MPI_Finalize (linear in between). */
double ws_rankfile_global_time(const ws_rankfile *r, uint64_t local);
/* That time of the first event of r->evt (its MPI thread); INFINITY if none. */
double ws_rankfile_first_time(const ws_rankfile *r);

#endif
