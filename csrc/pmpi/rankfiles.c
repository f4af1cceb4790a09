/* Parsing of the per-rank definition files (rawtrace.h). */
#define _GNU_SOURCE
#include "rankfiles.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *ws_rank_path(const char *a, const char *b)
{
    char *p = NULL;
    if (asprintf(&p, "%s/%s", a, b) < 0)
        return NULL;
    return p;
}

static int split_tabs(char *line, char **f, int max)
{
    int n = 0;
    char *p = line;
    while (n < max) {
        f[n++] = p;
        char *t = strchr(p, '\t');
        if (!t)
            break;
        *t = '\0';
        p = t + 1;
    }
    return n;
}

static void parse_list(const char *s, uint32_t *out, uint32_t max)
{
    for (uint32_t i = 0; i < max && *s; i++) {
        out[i] = (uint32_t)strtoul(s, (char **)&s, 10);
        if (*s == ',')
            s++;
    }
}

#define GROW(arr, n)                                                                 \
    do {                                                                             \
        void *g__ = realloc((arr), ((n) + 1) * sizeof *(arr));                       \
        if (!g__)                                                                    \
            return ws_error_nomem(err, "definitions");                               \
        (arr) = g__;                                                                 \
    } while (0)

int ws_rankfile_read(ws_rankfile *r, ws_error *err)
{
    FILE *f = fopen(r->defs, "r");
    if (!f)
        return ws_error_set(err, WS_ERR_IO, "%s: cannot read: %s", r->defs, strerror(errno));
    r->rank = -1;
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    int rc = WS_OK;
    while ((len = getline(&line, &cap, f)) > 0) {
        if (line[len - 1] != '\n')
            break; /* torn last line of a dying rank */
        line[len - 1] = '\0';
        char *x[8];
        int n = split_tabs(line, x, 8);
        if (strcmp(x[0], "rank") == 0 && n >= 5) {
            r->rank = atoi(x[1]);
            r->size = atoi(x[2]);
            snprintf(r->host, sizeof r->host, "%s", x[4]);
        } else if (strcmp(x[0], "region") == 0 && n >= 5) {
            GROW(r->regions, r->n_regions);
            ws_local_region *g = &r->regions[r->n_regions++];
            g->id = (uint32_t)strtoul(x[1], NULL, 10);
            g->kind = strdup(x[2]);
            g->name = strdup(x[3]);
            g->canonical = strdup(x[4]);
            if (!g->kind || !g->name || !g->canonical) {
                rc = ws_error_nomem(err, "definitions");
                break;
            }
        } else if (strcmp(x[0], "comm") == 0 && n >= 6) {
            GROW(r->comms, r->n_comms);
            ws_local_comm *c = &r->comms[r->n_comms++];
            c->id = (uint32_t)strtoul(x[1], NULL, 10);
            c->key = strdup(x[2]);
            c->name = strdup(x[3]);
            c->size = (uint32_t)strtoul(x[4], NULL, 10);
            c->members = strdup(x[5]);
            c->parent = n >= 7 ? (uint32_t)strtoul(x[6], NULL, 10) : UINT32_MAX;
            if (!c->key || !c->name || !c->members) {
                rc = ws_error_nomem(err, "definitions");
                break;
            }
        } else if (strcmp(x[0], "cart") == 0 && n >= 7) {
            GROW(r->carts, r->n_carts);
            ws_local_cart *k = &r->carts[r->n_carts++];
            memset(k, 0, sizeof *k);
            k->comm = (uint32_t)strtoul(x[1], NULL, 10);
            k->ndims = (uint32_t)strtoul(x[2], NULL, 10);
            if (k->ndims > 16)
                k->ndims = 16;
            parse_list(x[3], k->dims, k->ndims);
            parse_list(x[4], k->periods, k->ndims);
            k->rank = (uint32_t)strtoul(x[5], NULL, 10);
            parse_list(x[6], k->coords, k->ndims);
        } else if (strcmp(x[0], "clock") == 0 && n >= 3) {
            uint32_t i = r->n_clocks < 2 ? r->n_clocks++ : 1;
            r->clock_local[i] = strtoull(x[1], NULL, 10);
            r->clock_offset[i] = strtoll(x[2], NULL, 10);
        } else if (strcmp(x[0], "end") == 0) {
            r->complete = 1;
        } else if (strcmp(x[0], "thread") == 0 && n >= 2) {
            GROW(r->threads, r->n_threads);
            r->threads[r->n_threads++] = (uint32_t)strtoul(x[1], NULL, 10);
        } else if (strcmp(x[0], "ompregion") == 0 && n >= 4) {
            unsigned long i = strtoul(x[1], NULL, 10);
            if (i >= 1u << 24)
                continue; /* not the library's */
            if (i >= r->n_omp_regions) {
                ws_local_omp_region *g = realloc(r->omp_regions, (i + 1) * sizeof *g);
                if (!g)
                    return ws_error_nomem(err, "definitions");
                for (size_t k = r->n_omp_regions; k <= i; k++)
                    g[k] = (ws_local_omp_region){-1, NULL, 0};
                r->omp_regions = g;
                r->n_omp_regions = (uint32_t)i + 1;
            }
            ws_local_omp_region *g = &r->omp_regions[i];
            char *name = strdup(x[3]);
            if (!name) {
                rc = ws_error_nomem(err, "definitions");
                break;
            }
            free(g->name);
            g->name = name;
            g->role = atoi(x[2]);
        } else if ((strcmp(x[0], "openmp") == 0 || strcmp(x[0], "openmp-none") == 0 ||
                    strcmp(x[0], "openmp-off") == 0) &&
                   n >= 2) {
            r->openmp = x[0][6] == '\0' ? WS_RANK_OPENMP_RECORDED
                        : x[0][7] == 'n'  ? WS_RANK_OPENMP_NO_TOOL
                                          : WS_RANK_OPENMP_OFF;
            snprintf(r->openmp_text, sizeof r->openmp_text, "%s", x[1]);
        }
    }
    free(line);
    fclose(f);
    if (rc == WS_OK && r->rank < 0)
        rc = ws_error_set(err, WS_ERR_FORMAT, "%s: no rank line: not a waitscope per-rank definition file", r->defs);
    return rc;
}

void ws_rankfile_free(ws_rankfile *r)
{
    for (uint32_t i = 0; i < r->n_regions; i++) {
        free(r->regions[i].kind);
        free(r->regions[i].name);
        free(r->regions[i].canonical);
    }
    for (uint32_t i = 0; i < r->n_comms; i++) {
        free(r->comms[i].key);
        free(r->comms[i].name);
        free(r->comms[i].members);
    }
    for (uint32_t i = 0; i < r->n_omp_regions; i++)
        free(r->omp_regions[i].name);
    free(r->omp_regions);
    free(r->threads);
    free(r->regions);
    free(r->comms);
    free(r->carts);
    free(r->region_map);
    free(r->defs);
    free(r->evt);
}

char *ws_rank_thread_path(const ws_rankfile *r, uint32_t k)
{
    size_t n = r->defs ? strlen(r->defs) : 0;
    char *p = NULL;
    if (n < 5 || asprintf(&p, "%.*s.t%u.evt", (int)(n - 5), r->defs, (unsigned)k) < 0)
        return NULL;
    return p;
}

/* global time (ns, rank 0's clock) of a local timestamp */
double ws_rankfile_global_time(const ws_rankfile *r, uint64_t local)
{
    if (r->n_clocks == 0)
        return (double)local;
    if (r->n_clocks == 1 || r->clock_local[1] == r->clock_local[0])
        return (double)local + (double)r->clock_offset[0];
    double f = ((double)local - (double)r->clock_local[0]) / ((double)r->clock_local[1] - (double)r->clock_local[0]);
    return (double)local + (double)r->clock_offset[0] + f * (double)(r->clock_offset[1] - r->clock_offset[0]);
}

