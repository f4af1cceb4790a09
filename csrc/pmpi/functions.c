/* The MPI functions the interposition library wraps, with the region role
 * Score-P gives each (see a Score-P archive's global definitions). */
#include "pmpi.h"

#include <otf2/OTF2_Definitions.h>

static const struct {
    const char *name;
    int role;
    int collective;
} functions[WF_COUNT] = {
    [WF_INIT] = {"MPI_Init", OTF2_REGION_ROLE_FUNCTION, 0},
    [WF_INIT_THREAD] = {"MPI_Init_thread", OTF2_REGION_ROLE_FUNCTION, 0},
    [WF_FINALIZE] = {"MPI_Finalize", OTF2_REGION_ROLE_FUNCTION, 0},
    [WF_ABORT] = {"MPI_Abort", OTF2_REGION_ROLE_FUNCTION, 0},
    [WF_COMM_DUP] = {"MPI_Comm_dup", OTF2_REGION_ROLE_FUNCTION, 0},
    [WF_COMM_SPLIT] = {"MPI_Comm_split", OTF2_REGION_ROLE_FUNCTION, 0},
    [WF_COMM_CREATE] = {"MPI_Comm_create", OTF2_REGION_ROLE_FUNCTION, 0},
    [WF_COMM_FREE] = {"MPI_Comm_free", OTF2_REGION_ROLE_FUNCTION, 0},
    [WF_CART_CREATE] = {"MPI_Cart_create", OTF2_REGION_ROLE_FUNCTION, 0},
    [WF_COMM_SPLIT_TYPE] = {"MPI_Comm_split_type", OTF2_REGION_ROLE_FUNCTION, 0},
    [WF_CART_SUB] = {"MPI_Cart_sub", OTF2_REGION_ROLE_FUNCTION, 0},
    [WF_COMM_CREATE_GROUP] = {"MPI_Comm_create_group", OTF2_REGION_ROLE_FUNCTION, 0},
    [WF_INTERCOMM_CREATE] = {"MPI_Intercomm_create", OTF2_REGION_ROLE_FUNCTION, 0},
    [WF_INTERCOMM_MERGE] = {"MPI_Intercomm_merge", OTF2_REGION_ROLE_FUNCTION, 0},
    [WF_SEND] = {"MPI_Send", OTF2_REGION_ROLE_POINT2POINT, 0},
    [WF_SSEND] = {"MPI_Ssend", OTF2_REGION_ROLE_POINT2POINT, 0},
    [WF_BSEND] = {"MPI_Bsend", OTF2_REGION_ROLE_POINT2POINT, 0},
    [WF_RSEND] = {"MPI_Rsend", OTF2_REGION_ROLE_POINT2POINT, 0},
    [WF_RECV] = {"MPI_Recv", OTF2_REGION_ROLE_POINT2POINT, 0},
    [WF_SENDRECV] = {"MPI_Sendrecv", OTF2_REGION_ROLE_POINT2POINT, 0},
    [WF_ISEND] = {"MPI_Isend", OTF2_REGION_ROLE_POINT2POINT, 0},
    [WF_ISSEND] = {"MPI_Issend", OTF2_REGION_ROLE_POINT2POINT, 0},
    [WF_IRECV] = {"MPI_Irecv", OTF2_REGION_ROLE_POINT2POINT, 0},
    [WF_PROBE] = {"MPI_Probe", OTF2_REGION_ROLE_POINT2POINT, 0},
    [WF_IPROBE] = {"MPI_Iprobe", OTF2_REGION_ROLE_POINT2POINT, 0},
    [WF_WAIT] = {"MPI_Wait", OTF2_REGION_ROLE_FUNCTION, 0},
    [WF_WAITALL] = {"MPI_Waitall", OTF2_REGION_ROLE_FUNCTION, 0},
    [WF_WAITANY] = {"MPI_Waitany", OTF2_REGION_ROLE_FUNCTION, 0},
    [WF_WAITSOME] = {"MPI_Waitsome", OTF2_REGION_ROLE_FUNCTION, 0},
    [WF_TEST] = {"MPI_Test", OTF2_REGION_ROLE_FUNCTION, 0},
    [WF_TESTALL] = {"MPI_Testall", OTF2_REGION_ROLE_FUNCTION, 0},
    [WF_TESTANY] = {"MPI_Testany", OTF2_REGION_ROLE_FUNCTION, 0},
    [WF_TESTSOME] = {"MPI_Testsome", OTF2_REGION_ROLE_FUNCTION, 0},
    [WF_BARRIER] = {"MPI_Barrier", OTF2_REGION_ROLE_BARRIER, 1},
    [WF_BCAST] = {"MPI_Bcast", OTF2_REGION_ROLE_COLL_ONE2ALL, 1},
    [WF_REDUCE] = {"MPI_Reduce", OTF2_REGION_ROLE_COLL_ALL2ONE, 1},
    [WF_ALLREDUCE] = {"MPI_Allreduce", OTF2_REGION_ROLE_COLL_ALL2ALL, 1},
    [WF_GATHER] = {"MPI_Gather", OTF2_REGION_ROLE_COLL_ALL2ONE, 1},
    [WF_GATHERV] = {"MPI_Gatherv", OTF2_REGION_ROLE_COLL_ALL2ONE, 1},
    [WF_SCATTER] = {"MPI_Scatter", OTF2_REGION_ROLE_COLL_ONE2ALL, 1},
    [WF_SCATTERV] = {"MPI_Scatterv", OTF2_REGION_ROLE_COLL_ONE2ALL, 1},
    [WF_ALLGATHER] = {"MPI_Allgather", OTF2_REGION_ROLE_COLL_ALL2ALL, 1},
    [WF_ALLGATHERV] = {"MPI_Allgatherv", OTF2_REGION_ROLE_COLL_ALL2ALL, 1},
    [WF_ALLTOALL] = {"MPI_Alltoall", OTF2_REGION_ROLE_COLL_ALL2ALL, 1},
    [WF_ALLTOALLV] = {"MPI_Alltoallv", OTF2_REGION_ROLE_COLL_ALL2ALL, 1},
    [WF_REDUCE_SCATTER] = {"MPI_Reduce_scatter", OTF2_REGION_ROLE_COLL_ALL2ALL, 1},
    [WF_SCAN] = {"MPI_Scan", OTF2_REGION_ROLE_COLL_OTHER, 1},
    [WF_EXSCAN] = {"MPI_Exscan", OTF2_REGION_ROLE_COLL_OTHER, 1},
    [WF_Request_free] = {"MPI_Request_free", OTF2_REGION_ROLE_POINT2POINT, 0},
    [WF_MPROBE] = {"MPI_Mprobe", OTF2_REGION_ROLE_POINT2POINT, 0},
    [WF_IMPROBE] = {"MPI_Improbe", OTF2_REGION_ROLE_POINT2POINT, 0},
    [WF_MRECV] = {"MPI_Mrecv", OTF2_REGION_ROLE_POINT2POINT, 0},
    [WF_IMRECV] = {"MPI_Imrecv", OTF2_REGION_ROLE_POINT2POINT, 0},
#define WS_PLAIN_ENTRY(NAME, ROLE, PARAMS, ARGS) [WF_##NAME] = {"MPI_" #NAME, OTF2_REGION_ROLE_##ROLE, 0},
    WS_PLAIN_REGIONS(WS_PLAIN_ENTRY)
#undef WS_PLAIN_ENTRY
};

const char *ws_fn_name(int fn)
{
    return fn >= 0 && fn < WF_COUNT ? functions[fn].name : "MPI_?";
}

int ws_fn_role(int fn)
{
    return fn >= 0 && fn < WF_COUNT ? functions[fn].role : OTF2_REGION_ROLE_FUNCTION;
}

int ws_fn_is_collective(int fn)
{
    return fn >= 0 && fn < WF_COUNT && functions[fn].collective;
}
