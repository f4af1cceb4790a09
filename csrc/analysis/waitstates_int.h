/* Internal to the wait-state analysis (waitstates.c: region categories,
 * wait-state records, the passes' handler table and the time hierarchy;
 * waitstates_p2p.c: the point-to-point patterns of passes 1 to 3;
 * waitstates_coll.c: the collective patterns of pass 1). */
#ifndef WS_ANALYSIS_WAITSTATES_INT_H
#define WS_ANALYSIS_WAITSTATES_INT_H

#include "analysis_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static inline ws_loc_data *data_of(ws_analysis *a, uint32_t loc)
{
    return &a->locs[loc];
}

static inline void add(ws_analysis *a, int metric, uint32_t callpath, uint32_t loc, double v)
{
    ws_cube_add(a->result, metric, callpath, loc, v);
}

/* What a wait record holds besides its pattern, location, call path and value. */
typedef struct wait_instance {
    double start;        /* the waiting interval */
    double end;
    uint32_t event;      /* see ws_wait_record */
    uint32_t partner;
    uint8_t wrong_order;
} wait_instance;

/* Adds the waiting time `wait` of a pattern to the cube at (its metric,
 * callpath, loc) and, with the option wait_records, records the instance
 * when it is one: a positive value that the cube received. */
int ws_add_wait(ws_analysis *a, int pattern, uint32_t callpath, uint32_t loc, double wait, const wait_instance *w,
                ws_error *err);

/* The point-to-point handlers of pass `pass` (1 to 3, with begin and end)
 * and the collective handlers of pass 1 (with the cache size), set in `h`. */
void ws_waitstates_p2p_handlers(int pass, ws_handler *h);
void ws_waitstates_coll_handlers(ws_handler *h);

#endif
