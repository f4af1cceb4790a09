/* Parsing of the per-rank definition files (rawtrace.h). */
#define _GNU_SOURCE
#include "rankfiles.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rawtrace.h"

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

static int add_team_set(ws_rankfile *r, const char *list, ws_error *err)
{
    uint32_t n = 1;
    for (const char *p = list; *p; p++)
        n += *p == ',';
    GROW(r->team_start, r->n_team_sets);
    GROW(r->team_size, r->n_team_sets);
    uint32_t *g = realloc(r->team_slots, (r->n_team_slots + n) * sizeof *g);
    if (!g)
        return ws_error_nomem(err, "definitions");
    r->team_slots = g;
    parse_list(list, g + r->n_team_slots, n);
    for (uint32_t i = 0; i < n; i++)
        if (g[r->n_team_slots + i] > r->n_threads)
            return ws_error_set(err, WS_ERR_FORMAT, "%s: a thread team names a thread the process did not have",
                                r->defs ? r->defs : "definitions");
    r->team_start[r->n_team_sets] = r->n_team_slots;
    r->team_size[r->n_team_sets++] = n;
    r->n_team_slots += n;
    return WS_OK;
}

static int set_thread_first(ws_rankfile *r, uint32_t k, uint32_t index, ws_error *err)
{
    if (!r->thread_first) {
        r->thread_first = malloc((r->n_threads ? r->n_threads : 1) * sizeof *r->thread_first);
        if (!r->thread_first)
            return ws_error_nomem(err, "definitions");
        for (uint32_t i = 0; i < r->n_threads; i++)
            r->thread_first[i] = UINT32_MAX;
    }
    for (uint32_t i = 0; i < r->n_threads; i++)
        if (r->threads[i] == k)
            r->thread_first[i] = index;
    return WS_OK;
}

static int read_stream(ws_rankfile *r, FILE *f, ws_error *err)
{
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
        } else if (strcmp(x[0], "threadfirst") == 0 && n >= 3) {
            rc = set_thread_first(r, (uint32_t)strtoul(x[1], NULL, 10), (uint32_t)strtoul(x[2], NULL, 10), err);
        } else if (strcmp(x[0], "teamset") == 0 && n >= 2) {
            rc = add_team_set(r, x[1], err);
        } else if (strcmp(x[0], "command") == 0 && n >= 2) {
            free(r->command);
            if (!(r->command = strdup(x[1])))
                rc = ws_error_nomem(err, "definitions");
        } else if (strcmp(x[0], "option") == 0 && n >= 3) {
            size_t old = r->options ? strlen(r->options) : 0, add = strlen(x[1]) + strlen(x[2]) + 2;
            char *g = realloc(r->options, old + add + 1);
            if (!g)
                return ws_error_nomem(err, "definitions");
            snprintf(g + old, add + 1, "%s=%s\n", x[1], x[2]);
            r->options = g;
        } else if (strcmp(x[0], "mpi") == 0 && n >= 2) {
            snprintf(r->mpi, sizeof r->mpi, "%s", x[1]);
        } else if (strcmp(x[0], "date") == 0 && n >= 2) {
            snprintf(r->date, sizeof r->date, "%s", x[1]);
        } else if (strcmp(x[0], "teams") == 0) {
            r->team_known = 1;
            rc = set_thread_first(r, UINT32_MAX, UINT32_MAX, err);
        }
        if (rc != WS_OK)
            break;
    }
    free(line);
    if (rc == WS_OK && r->rank < 0)
        rc = ws_error_set(err, WS_ERR_FORMAT, "%s: no rank line: not a waitscope per-rank definition file", r->defs);
    return rc;
}

int ws_rankfile_read(ws_rankfile *r, ws_error *err)
{
    FILE *f = fopen(r->defs, "r");
    if (!f)
        return ws_error_set(err, WS_ERR_IO, "%s: cannot read: %s", r->defs, strerror(errno));
    int rc = read_stream(r, f, err);
    fclose(f);
    return rc;
}

int ws_rankfile_parse(ws_rankfile *r, const char *text, size_t len, ws_error *err)
{
    if (len == 0)
        return ws_error_set(err, WS_ERR_FORMAT, "%s: empty definitions", r->defs ? r->defs : "a process's");
    FILE *f = fmemopen((void *)text, len, "r");
    if (!f)
        return ws_error_nomem(err, "definitions");
    int rc = read_stream(r, f, err);
    fclose(f);
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
    free(r->thread_first);
    free(r->command);
    free(r->options);
    free(r->team_start);
    free(r->team_size);
    free(r->team_slots);
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


double ws_rankfile_first_time(const ws_rankfile *r)
{
    FILE *f = r->evt ? fopen(r->evt, "rb") : NULL;
    double t = INFINITY;
    ws_raw_event e;
    if (f && fread(&e, sizeof e, 1, f) == 1)
        t = ws_rankfile_global_time(r, e.time);
    if (f)
        fclose(f);
    return t;
}
