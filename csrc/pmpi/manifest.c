/* The manifest of a traced run: DIR/MANIFEST.md says what was recorded,
 * how, with which options, and what the directory holds. */
#define _GNU_SOURCE
#include "manifest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* whether rank r is the first on its host */
static int first_on_host(const ws_rankfile *ranks, uint32_t r)
{
    for (uint32_t q = 0; q < r; q++)
        if (strcmp(ranks[q].host, ranks[r].host) == 0)
            return 0;
    return 1;
}

static void hosts(FILE *f, const ws_rankfile *ranks, uint32_t n)
{
    uint32_t distinct = 0, shown = 0;
    for (uint32_t r = 0; r < n; r++)
        distinct += first_on_host(ranks, r);
    fprintf(f, "- ranks: %u on %u host%s (", (unsigned)n, (unsigned)distinct, distinct == 1 ? "" : "s");
    for (uint32_t r = 0; r < n && shown < 8; r++)
        if (first_on_host(ranks, r))
            fprintf(f, "%s%s", shown++ ? ", " : "", ranks[r].host[0] ? ranks[r].host : "?");
    fprintf(f, "%s)\n", distinct > shown ? ", ..." : "");
}

int ws_manifest_write(const char *dir, const ws_trace *t, const ws_rankfile *ranks, uint32_t n,
                      const uint64_t *events, const char *how, ws_error *err)
{
    char *path = NULL, *tmp = NULL;
    if (asprintf(&path, "%s/MANIFEST.md", dir) < 0 || asprintf(&tmp, "%s/.MANIFEST.md.tmp", dir) < 0) {
        free(path);
        return ws_error_nomem(err, "path");
    }
    FILE *f = fopen(tmp, "w");
    if (!f) {
        int rc = ws_error_set(err, WS_ERR_IO, "%s: cannot write", tmp);
        free(path);
        free(tmp);
        return rc;
    }
    const ws_rankfile *r0 = n ? &ranks[0] : NULL;
    uint64_t total = 0, lo = UINT64_MAX, hi = 0;
    uint32_t threads = 0;
    for (uint32_t i = 0; i < t->n_locations; i++) {
        total += events[i];
        if (t->locations[i].rank != WS_NONE32) {
            lo = events[i] < lo ? events[i] : lo;
            hi = events[i] > hi ? events[i] : hi;
        } else {
            threads++;
        }
    }
    fprintf(f, "# waitscope trace\n\n");
    fprintf(f, "Recorded by waitscope's MPI interposition library; the trace is the OTF2 archive `traces.otf2`.\n\n");
    fprintf(f, "- command: `%s`\n", r0 && r0->command ? r0->command : "?");
    if (r0 && r0->date[0])
        fprintf(f, "- started: %s\n", r0->date);
    if (r0 && r0->mpi[0])
        fprintf(f, "- MPI: %s\n", r0->mpi);
    hosts(f, ranks, n);
    if (threads)
        fprintf(f, "- OpenMP threads besides the ranks' MPI threads: %u\n", (unsigned)threads);
    if (t->openmp_recording)
        fprintf(f, "- OpenMP: %s\n", t->openmp_recording);
    fprintf(f, "- events: %llu (%llu to %llu on a rank's MPI thread)\n", (unsigned long long)total,
            (unsigned long long)(lo == UINT64_MAX ? 0 : lo), (unsigned long long)hi);
    if (t->cut_short_ranks)
        fprintf(f, "- cut short: ranks %s did not reach MPI_Finalize; their events end where they stopped\n",
                t->cut_short_ranks);
    else
        fprintf(f, "- every rank reached MPI_Finalize\n");
    fprintf(f, "- archive: %s\n", how);
    fprintf(f, "- options:%s", r0 && r0->options ? "\n" : " none (defaults)\n");
    for (const char *o = r0 ? r0->options : NULL; o && *o;) {
        const char *end = strchr(o, '\n');
        int len = end ? (int)(end - o) : (int)strlen(o);
        fprintf(f, "  - `%.*s`\n", len, o);
        o = end ? end + 1 : o + len;
    }
    fprintf(f, "\n## Files\n\n"
               "- `traces.otf2`, `traces.def`, `traces/`: the OTF2 archive (one event file and one local "
               "definition file per location): `waitscope analyze`, `waitscope.open`, `otf2-print`, Scalasca, "
               "Vampir\n"
               "- `profile.json`: the call-path profile, when the run was also profiled\n");
    int bad = ferror(f);
    bad |= fclose(f) != 0;
    int rc = WS_OK;
    if (bad || rename(tmp, path) != 0) {
        remove(tmp);
        rc = ws_error_set(err, WS_ERR_IO, "%s: cannot write", path);
    }
    free(path);
    free(tmp);
    return rc;
}
