/* The names of the OpenMP constructs the OMPT tool recorded (ompt.c), as
 * Score-P gives them: "!$omp parallel @halo.c:63" from the source line of
 * the code address the runtime reported (the call into the runtime the
 * compiler put where the construct is), "@function" where the program
 * has no line information, the lock calls by their function's name.
 * Fortran's loops are "!$omp do". */
#define _GNU_SOURCE
#include "pmpi.h"

#include <otf2/OTF2_Definitions.h>
#include <stdio.h>
#include <string.h>

static const struct {
    const char *prefix;
    int role;
} kinds[WS_OMP_KIND_COUNT] = {
    [WS_OMP_PARALLEL] = {"!$omp parallel", OTF2_REGION_ROLE_PARALLEL},
    [WS_OMP_IBARRIER] = {"!$omp implicit barrier", OTF2_REGION_ROLE_IMPLICIT_BARRIER},
    [WS_OMP_BARRIER] = {"!$omp barrier", OTF2_REGION_ROLE_BARRIER},
    [WS_OMP_CRITICAL] = {"!$omp critical", OTF2_REGION_ROLE_CRITICAL},
    [WS_OMP_CRITICAL_SBLOCK] = {"!$omp critical sblock", OTF2_REGION_ROLE_CRITICAL_SBLOCK},
    [WS_OMP_LOOP] = {"!$omp for", OTF2_REGION_ROLE_LOOP},
    [WS_OMP_SECTIONS] = {"!$omp sections", OTF2_REGION_ROLE_SECTIONS},
    [WS_OMP_SINGLE] = {"!$omp single", OTF2_REGION_ROLE_SINGLE},
    [WS_OMP_MASTER] = {"!$omp master", OTF2_REGION_ROLE_MASTER},
    [WS_OMP_WORKSHARE] = {"!$omp workshare", OTF2_REGION_ROLE_WORKSHARE},
    [WS_OMP_SET_LOCK] = {"omp_set_lock", OTF2_REGION_ROLE_WRAPPER},
    [WS_OMP_UNSET_LOCK] = {"omp_unset_lock", OTF2_REGION_ROLE_WRAPPER},
    [WS_OMP_TEST_LOCK] = {"omp_test_lock", OTF2_REGION_ROLE_WRAPPER},
    [WS_OMP_SET_NEST_LOCK] = {"omp_set_nest_lock", OTF2_REGION_ROLE_WRAPPER},
    [WS_OMP_UNSET_NEST_LOCK] = {"omp_unset_nest_lock", OTF2_REGION_ROLE_WRAPPER},
    [WS_OMP_TEST_NEST_LOCK] = {"omp_test_nest_lock", OTF2_REGION_ROLE_WRAPPER},
};

const char *ws_omp_construct_prefix(int kind)
{
    return kind >= 0 && kind < WS_OMP_KIND_COUNT ? kinds[kind].prefix : "!$omp";
}

int ws_omp_construct_role(int kind)
{
    return kind >= 0 && kind < WS_OMP_KIND_COUNT ? kinds[kind].role : OTF2_REGION_ROLE_UNKNOWN;
}

static int is_fortran_file(const char *file)
{
    static const char *const suffixes[] = {".f", ".F", ".f90", ".F90", ".f95", ".F95", ".f03", ".F03",
                                           ".f08", ".F08", ".for", ".FOR", ".ftn"};
    const char *dot = strrchr(file, '.');
    for (size_t i = 0; dot && i < sizeof suffixes / sizeof suffixes[0]; i++)
        if (strcmp(dot, suffixes[i]) == 0)
            return 1;
    return 0;
}

/* "@file:line", "@function" or "" for the construct at `code` */
static void location(const void *code, char *out, size_t size, int *fortran)
{
    out[0] = '\0';
    *fortran = 0;
    if (!code)
        return;
    /* a return address: the call is the instruction before it */
    const void *call = (const char *)code - 1;
    char file[512], name[512];
    unsigned line = 0;
    uintptr_t start = 0;
    int user = 0, entry = 0;
    if (ws_symbol_source(call, file, sizeof file, &line) == 0) {
        snprintf(out, size, " @%s:%u", file, line);
        *fortran = is_fortran_file(file);
    } else if (ws_symbol_lookup(call, name, sizeof name, &start, &user, &entry) == 0) {
        snprintf(out, size, " @%s", name);
    } else {
        snprintf(out, size, " @%p", code);
    }
}

void ws_omp_name_constructs(ws_omp_rt *o)
{
    pthread_mutex_lock(&o->lock);
    size_t n = o->n_constructs;
    pthread_mutex_unlock(&o->lock);
    for (size_t i = 0; i < n; i++) {
        pthread_mutex_lock(&o->lock);
        ws_omp_construct c = o->constructs[i];
        pthread_mutex_unlock(&o->lock);
        if (!c.code)
            continue;
        char where[640];
        int fortran;
        location(c.code, where, sizeof where, &fortran);
        const char *prefix = c.kind == WS_OMP_LOOP && fortran ? "!$omp do" : ws_omp_construct_prefix(c.kind);
        ws_tracer_def(&ws_pmpi_g.tracer, "ompregion\t%zu\t%d\t%s%s\n", i, ws_omp_construct_role(c.kind), prefix,
                      where);
    }
}
