/* Wrappers of the MPI calls recorded as plain MPI regions (the list and
 * its rationale are in plain_regions.h): Enter, the PMPI call, Leave.
 * MPI_Request_free is written out because it must also forget a request
 * the library tracks (its handle may be handed out again). */
#include "pmpi.h"

#define PASS_THROUGH WS_PASS_THROUGH

#define WS_PLAIN_WRAPPER(NAME, ROLE, PARAMS, ARGS)                                                                  \
    WS_EXPORT int MPI_##NAME PARAMS                                                                                  \
    {                                                                                                                \
        if (PASS_THROUGH)                                                                                            \
            return PMPI_##NAME ARGS;                                                                                 \
        ws_call_begin(WF_##NAME);                                                                                    \
        int rc = PMPI_##NAME ARGS;                                                                                   \
        ws_call_end(WF_##NAME, ws_now(), 0, 0, 0);                                                                   \
        return rc;                                                                                                   \
    }

WS_PLAIN_REGIONS(WS_PLAIN_WRAPPER)

WS_EXPORT int MPI_Request_free(MPI_Request *request)
{
    if (PASS_THROUGH)
        return PMPI_Request_free(request);
    ws_call_begin(WF_Request_free);
    ws_request_forget(*request);
    int rc = PMPI_Request_free(request);
    ws_call_end(WF_Request_free, ws_now(), 0, 0, 0);
    return rc;
}
