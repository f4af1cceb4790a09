/* The wait-state profile of seed 003 (003_2d6b9c36e94631c5.txt): per
 * (call path, MPI function, message-size class floor(log2 bytes), root or
 * not) a count, the summed and the minimum duration.  Nothing is stored
 * per event, so memory depends on the number of distinct keys only.  At
 * MPI_Finalize rank 0 gathers every rank's table (PMPI), takes the MIN of
 * each collective entry's minima over all ranks and writes
 * DIR/profile.json (format in docs/measuring.md). */
#define _GNU_SOURCE
#include "pmpi.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define EMPTY UINT32_MAX

int ws_profiler_setup(ws_profiler *p, const char *dir)
{
    memset(p, 0, sizeof *p);
    p->dir = strdup(dir);
    p->cap = 256;
    p->slots = malloc(p->cap * sizeof *p->slots);
    if (!p->dir || !p->slots) {
        free(p->dir);
        free(p->slots);
        memset(p, 0, sizeof *p);
        return -1;
    }
    for (size_t i = 0; i < p->cap; i++)
        p->slots[i].path = EMPTY;
    p->on = 1;
    return 0;
}

static size_t slot_hash(uint32_t path, int fn, int sc, int root)
{
    return (size_t)ws_hash64(((uint64_t)path << 32) ^ ((uint64_t)(fn & 0xffff) << 16) ^
                             ((uint64_t)(sc & 0xff) << 8) ^ (uint64_t)root);
}

static ws_prof_entry *find(ws_prof_entry *slots, size_t cap, uint32_t path, int fn, int sc, int root)
{
    for (size_t i = slot_hash(path, fn, sc, root) & (cap - 1);; i = (i + 1) & (cap - 1)) {
        ws_prof_entry *e = &slots[i];
        if (e->path == EMPTY || (e->path == path && e->fn == fn && e->size_class == sc && e->root == root))
            return e;
    }
}

static int grow(ws_profiler *p)
{
    size_t cap = p->cap * 2;
    ws_prof_entry *slots = malloc(cap * sizeof *slots);
    if (!slots)
        return -1;
    for (size_t i = 0; i < cap; i++)
        slots[i].path = EMPTY;
    for (size_t i = 0; i < p->cap; i++)
        if (p->slots[i].path != EMPTY) {
            const ws_prof_entry *o = &p->slots[i];
            *find(slots, cap, o->path, o->fn, o->size_class, o->root) = *o;
        }
    free(p->slots);
    p->slots = slots;
    p->cap = cap;
    return 0;
}

void ws_profiler_record(ws_profiler *p, uint32_t path, int fn, uint64_t bytes, int has_bytes, int root, double seconds)
{
    if (!p->on || path == EMPTY)
        return;
    int sc = -1;
    if (has_bytes && bytes > 0) {
        sc = 0;
        while (bytes >>= 1)
            sc++;
    }
    ws_prof_entry *e = find(p->slots, p->cap, path, fn, sc, root);
    if (e->path == EMPTY) {
        if (2 * (p->n + 1) > p->cap) {
            if (grow(p) != 0)
                return;
            e = find(p->slots, p->cap, path, fn, sc, root);
        }
        *e = (ws_prof_entry){path, (int16_t)fn, (int8_t)sc, (int8_t)root, 0, 0.0, INFINITY};
        p->n++;
    }
    e->count++;
    e->sum += seconds;
    if (seconds < e->min)
        e->min = seconds;
}

/* The categories a no-wait baseline is measured for at MPI_Finalize
 * (calibrate.c): those the estimates charge Late Sender and Late Receiver
 * with a rank-local minimum, and MPI_Send, whose Late Receiver only the
 * calibrated estimates have. */
static int calibrated_function(int fn)
{
    return fn == WF_RECV || fn == WF_SENDRECV || fn == WF_WAIT || fn == WF_WAITALL || fn == WF_SSEND ||
           fn == WF_SEND;
}

void ws_profiler_partners(ws_profiler *p, int fn, uint64_t bytes, const int *partners, int n)
{
    if (!p->on || !calibrated_function(fn) || bytes == 0)
        return;
    int sc = 0;
    for (uint64_t b = bytes; b >>= 1;)
        sc++;
    ws_cal_need *e = NULL;
    for (size_t i = 0; i < p->n_needs && !e; i++)
        if (p->needs[i].fn == fn && p->needs[i].size_class == sc)
            e = &p->needs[i];
    if (!e) {
        if (ws_grow((void **)&p->needs, &p->cap_needs, p->n_needs + 1, sizeof *p->needs) != 0)
            return;
        e = &p->needs[p->n_needs++];
        memset(e, 0, sizeof *e);
        e->fn = (int16_t)fn;
        e->size_class = (int8_t)sc;
    }
    e->bytes += (double)bytes;
    e->count++;
    for (int k = 0; k < n; k++) {
        int known = 0;
        for (int j = 0; j < e->n_partners && !known; j++)
            known = e->partner[j] == partners[k];
        if (!known && e->n_partners < WS_CAL_PARTNERS)
            e->partner[e->n_partners++] = partners[k];
    }
}

/* ---- finalisation ---------------------------------------------------------- */

typedef struct rec {
    char *path;  /* call path text */
    const char *fn;
    int sc, root, rank;
    unsigned long long count;
    double sum, min;
} rec;

/* a calibrated category of one rank */
typedef struct cal {
    const char *fn;
    int sc, rank;
    unsigned long long count;
    double min, median, max;
} cal;

static int cal_order(const void *a, const void *b)
{
    const cal *x = a, *y = b;
    int c = strcmp(x->fn, y->fn);
    if (c)
        return c;
    if (x->sc != y->sc)
        return x->sc < y->sc ? -1 : 1;
    return x->rank - y->rank;
}

static int rec_order(const void *a, const void *b)
{
    const rec *x = a, *y = b;
    int c = strcmp(x->path, y->path);
    if (c)
        return c;
    if ((c = strcmp(x->fn, y->fn)))
        return c;
    if (x->sc != y->sc)
        return x->sc < y->sc ? -1 : 1;
    if (x->root != y->root)
        return x->root - y->root;
    return x->rank - y->rank;
}

static int str_order(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            fprintf(f, "\\%c", ch);
        else if (ch < 0x20)
            fprintf(f, "\\u%04x", ch);
        else
            fputc(ch, f);
    }
    fputc('"', f);
}

static void json_number(FILE *f, double v)
{
    if (isfinite(v))
        fprintf(f, "%.9g", v);
    else
        fputs("null", f);
}

static int collective_name(const char *fn)
{
    for (int i = 0; i < WF_COUNT; i++)
        if (strcmp(ws_fn_name(i), fn) == 0)
            return ws_fn_is_collective(i);
    return 0;
}

/* The calibration's entries: per (function, size class) one value per
 * rank (count 0 and nulls where a rank measured none). */
static void write_calibration(FILE *out, const cal *cals, size_t n, int size)
{
    static const char *const fields[] = {"min", "median", "max"};
    for (size_t i = 0; i < n;) {
        size_t j = i + 1;
        while (j < n && strcmp(cals[j].fn, cals[i].fn) == 0 && cals[j].sc == cals[i].sc)
            j++;
        fprintf(out, "%s\n    {\"function\": ", i ? "," : "");
        json_string(out, cals[i].fn);
        fprintf(out, ", \"size_class\": %d, \"samples\": [", cals[i].sc);
        for (int r = 0, k = (int)i; r < size; r++) {
            int here = k < (int)j && cals[k].rank == r;
            fprintf(out, "%s%llu", r ? ", " : "", here ? cals[k].count : 0ULL);
            k += here;
        }
        for (int fld = 0; fld < 3; fld++) {
            fprintf(out, "],\n     \"%s\": [", fields[fld]);
            for (int r = 0, k = (int)i; r < size; r++) {
                int here = k < (int)j && cals[k].rank == r && cals[k].count > 0;
                fputs(r ? ", " : "", out);
                if (here)
                    json_number(out, fld == 0 ? cals[k].min : fld == 1 ? cals[k].median : cals[k].max);
                else
                    fputs("null", out);
                k += k < (int)j && cals[k].rank == r;
            }
        }
        fputs("]}", out);
        i = j;
    }
}

/* Rank 0: merges all ranks' tables and writes profile.json. */
static void write_profile(const char *dir, char *all, const int *lens, int size, const char *command)
{
    /* parse: first line "times\t<exec>\t<mpi>", then one line per entry */
    double *exec = calloc((size_t)size, sizeof *exec), *mpi = calloc((size_t)size, sizeof *mpi);
    size_t n_recs = 0, cap = 64, n_cals = 0, cap_cals = 0;
    rec *recs = malloc(cap * sizeof *recs);
    cal *cals = NULL;
    if (!exec || !mpi || !recs)
        goto out;
    char *p = all;
    for (int r = 0; r < size; r++) {
        char *end = p + lens[r];
        while (p < end) {
            char *nl = memchr(p, '\n', (size_t)(end - p));
            if (!nl)
                break;
            *nl = '\0';
            char *f[8];
            int nf = 0;
            for (char *q = p; nf < 8;) {
                f[nf++] = q;
                char *tab = strchr(q, '\t');
                if (!tab)
                    break;
                *tab = '\0';
                q = tab + 1;
            }
            if (nf == 3 && strcmp(f[0], "times") == 0) {
                exec[r] = strtod(f[1], NULL);
                mpi[r] = strtod(f[2], NULL);
            } else if (nf == 7 && strcmp(f[0], "cal") == 0) {
                if (ws_grow((void **)&cals, &cap_cals, n_cals + 1, sizeof *cals) != 0)
                    goto out;
                cals[n_cals++] = (cal){f[1], atoi(f[2]), r, strtoull(f[3], NULL, 10), strtod(f[4], NULL),
                                       strtod(f[5], NULL), strtod(f[6], NULL)};
            } else if (nf == 7) {
                if (n_recs == cap) {
                    rec *g = realloc(recs, 2 * cap * sizeof *g);
                    if (!g)
                        goto out;
                    recs = g;
                    cap *= 2;
                }
                recs[n_recs++] = (rec){f[0], f[1], atoi(f[2]), atoi(f[3]), r, strtoull(f[4], NULL, 10),
                                       strtod(f[5], NULL), strtod(f[6], NULL)};
            }
            p = nl + 1;
        }
        p = end;
    }
    qsort(recs, n_recs, sizeof *recs, rec_order);
    if (n_cals)
        qsort(cals, n_cals, sizeof *cals, cal_order);

    /* call paths: every entry's path and its prefixes */
    size_t n_paths = 0, cap_paths = 2 * n_recs + 1;
    char **paths = malloc(cap_paths * 8 * sizeof *paths);
    if (!paths)
        goto out;
    for (size_t i = 0; i < n_recs; i++) {
        if (i && strcmp(recs[i].path, recs[i - 1].path) == 0)
            continue;
        for (char *s = recs[i].path;; s++) {
            if (*s == '/' || *s == '\0') {
                if (n_paths == cap_paths * 8)
                    break;
                paths[n_paths++] = strndup(recs[i].path, (size_t)(s - recs[i].path));
            }
            if (!*s)
                break;
        }
    }
    qsort(paths, n_paths, sizeof *paths, str_order);
    size_t u = 0;
    for (size_t i = 0; i < n_paths; i++) {
        if (u && strcmp(paths[u - 1], paths[i]) == 0) {
            free(paths[i]);
            continue;
        }
        paths[u++] = paths[i];
    }
    n_paths = u;

    char file[4200];
    snprintf(file, sizeof file, "%s/profile.json.tmp", dir);
    FILE *out = fopen(file, "w");
    if (!out) {
        /* a preloaded library has no caller to return the error to */
        fprintf(stderr, "waitscope: cannot write the profile %s: %s\n", file, strerror(errno));
        for (size_t i = 0; i < n_paths; i++)
            free(paths[i]);
        free(paths);
        goto out;
    }
    char version[MPI_MAX_LIBRARY_VERSION_STRING] = "";
    int vlen = 0;
    PMPI_Get_library_version(version, &vlen);
    char *nl = strchr(version, '\n');
    if (nl)
        *nl = '\0';
    fprintf(out, "{\n  \"format\": \"waitscope-profile\",\n  \"version\": 1,\n  \"mpi\": ");
    json_string(out, version);
    fprintf(out, ",\n  \"command\": ");
    json_string(out, command ? command : "");
    fprintf(out, ",\n  \"ranks\": %d,\n  \"callpaths\": [", size);
    for (size_t i = 0; i < n_paths; i++) {
        fputs(i ? ",\n    " : "\n    ", out);
        json_string(out, paths[i]);
    }
    fprintf(out, "\n  ],\n  \"execution_time\": [");
    for (int r = 0; r < size; r++) {
        fputs(r ? ", " : "", out);
        json_number(out, exec[r]);
    }
    fprintf(out, "],\n  \"mpi_time\": [");
    for (int r = 0; r < size; r++) {
        fputs(r ? ", " : "", out);
        json_number(out, mpi[r]);
    }
    fprintf(out, "],\n  \"entries\": [");
    int first = 1;
    for (size_t i = 0; i < n_recs;) {
        size_t j = i + 1;
        while (j < n_recs && strcmp(recs[j].path, recs[i].path) == 0 && strcmp(recs[j].fn, recs[i].fn) == 0 &&
               recs[j].sc == recs[i].sc && recs[j].root == recs[i].root)
            j++;
        char **hit = bsearch(&recs[i].path, paths, n_paths, sizeof *paths, str_order);
        int coll = collective_name(recs[i].fn);
        fprintf(out, "%s\n    {\"callpath\": %ld, \"function\": ", first ? "" : ",", hit ? (long)(hit - paths) : -1L);
        first = 0;
        json_string(out, recs[i].fn);
        fprintf(out, ", \"size_class\": %d, \"root\": %s, \"collective\": %s,\n     \"count\": [", recs[i].sc,
                recs[i].root ? "true" : "false", coll ? "true" : "false");
        double gmin = INFINITY;
        for (int r = 0, k = (int)i; r < size; r++) {
            int here = k < (int)j && recs[k].rank == r;
            fprintf(out, "%s%llu", r ? ", " : "", here ? recs[k].count : 0ULL);
            if (here)
                k++;
        }
        fprintf(out, "],\n     \"sum\": [");
        for (int r = 0, k = (int)i; r < size; r++) {
            int here = k < (int)j && recs[k].rank == r;
            fputs(r ? ", " : "", out);
            json_number(out, here ? recs[k].sum : 0.0);
            if (here)
                k++;
        }
        fprintf(out, "],\n     \"min\": [");
        for (int r = 0, k = (int)i; r < size; r++) {
            int here = k < (int)j && recs[k].rank == r;
            fputs(r ? ", " : "", out);
            if (here) {
                json_number(out, recs[k].min);
                if (recs[k].min < gmin)
                    gmin = recs[k].min;
                k++;
            } else {
                fputs("null", out);
            }
        }
        fprintf(out, "],\n     \"global_min\": ");
        if (coll)
            json_number(out, gmin);
        else
            fputs("null", out);
        fputs("}", out);
        i = j;
    }
    fprintf(out, "\n  ],\n  \"calibration\": [");
    write_calibration(out, cals, n_cals, size);
    fprintf(out, "\n  ]\n}\n");
    fclose(out);
    char final[4200];
    snprintf(final, sizeof final, "%s/profile.json", dir);
    rename(file, final);
    for (size_t i = 0; i < n_paths; i++)
        free(paths[i]);
    free(paths);
out:
    free(exec);
    free(mpi);
    free(recs);
    free(cals);
}

void ws_profiler_finalize(ws_profiler *p, const ws_callpaths_rt *c, int rank, int size, double exec_time,
                          double mpi_time, const char *command)
{
    if (!p->on)
        return;
    ws_buffer text;
    ws_buffer_init(&text);
    char line[256];
    int n = snprintf(line, sizeof line, "times\t%.17g\t%.17g\n", exec_time, mpi_time);
    ws_buffer_append(&text, line, (size_t)n);
    for (size_t i = 0; i < p->cap; i++) {
        const ws_prof_entry *e = &p->slots[i];
        if (e->path == EMPTY)
            continue;
        char *path = ws_callpath_text(c, e->path);
        if (!path)
            continue;
        ws_buffer_append(&text, path, strlen(path));
        n = snprintf(line, sizeof line, "\t%s\t%d\t%d\t%llu\t%.17g\t%.17g\n", ws_fn_name(e->fn), e->size_class,
                     e->root, (unsigned long long)e->count, e->sum, e->min);
        ws_buffer_append(&text, line, (size_t)n);
        free(path);
    }
    for (size_t i = 0; i < p->n_needs; i++) {
        const ws_cal_need *e = &p->needs[i];
        if (!e->n_samples)
            continue;
        n = snprintf(line, sizeof line, "cal\t%s\t%d\t%u\t%.17g\t%.17g\t%.17g\n", ws_fn_name(e->fn),
                     e->size_class, e->n_samples, e->min, e->median, e->max);
        ws_buffer_append(&text, line, (size_t)n);
    }
    int len = (int)text.size;
    int *lens = NULL, *displs = NULL;
    char *all = NULL;
    if (rank == 0) {
        lens = calloc((size_t)size, sizeof *lens);
        displs = calloc((size_t)size, sizeof *displs);
    }
    PMPI_Gather(&len, 1, MPI_INT, lens, 1, MPI_INT, 0, MPI_COMM_WORLD);
    size_t total = 0;
    if (rank == 0 && lens && displs) {
        for (int r = 0; r < size; r++) {
            displs[r] = (int)total;
            total += (size_t)lens[r];
        }
        all = malloc(total + 1);
    }
    PMPI_Gatherv(text.data ? (void *)text.data : (void *)"", len, MPI_CHAR, all, lens, displs, MPI_CHAR, 0,
                 MPI_COMM_WORLD);
    if (rank == 0 && all) {
        ws_mkdir_p(p->dir);
        all[total] = '\0';
        write_profile(p->dir, all, lens, size, command);
    }
    free(all);
    free(lens);
    free(displs);
    ws_buffer_free(&text);
    free(p->slots);
    free(p->needs);
    free(p->dir);
    memset(p, 0, sizeof *p);
}
