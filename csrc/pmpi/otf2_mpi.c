/* OTF2's collective operations over MPI, so that the ranks of a traced run
 * write one archive together (unify_mpi.c), as Score-P's ranks do.  Every
 * call goes to the PMPI entry points: the measurement has ended when they
 * run, and the program's own MPI calls are never mixed with them (the
 * communicator is the library's private one). */
#include "otf2_mpi.h"

#include <stdlib.h>

struct OTF2_CollectiveContext {
    MPI_Comm comm;
};

static MPI_Datatype mpi_type(OTF2_Type type)
{
    switch (type) {
    case OTF2_TYPE_UINT8:
        return MPI_UINT8_T;
    case OTF2_TYPE_INT8:
        return MPI_INT8_T;
    case OTF2_TYPE_UINT16:
        return MPI_UINT16_T;
    case OTF2_TYPE_INT16:
        return MPI_INT16_T;
    case OTF2_TYPE_UINT32:
        return MPI_UINT32_T;
    case OTF2_TYPE_INT32:
        return MPI_INT32_T;
    case OTF2_TYPE_UINT64:
        return MPI_UINT64_T;
    case OTF2_TYPE_INT64:
        return MPI_INT64_T;
    case OTF2_TYPE_FLOAT:
        return MPI_FLOAT;
    case OTF2_TYPE_DOUBLE:
        return MPI_DOUBLE;
    default:
        return MPI_DATATYPE_NULL;
    }
}

#define RESULT(call) ((call) == MPI_SUCCESS ? OTF2_CALLBACK_SUCCESS : OTF2_CALLBACK_ERROR)
#define TYPE_OR_FAIL(var, type)                                                \
    MPI_Datatype var = mpi_type(type);                                         \
    if (var == MPI_DATATYPE_NULL)                                              \
        return OTF2_CALLBACK_ERROR

static OTF2_CallbackCode get_size(void *data, OTF2_CollectiveContext *c, uint32_t *size)
{
    (void)data;
    int n = 1;
    if (c && PMPI_Comm_size(c->comm, &n) != MPI_SUCCESS)
        return OTF2_CALLBACK_ERROR;
    *size = (uint32_t)n;
    return OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode get_rank(void *data, OTF2_CollectiveContext *c, uint32_t *rank)
{
    (void)data;
    int r = 0;
    if (c && PMPI_Comm_rank(c->comm, &r) != MPI_SUCCESS)
        return OTF2_CALLBACK_ERROR;
    *rank = (uint32_t)r;
    return OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode create_local(void *data, OTF2_CollectiveContext **local, OTF2_CollectiveContext *global,
                                      uint32_t global_rank, uint32_t global_size, uint32_t local_rank,
                                      uint32_t local_size, uint32_t file_number, uint32_t n_files)
{
    (void)data;
    (void)global_size;
    (void)local_rank;
    (void)local_size;
    (void)n_files;
    OTF2_CollectiveContext *c = malloc(sizeof *c);
    if (!c)
        return OTF2_CALLBACK_ERROR;
    if (PMPI_Comm_split(global->comm, (int)file_number, (int)global_rank, &c->comm) != MPI_SUCCESS) {
        free(c);
        return OTF2_CALLBACK_ERROR;
    }
    *local = c;
    return OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode free_local(void *data, OTF2_CollectiveContext *local)
{
    (void)data;
    if (!local)
        return OTF2_CALLBACK_SUCCESS;
    int rc = PMPI_Comm_free(&local->comm);
    free(local);
    return RESULT(rc);
}

static OTF2_CallbackCode barrier(void *data, OTF2_CollectiveContext *c)
{
    (void)data;
    return RESULT(PMPI_Barrier(c->comm));
}

static OTF2_CallbackCode bcast(void *data, OTF2_CollectiveContext *c, void *buf, uint32_t n, OTF2_Type type,
                               uint32_t root)
{
    (void)data;
    TYPE_OR_FAIL(t, type);
    return RESULT(PMPI_Bcast(buf, (int)n, t, (int)root, c->comm));
}

static OTF2_CallbackCode gather(void *data, OTF2_CollectiveContext *c, const void *in, void *out, uint32_t n,
                                OTF2_Type type, uint32_t root)
{
    (void)data;
    TYPE_OR_FAIL(t, type);
    return RESULT(PMPI_Gather((void *)in, (int)n, t, out, (int)n, t, (int)root, c->comm));
}

/* counts and displacements of a v-collective at the root */
static int v_layout(MPI_Comm comm, uint32_t root, const uint32_t *counts, int **cnt, int **displ)
{
    int rank, size;
    *cnt = *displ = NULL;
    if (PMPI_Comm_rank(comm, &rank) != MPI_SUCCESS || PMPI_Comm_size(comm, &size) != MPI_SUCCESS)
        return -1;
    if ((uint32_t)rank != root)
        return 0;
    *cnt = malloc((size_t)size * sizeof **cnt);
    *displ = malloc((size_t)size * sizeof **displ);
    if (!*cnt || !*displ)
        return -1;
    long long at = 0;
    for (int i = 0; i < size; i++) {
        if (at > 0x7fffffff)
            return -1;
        (*cnt)[i] = (int)counts[i];
        (*displ)[i] = (int)at;
        at += counts[i];
    }
    return 0;
}

static OTF2_CallbackCode gatherv(void *data, OTF2_CollectiveContext *c, const void *in, uint32_t n_in, void *out,
                                 const uint32_t *n_out, OTF2_Type type, uint32_t root)
{
    (void)data;
    TYPE_OR_FAIL(t, type);
    int *cnt, *displ, rc = MPI_ERR_OTHER;
    if (v_layout(c->comm, root, n_out, &cnt, &displ) == 0)
        rc = PMPI_Gatherv((void *)in, (int)n_in, t, out, cnt, displ, t, (int)root, c->comm);
    free(cnt);
    free(displ);
    return RESULT(rc);
}

static OTF2_CallbackCode scatter(void *data, OTF2_CollectiveContext *c, const void *in, void *out, uint32_t n,
                                 OTF2_Type type, uint32_t root)
{
    (void)data;
    TYPE_OR_FAIL(t, type);
    return RESULT(PMPI_Scatter((void *)in, (int)n, t, out, (int)n, t, (int)root, c->comm));
}

static OTF2_CallbackCode scatterv(void *data, OTF2_CollectiveContext *c, const void *in, const uint32_t *n_in,
                                  void *out, uint32_t n_out, OTF2_Type type, uint32_t root)
{
    (void)data;
    TYPE_OR_FAIL(t, type);
    int *cnt, *displ, rc = MPI_ERR_OTHER;
    if (v_layout(c->comm, root, n_in, &cnt, &displ) == 0)
        rc = PMPI_Scatterv((void *)in, cnt, displ, t, out, (int)n_out, t, (int)root, c->comm);
    free(cnt);
    free(displ);
    return RESULT(rc);
}

static void release(void *data, OTF2_CollectiveContext *global, OTF2_CollectiveContext *local)
{
    (void)data;
    (void)global;
    (void)local; /* the global context is the caller's, the local one freed by free_local */
}

static const OTF2_CollectiveCallbacks callbacks = {
    .otf2_release = release,
    .otf2_get_size = get_size,
    .otf2_get_rank = get_rank,
    .otf2_create_local_comm = create_local,
    .otf2_free_local_comm = free_local,
    .otf2_barrier = barrier,
    .otf2_bcast = bcast,
    .otf2_gather = gather,
    .otf2_gatherv = gatherv,
    .otf2_scatter = scatter,
    .otf2_scatterv = scatterv,
};

const OTF2_CollectiveCallbacks *ws_otf2_mpi_callbacks(void)
{
    return &callbacks;
}

OTF2_CollectiveContext *ws_otf2_mpi_context(MPI_Comm comm)
{
    OTF2_CollectiveContext *c = malloc(sizeof *c);
    if (c)
        c->comm = comm;
    return c;
}

void ws_otf2_mpi_context_free(OTF2_CollectiveContext *c)
{
    free(c);
}
