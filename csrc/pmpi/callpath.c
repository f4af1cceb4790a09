/* User code on the call path of MPI calls, in one of two modes:
 *
 * stack (default): at every MPI call the call stack is unwound
 *   (libgcc's _Unwind_Backtrace over .eh_frame, with a cache: stackwalk.c), the
 *   frames of user code (the executable and shared objects outside the
 *   system library directories) from `main` inwards are named from the
 *   symbol tables, and the trace gets Leave/Enter events for the frames
 *   that changed since the previous MPI call, all stamped with the time
 *   the MPI call is entered, but for the frames the previous MPI call had
 *   and this one has not: those are left when the previous call ended.  A
 *   user function therefore appears to start at its first MPI call and to
 *   end after its last one: the time between MPI calls is attributed to
 *   the frames both calls share, never to a frame only the later call
 *   shows.
 *   Calls made and returned between two MPI calls are invisible, and a
 *   function left and re-entered between two MPI calls looks like one
 *   visit.  Inlined functions and frames the unwinder cannot see (code
 *   without unwind tables) are missing.  In a Python interpreter the
 *   Python frames and the mpi4py method stand in place of the C frames
 *   (pyframes.c): the interpreter's C frames say nothing about the Python
 *   program.
 *
 *   Between MPI calls, timer samples of the stack (sampling.c) are
 *   followed by the same rule, so computation reaches the functions that
 *   did it even when every MPI call shows the same frames.
 *
 * instrument: the program was compiled with -finstrument-functions; the
 *   hooks below record exact Enter/Leave events for every function.  The
 *   mode switches on by itself at the first hook call.
 */
#define _GNU_SOURCE
#include "pmpi.h"

#include <stdlib.h>
#include <string.h>

#include "../trace/trace.h"

void ws_callpath_init(ws_callpaths_rt *c)
{
    memset(c, 0, sizeof *c);
    ws_map64_init(&c->addr_region);
    ws_map64_init(&c->path_index);
    c->python = ws_symbol_executable_is_python();
}

uint32_t ws_callpath_region_named(ws_callpaths_rt *c, const char *name)
{
    for (uint32_t i = 0; i < c->n_regions; i++)
        if (strcmp(c->region_names[i], name) == 0)
            return WS_REGION_FIRST_USER + i;
    if (ws_grow((void **)&c->region_names, &c->cap_regions, (size_t)c->n_regions + 1, sizeof(char *)) != 0)
        return 0;
    char *copy = strdup(name);
    if (!copy)
        return 0;
    c->region_names[c->n_regions] = copy;
    uint32_t id = WS_REGION_FIRST_USER + c->n_regions++;
    ws_tracer_def(&ws_pmpi_g.tracer, "region\t%u\tuser\t%s\t%s\n", (unsigned)id, name, name);
    return id;
}

/* A function a compiler outlined from an OpenMP construct: GCC's and
 * gfortran's main._omp_fn.0, LLVM's .omp_outlined. and __omp_outlined__ */
static int outlined(const char *name)
{
    return strstr(name, "._omp_fn.") != NULL || strncmp(name, ".omp_outlined", 13) == 0 ||
           strncmp(name, "__omp_outlined", 14) == 0 || strstr(name, ".omp_outlined.") != NULL;
}

/* Region of the user function containing `addr`, 0 if it is not user
 * code or has no name.  `exact`: addr is a function's start address. */
uint32_t ws_callpath_region_of(ws_callpaths_rt *c, const void *addr)
{
    uint64_t key = (uint64_t)(uintptr_t)addr, value;
    if (ws_map64_get(&c->addr_region, key, &value))
        return (uint32_t)value;
    char name[512];
    uintptr_t start = 0;
    int user = 0, entry = 0;
    uint32_t r = 0;
    if (ws_symbol_lookup(addr, name, sizeof name, &start, &user, &entry) != 0) {
        /* no name */
    } else if (c->python) {
        /* of the C frames of a Python program only mpi4py's (Cython's) wrappers */
        char method[512];
        if (ws_python_cython_name(name, method, sizeof method) == 0)
            r = ws_callpath_region_named(c, method);
    } else if (user && outlined(name)) {
        r = WS_REGION_OUTLINED;
    } else if (user) {
        r = ws_callpath_region_named(c, name);
        if (entry && !c->main_region)
            c->main_region = r;
    }
    ws_map64_put(&c->addr_region, key, r);
    return r;
}

const char *ws_callpath_region_name(const ws_callpaths_rt *c, uint32_t region)
{
    if (region < WF_COUNT)
        return ws_fn_name((int)region);
    if (region >= WS_REGION_FIRST_USER && region - WS_REGION_FIRST_USER < c->n_regions)
        return c->region_names[region - WS_REGION_FIRST_USER];
    return "?";
}

/* The user frames of a stack given as the regions of its frames
 * (innermost first, 0: not user code), outermost first, from the
 * program's entry inwards.  Returns 0 when the entry is known but not on
 * this (truncated) stack. */
static int frames_from(const ws_callpaths_rt *c, const uint32_t *regions, int n, ws_frames *f)
{
    const uint32_t max = sizeof f->region / sizeof f->region[0];
    if (c->omp_team) {
        /* the master of an OpenMP team: the frames of the fork, then those
         * inside the outermost outlined function (none after it returned) */
        *f = c->omp_base;
        int outer = -1;
        for (int i = n - 1; i >= 0 && outer < 0; i--)
            if (regions[i] == WS_REGION_OUTLINED)
                outer = i;
        for (int i = outer - 1; i >= 0 && f->n < max; i--)
            if (regions[i] && regions[i] != WS_REGION_OUTLINED)
                f->region[f->n++] = regions[i];
        return 1;
    }
    f->n = 0;
    int main_at = -1; /* index in `regions` */
    for (int i = n - 1; i >= 0 && main_at < 0; i--)
        if (regions[i] && regions[i] == c->main_region)
            main_at = i;
    for (int i = main_at >= 0 ? main_at : n - 1; i >= 0 && f->n < max; i--)
        if (regions[i] && regions[i] != WS_REGION_OUTLINED)
            f->region[f->n++] = regions[i];
    return main_at >= 0 || !c->main_region;
}

/* The user frames of a sampled stack (addrs[0]: where the thread was). */
static int frames_of_sample(ws_callpaths_rt *c, void *const *addrs, int n, ws_frames *f)
{
    uint32_t regions[WS_SAMPLE_DEPTH];
    for (int i = 0; i < n && i < WS_SAMPLE_DEPTH; i++)
        /* return addresses point after the call: look up the call itself */
        regions[i] = ws_callpath_region_of(c, (const char *)addrs[i] - (i == 0 ? 0 : 1));
    return frames_from(c, regions, n < WS_SAMPLE_DEPTH ? n : WS_SAMPLE_DEPTH, f);
}

/* The user frames of the current call stack, outermost first. */
static void capture(ws_callpaths_rt *c, ws_frames *f)
{
    f->n = 0;
    if (c->python) {
        const uint32_t max = sizeof f->region / sizeof f->region[0];
        int n = ws_python_frames(c, f->region, (int)max - 1);
        if (n >= 0) {
            /* then the mpi4py method the innermost Python frame called */
            f->n = (uint32_t)n;
            const uint32_t *regions;
            int k = ws_stack_regions(c, &regions);
            for (int i = 0; i < k && i < 64; i++)
                if (regions[i] && regions[i] != WS_REGION_OUTLINED) {
                    f->region[f->n++] = regions[i];
                    break;
                }
        } else if (n == -1) {
            /* no CPython API: the interpreter's frames say nothing */
            if (!c->main_region)
                c->main_region = ws_callpath_region_named(c, "main");
            if (c->main_region)
                f->region[f->n++] = c->main_region;
        }
        return;
    }
    const uint32_t *regions;
    int n = ws_stack_regions(c, &regions);
    frames_from(c, regions, n, f);
}

static void emit_region(uint64_t now, uint8_t kind, uint32_t region)
{
    ws_emit(now, kind, region, 0, 0, 0, 0, 0);
}

static uint32_t intern(ws_callpaths_rt *c, const ws_frames *f, int fn)
{
    uint64_t h = 1469598103934665603ULL ^ (uint64_t)fn;
    for (uint32_t i = 0; i < f->n; i++)
        h = ws_hash64(h ^ f->region[i]);
    h &= ~(1ULL << 63); /* never the map's reserved key */
    for (uint64_t k = h;; k = (k + 1) & ~(1ULL << 63)) {
        uint64_t v;
        if (!ws_map64_get(&c->path_index, k, &v))
            break;
        const uint32_t *p = c->path_regions[v - 1];
        if (p[0] == f->n && (int)p[f->n + 1] == fn && memcmp(p + 1, f->region, f->n * sizeof(uint32_t)) == 0)
            return (uint32_t)(v - 1);
        h = (k + 1) & ~(1ULL << 63);
    }
    if (ws_grow((void **)&c->path_regions, &c->cap_paths, (size_t)c->n_paths + 1, sizeof(uint32_t *)) != 0)
        return UINT32_MAX;
    uint32_t *p = malloc((f->n + 2) * sizeof *p);
    if (!p)
        return UINT32_MAX;
    p[0] = f->n;
    memcpy(p + 1, f->region, f->n * sizeof(uint32_t));
    p[f->n + 1] = (uint32_t)fn;
    c->path_regions[c->n_paths] = p;
    ws_map64_put(&c->path_index, h, (uint64_t)c->n_paths + 1);
    return c->n_paths++;
}

/* Moves the trace from the frames entered now to `f`, observed at time
 * `now`: the frames the two share stay entered, the others are left at
 * the time of the previous observation (c->t_seen) and those of `f` that
 * are new entered at `now`.  So the time between two observations goes
 * to the frames both share, never to a frame only the later one shows. */
static void move_to(ws_callpaths_rt *c, const ws_frames *f, uint64_t now)
{
    c->n_moves++;
    uint32_t k = 0;
    while (k < f->n && k < c->current.n && f->region[k] == c->current.region[k])
        k++;
    uint64_t left = c->t_seen && c->t_seen <= now ? c->t_seen : now;
    for (uint32_t i = c->current.n; i-- > k;)
        emit_region(left, WS_EV_LEAVE, c->current.region[i]);
    for (uint32_t i = k; i < f->n; i++)
        emit_region(now, WS_EV_ENTER, f->region[i]);
    c->current = *f;
    c->t_seen = now;
}

/* The trace moves through the stacks sampled since the previous MPI call
 * (sampling.c), in time order.  A sample stands for one sampling period
 * around it, as in every sampling profiler: its frames are entered half a
 * period before it was taken and left half a period after (a run of
 * samples with the same frames: from before the first to after the last),
 * never beyond the observations before and after it.  Between the
 * observations, the rule of move_to. */
static void follow_samples(ws_callpaths_rt *c, uint64_t now)
{
    const ws_sample *s;
    size_t n = ws_sampling_take(&s);
    uint64_t half = ws_pmpi_g.sampler.interval_ns / 2;
    for (size_t i = 0; i < n; i++) {
        ws_frames f;
        if (s[i].t_first < c->t_seen || s[i].t_last > now || !frames_of_sample(c, s[i].addr, (int)s[i].n, &f) ||
            f.n == 0)
            continue;
        uint64_t from = s[i].t_first > c->t_seen + half ? s[i].t_first - half : c->t_seen;
        uint64_t next = i + 1 < n && s[i + 1].t_first <= now ? s[i + 1].t_first : now;
        move_to(c, &f, from);
        c->t_seen = s[i].t_last + half < next ? s[i].t_last + half : next;
    }
    ws_sampling_clear();
}

uint32_t ws_callpath_at_call(ws_callpaths_rt *c, int fn, uint64_t now)
{
    if (!c->instrument) {
        ws_frames f;
        follow_samples(c, now);
        capture(c, &f);
        move_to(c, &f, now);
    }
    return intern(c, &c->current, fn);
}

void ws_callpath_sync(ws_callpaths_rt *c, uint64_t now)
{
    if (!c->instrument) {
        ws_frames f;
        follow_samples(c, now);
        capture(c, &f);
        move_to(c, &f, now);
    }
}

void ws_callpath_team_begin(ws_callpaths_rt *c)
{
    c->omp_base = c->current;
    c->omp_team = 1;
}

void ws_callpath_team_end(ws_callpaths_rt *c, uint64_t now)
{
    if (!c->omp_team)
        return;
    if (!c->instrument) {
        follow_samples(c, now);
        move_to(c, &c->omp_base, now);
    }
    c->omp_team = 0;
}

void ws_callpath_after_call(ws_callpaths_rt *c, uint64_t t1)
{
    c->t_seen = t1;
}

void ws_callpath_leave_all(ws_callpaths_rt *c, uint64_t now)
{
    for (uint32_t i = c->current.n; i-- > 0;)
        emit_region(now, WS_EV_LEAVE, c->current.region[i]);
    c->current.n = 0;
    c->overflow = 0;
}

char *ws_callpath_text(const ws_callpaths_rt *c, uint32_t path)
{
    if (path >= c->n_paths)
        return strdup("?");
    const uint32_t *p = c->path_regions[path];
    size_t len = 1;
    for (uint32_t i = 0; i < p[0]; i++)
        len += strlen(ws_callpath_region_name(c, p[1 + i])) + 1;
    len += strlen(ws_fn_name((int)p[p[0] + 1]));
    char *out = malloc(len);
    if (!out)
        return NULL;
    out[0] = '\0';
    for (uint32_t i = 0; i < p[0]; i++) {
        strcat(out, ws_callpath_region_name(c, p[1 + i]));
        strcat(out, "/");
    }
    strcat(out, ws_fn_name((int)p[p[0] + 1]));
    return out;
}

/* ---- -finstrument-functions hooks ------------------------------------------ */

WS_EXPORT void __cyg_profile_func_enter(void *fn, void *site) __attribute__((no_instrument_function));
WS_EXPORT void __cyg_profile_func_exit(void *fn, void *site) __attribute__((no_instrument_function));

void __cyg_profile_func_enter(void *fn, void *site)
{
    (void)site;
    ws_pmpi *g = &ws_pmpi_g;
    if (!g->loaded || g->done || g->in_call || g->cp.no_hooks || !pthread_equal(pthread_self(), g->main_thread))
        return;
    ws_callpaths_rt *c = &g->cp;
    if (!c->instrument) {
        /* switching modes: frames seen from the stack are left first */
        ws_sampling_stop();
        ws_callpath_leave_all(c, ws_now());
        c->instrument = 1;
    }
    if (c->overflow || c->current.n == sizeof c->current.region / sizeof c->current.region[0]) {
        c->overflow++;
        return;
    }
    uint32_t r = ws_callpath_region_of(c, fn);
    if (!r || r == WS_REGION_OUTLINED) {
        c->overflow++; /* keeps enter/exit pairs balanced */
        return;
    }
    c->current.region[c->current.n++] = r;
    emit_region(ws_now(), WS_EV_ENTER, r);
}

void __cyg_profile_func_exit(void *fn, void *site)
{
    (void)fn;
    (void)site;
    ws_pmpi *g = &ws_pmpi_g;
    if (!g->loaded || g->done || g->in_call || !g->cp.instrument || !pthread_equal(pthread_self(), g->main_thread))
        return;
    ws_callpaths_rt *c = &g->cp;
    if (c->overflow) {
        c->overflow--;
        return;
    }
    if (c->current.n == 0)
        return;
    uint32_t r = c->current.region[--c->current.n];
    emit_region(ws_now(), WS_EV_LEAVE, r);
}
