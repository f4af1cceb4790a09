/* MPI_Init/Finalize/Abort, communicator creation and release, Cartesian
 * topologies, and the helpers every wrapper uses to record a call. */
#define _GNU_SOURCE
#include "pmpi.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../common/error.h"
#include "../trace/trace.h"
#include "unify.h"
#include "unify_mpi.h"

ws_pmpi ws_pmpi_g;

uint64_t ws_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t t = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
    const ws_pmpi *g = &ws_pmpi_g;
    if (g->skewed)
        t += (uint64_t)(g->skew_ns + (int64_t)((double)(t - g->skew_base) * g->skew_rate));
    return t;
}

/* WAITSCOPE_DEBUG_CLOCK="RANK:OFFSET_MS:DRIFT_PPM[,...]": the clock of that
 * rank (told by the launcher's environment, before MPI_Init) runs OFFSET ms
 * ahead of the real one and gains DRIFT microseconds per second; the
 * offsets are then measured on one machine too (clock_offset), unless
 * WAITSCOPE_DEBUG_CLOCK_UNCORRECTED is set. */
static void debug_clock(ws_pmpi *g)
{
    const char *spec = getenv("WAITSCOPE_DEBUG_CLOCK");
    const char *r = getenv("PMI_RANK");
    if (!r)
        r = getenv("OMPI_COMM_WORLD_RANK");
    if (!spec || !r)
        return;
    long me = strtol(r, NULL, 10);
    for (const char *p = spec; *p;) {
        char *end;
        long rank = strtol(p, &end, 10);
        double ms = *end == ':' ? strtod(end + 1, &end) : 0.0;
        double ppm = *end == ':' ? strtod(end + 1, &end) : 0.0;
        if (rank == me) {
            g->skew_base = ws_now();
            g->skew_ns = (int64_t)(ms * 1e6);
            g->skew_rate = ppm * 1e-6;
            g->skewed = 1;
        }
        p = strchr(end, ',');
        if (!p)
            break;
        p++;
    }
}

void ws_emit(uint64_t time, uint8_t kind, uint32_t a, uint32_t comm, uint32_t tag, uint64_t bytes, uint64_t req,
             uint8_t op)
{
    ws_tracer *t = &ws_pmpi_g.tracer;
    if (!t->on)
        return;
    ws_raw_event e = {time, kind, op, 0, a, comm, tag, bytes, req};
    ws_tracer_event(t, &e);
}

static uint64_t call_begin_at(int fn, uint64_t t0)
{
    ws_pmpi *g = &ws_pmpi_g;
    g->in_call = 1;
    g->call_fn = fn;
    g->call_t0 = t0;
    g->n_call_partners = 0;
    g->call_path = ws_callpath_at_call(&g->cp, fn, t0);
    ws_emit(t0, WS_EV_ENTER, (uint32_t)fn, 0, 0, 0, 0, 0);
    return t0;
}

uint64_t ws_call_begin(int fn)
{
    return call_begin_at(fn, ws_now());
}

void ws_call_end(int fn, uint64_t t1, uint64_t bytes, int has_bytes, int root)
{
    ws_pmpi *g = &ws_pmpi_g;
    ws_emit(t1, WS_EV_LEAVE, (uint32_t)fn, 0, 0, 0, 0, 0);
    ws_callpath_after_call(&g->cp, t1);
    uint64_t d = t1 > g->call_t0 ? t1 - g->call_t0 : 0;
    ws_profiler_record(&g->prof, g->call_path, fn, bytes, has_bytes, root, (double)d * 1e-9);
    if (g->n_call_partners)
        ws_profiler_partners(&g->prof, fn, bytes, g->call_partner, g->n_call_partners);
    g->mpi_ns += d;
    g->in_call = 0;
}

uint64_t ws_type_bytes(long long count, MPI_Datatype type)
{
    if (count <= 0 || type == MPI_DATATYPE_NULL)
        return 0;
    int size = 0;
    if (PMPI_Type_size(type, &size) != MPI_SUCCESS || size < 0)
        return 0;
    return (uint64_t)count * (uint64_t)size;
}

/* ---- communicators ---------------------------------------------------------- */

/* The rank in MPI_COMM_WORLD of rank `peer` of a known communicator, -1 if unknown. */
static int world_rank(ws_comm_entry *e, int peer)
{
    if (e->comm == MPI_COMM_WORLD)
        return peer;
    if (!e->world) {
        MPI_Group group, world;
        int size = 0;
        PMPI_Comm_size(e->comm, &size);
        int *local = malloc((size_t)size * sizeof *local), *global = malloc((size_t)size * sizeof *global);
        if (!local || !global || PMPI_Comm_group(e->comm, &group) != MPI_SUCCESS) {
            free(local);
            free(global);
            return -1;
        }
        PMPI_Comm_group(MPI_COMM_WORLD, &world);
        for (int i = 0; i < size; i++)
            local[i] = i;
        PMPI_Group_translate_ranks(group, size, local, world, global);
        PMPI_Group_free(&group);
        PMPI_Group_free(&world);
        free(local);
        e->world = global;
        e->size = size;
    }
    return peer >= 0 && peer < e->size && e->world[peer] != MPI_UNDEFINED ? e->world[peer] : -1;
}

void ws_call_partner(uint32_t comm, int peer)
{
    ws_pmpi *g = &ws_pmpi_g;
    if (!g->prof.on || comm == UINT32_MAX || peer < 0 || g->n_call_partners == WS_CAL_PARTNERS)
        return;
    for (size_t i = 0; i < g->n_comms; i++)
        if (g->comms[i].id == comm) {
            int w = world_rank(&g->comms[i], peer);
            if (w < 0 || w == g->rank)
                return;
            for (int k = 0; k < g->n_call_partners; k++)
                if (g->call_partner[k] == w)
                    return;
            g->call_partner[g->n_call_partners++] = w;
            return;
        }
}

uint32_t ws_comm_id(MPI_Comm comm)
{
    ws_pmpi *g = &ws_pmpi_g;
    for (size_t i = 0; i < g->n_comms; i++)
        if (g->comms[i].comm == comm)
            return g->comms[i].id;
    return UINT32_MAX;
}

static void add_comm(MPI_Comm comm, uint32_t id)
{
    ws_pmpi *g = &ws_pmpi_g;
    if (ws_grow((void **)&g->comms, &g->cap_comms, g->n_comms + 1, sizeof *g->comms) != 0)
        return;
    g->comms[g->n_comms++] = (ws_comm_entry){comm, id, NULL, 0};
}

/* Defines a new communicator (collective over it): its key, agreed on by
 * a broadcast from its rank 0, identifies it across ranks. */
static void register_comm(MPI_Comm comm, MPI_Comm parent)
{
    ws_pmpi *g = &ws_pmpi_g;
    if (comm == MPI_COMM_NULL || !(g->tracer.on || g->prof.on))
        return;
    int rank = 0, size = 0, inter = 0;
    PMPI_Comm_test_inter(comm, &inter);
    if (inter)
        return;
    if (!g->tracer.on) {
        /* profiling only: known by a local id (its requests' bytes, its partners) */
        add_comm(comm, g->next_comm_id++);
        return;
    }
    PMPI_Comm_rank(comm, &rank);
    PMPI_Comm_size(comm, &size);
    unsigned long long key[2] = {(unsigned long long)g->rank, g->comm_serial};
    PMPI_Bcast(key, 2, MPI_UNSIGNED_LONG_LONG, 0, comm);
    if (rank == 0)
        g->comm_serial++;
    MPI_Group group, world;
    PMPI_Comm_group(comm, &group);
    PMPI_Comm_group(MPI_COMM_WORLD, &world);
    int *local = malloc((size_t)size * sizeof *local), *global = malloc((size_t)size * sizeof *global);
    char *text = malloc((size_t)size * 12 + 1);
    if (local && global && text) {
        for (int i = 0; i < size; i++)
            local[i] = i;
        PMPI_Group_translate_ranks(group, size, local, world, global);
        size_t n = 0;
        for (int i = 0; i < size; i++)
            n += (size_t)sprintf(text + n, "%s%d", i ? "," : "", global[i]);
        uint32_t id = g->next_comm_id++;
        ws_tracer_def(&g->tracer, "comm\t%u\t%llu.%llu\tComm %llu.%llu\t%d\t%s\t%u\n", (unsigned)id, key[0],
                      key[1], key[0], key[1], size, text, (unsigned)ws_comm_id(parent));
        add_comm(comm, id);
    }
    free(local);
    free(global);
    free(text);
    PMPI_Group_free(&group);
    PMPI_Group_free(&world);
}

void ws_comm_forget(MPI_Comm comm)
{
    ws_pmpi *g = &ws_pmpi_g;
    for (size_t i = 0; i < g->n_comms; i++)
        if (g->comms[i].comm == comm) {
            free(g->comms[i].world);
            g->comms[i] = g->comms[--g->n_comms];
            return;
        }
}

static void record_cart(MPI_Comm comm);

void ws_comm_register(MPI_Comm comm, MPI_Comm parent, int cart)
{
    register_comm(comm, parent);
    if (cart)
        record_cart(comm);
}

/* ---- clocks ------------------------------------------------------------------- */

/* Offset of this rank's clock to rank 0's (global = local + offset), from
 * the fastest of a few round trips with rank 0. */
static void clock_offset(void)
{
    ws_pmpi *g = &ws_pmpi_g;
    if (!g->tracer.on)
        return;
    MPI_Comm comm = g->private_comm;
    const int rounds = 5, tag = 1;
    long long offset = 0;
    uint64_t mine = ws_now();
    /* ranks on rank 0's machine share its clock (CLOCK_MONOTONIC): their
     * offset is exactly 0, and a measured one would only add noise */
    char host[256] = "", host0[256];
    gethostname(host, sizeof host - 1);
    memcpy(host0, host, sizeof host0);
    PMPI_Bcast(host0, sizeof host0, MPI_CHAR, 0, comm);
    /* (unless a clock was made to disagree on purpose and is to be corrected) */
    int measure = getenv("WAITSCOPE_DEBUG_CLOCK") && !getenv("WAITSCOPE_DEBUG_CLOCK_UNCORRECTED");
    int same = strcmp(host, host0) == 0 && !measure, *same_all = NULL;
    if (g->rank == 0)
        same_all = calloc((size_t)g->size, sizeof *same_all);
    PMPI_Gather(&same, 1, MPI_INT, same_all, 1, MPI_INT, 0, comm);
    if (g->rank == 0) {
        for (int r = 1; r < g->size; r++) {
            if (same_all && same_all[r])
                continue;
            uint64_t best = UINT64_MAX;
            long long off = 0;
            for (int k = 0; k < rounds; k++) {
                unsigned long long remote = 0;
                uint64_t t1 = ws_now();
                PMPI_Send(&t1, 1, MPI_UNSIGNED_LONG_LONG, r, tag, comm);
                PMPI_Recv(&remote, 1, MPI_UNSIGNED_LONG_LONG, r, tag, comm, MPI_STATUS_IGNORE);
                uint64_t t2 = ws_now();
                if (t2 - t1 < best) {
                    best = t2 - t1;
                    off = (long long)(t1 + (t2 - t1) / 2) - (long long)remote;
                }
            }
            PMPI_Send(&off, 1, MPI_LONG_LONG, r, tag, comm);
        }
        free(same_all);
    } else if (!same) {
        for (int k = 0; k < rounds; k++) {
            unsigned long long ping;
            PMPI_Recv(&ping, 1, MPI_UNSIGNED_LONG_LONG, 0, tag, comm, MPI_STATUS_IGNORE);
            unsigned long long now = ws_now();
            mine = now;
            PMPI_Send(&now, 1, MPI_UNSIGNED_LONG_LONG, 0, tag, comm);
        }
        PMPI_Recv(&offset, 1, MPI_LONG_LONG, 0, tag, comm, MPI_STATUS_IGNORE);
    }
    ws_tracer_def(&g->tracer, "clock\t%llu\t%lld\n", (unsigned long long)mine, offset);
}

/* ---- process life ------------------------------------------------------------- */

static void read_command(ws_pmpi *g)
{
    int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    char buf[4096];
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return;
    for (ssize_t i = 0; i < n - 1; i++)
        if (buf[i] == '\0' || buf[i] == '\t' || buf[i] == '\n')
            buf[i] = ' ';
    buf[n] = '\0';
    g->command = strdup(buf);
}

__attribute__((constructor)) static void on_load(void)
{
    ws_pmpi *g = &ws_pmpi_g;
    debug_clock(g);
    g->t_start = ws_now();
    g->main_thread = pthread_self();
    const char *trace_dir = getenv("WAITSCOPE_TRACE_DIR");
    const char *profile_dir = getenv("WAITSCOPE_PROFILE_DIR");
    if (trace_dir && *trace_dir)
        ws_tracer_setup(&g->tracer, trace_dir);
    if (profile_dir && *profile_dir)
        ws_profiler_setup(&g->prof, profile_dir);
    if (!g->tracer.on && !g->prof.on)
        return;
    ws_callpath_init(&g->cp);
    const char *mode = getenv("WAITSCOPE_CALLPATH");
    g->cp.no_hooks = mode && strcmp(mode, "stack") == 0;
    read_command(g);
    g->rank = -1;
    g->req_free = UINT32_MAX;
    g->loaded = 1;
    ws_emit(g->t_start, WS_EV_PROGRAM_BEGIN, 0, 0, 0, 0, 0, 0);
    ws_unseen_watch();
}

static void on_exit_without_finalize(void)
{
    ws_pmpi *g = &ws_pmpi_g;
    if (!g->measuring || g->done)
        return;
    g->done = 1;
    ws_tracer_def(&g->tracer, "exit\t0\n");
}

/* What rank 0 knows of the run for its manifest: the measurement's
 * options (the WAITSCOPE_* variables), the MPI library, the date. */
static void describe_run(ws_tracer *t)
{
    extern char **environ;
    for (char **e = environ; e && *e; e++) {
        const char *eq = strchr(*e, '=');
        if (strncmp(*e, "WAITSCOPE_", 10) == 0 && eq && !strchr(eq, '\t') && !strchr(eq, '\n'))
            ws_tracer_def(t, "option\t%.*s\t%s\n", (int)(eq - *e), *e, eq + 1);
    }
    char version[MPI_MAX_LIBRARY_VERSION_STRING] = "";
    int len = 0;
    if (PMPI_Get_library_version(version, &len) == MPI_SUCCESS) {
        version[strcspn(version, "\n")] = '\0';
        for (char *c = version; *c; c++)
            if (*c == '\t' || *c == '\r')
                *c = ' ';
        ws_tracer_def(t, "mpi\t%s\n", version);
    }
    char date[64];
    time_t now = time(NULL);
    struct tm tm;
    if (gmtime_r(&now, &tm) && strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", &tm) > 0)
        ws_tracer_def(t, "date\t%s\n", date);
}

void ws_after_init(int fn, uint64_t t0)
{
    ws_pmpi *g = &ws_pmpi_g;
    if (!g->loaded)
        return;
    PMPI_Comm_rank(MPI_COMM_WORLD, &g->rank);
    PMPI_Comm_size(MPI_COMM_WORLD, &g->size);
    PMPI_Comm_dup(MPI_COMM_WORLD, &g->private_comm);
    g->t_init = t0;
    char host[256] = "localhost";
    gethostname(host, sizeof host - 1);
    if (g->tracer.on) {
        /* a previous run's files in the same directory would mix with this
         * run's: rank 0 removes them before any rank creates its own */
        if (g->rank == 0)
            ws_tracer_remove_stale(&g->tracer, getenv("WAITSCOPE_TRACE_DIR"));
        PMPI_Barrier(g->private_comm);
        ws_tracer_open(&g->tracer, g->rank, g->size, host, g->t_start);
        for (int f = 0; f < WF_COUNT; f++)
            ws_tracer_def(&g->tracer, "region\t%d\tmpi:%d\t%s\t%s\n", f, ws_fn_role(f), ws_fn_name(f), ws_fn_name(f));
        char exe[4096] = "";
        ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
        exe[n > 0 ? n : 0] = '\0';
        const char *base = strrchr(exe, '/');
        ws_tracer_def(&g->tracer, "region\t%u\tprogram\t%s\t%s\n", (unsigned)WS_REGION_PROGRAM, base ? base + 1 : exe,
                      exe);
        ws_tracer_def(&g->tracer, "command\t%s\n", g->command ? g->command : "");
        if (g->rank == 0)
            describe_run(&g->tracer);
        ws_tracer_def(&g->tracer, "comm\t0\tworld\tMPI_COMM_WORLD\t%d\t-\n", g->size);
        ws_tracer_def(&g->tracer, "comm\t1\tself\tMPI_COMM_SELF\t1\t-\n");
        clock_offset();
        ws_omp_files_open();
    }
    add_comm(MPI_COMM_WORLD, 0);
    add_comm(MPI_COMM_SELF, 1);
    g->next_comm_id = 2;
    ws_tracer_install_crash_handlers();
    atexit(on_exit_without_finalize);
    g->owner = pthread_self();
    g->measuring = 1;
    call_begin_at(fn, t0);
    ws_call_end(fn, ws_now(), 0, 0, 0);
    ws_sampling_start();
}

/* in_call: a Fortran binding's MPI_Init calls this one (MPICH's mpif.h
 * binding does); the Fortran wrapper records the call itself */
WS_EXPORT int MPI_Init(int *argc, char ***argv)
{
    if (ws_pmpi_g.in_call)
        return PMPI_Init(argc, argv);
    uint64_t t0 = ws_now();
    int rc = PMPI_Init(argc, argv);
    if (rc == MPI_SUCCESS)
        ws_after_init(WF_INIT, t0);
    return rc;
}

WS_EXPORT int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    if (ws_pmpi_g.in_call)
        return PMPI_Init_thread(argc, argv, required, provided);
    uint64_t t0 = ws_now();
    int rc = PMPI_Init_thread(argc, argv, required, provided);
    if (rc == MPI_SUCCESS) {
        ws_pmpi_g.thread_level = *provided;
        ws_after_init(WF_INIT_THREAD, t0);
    }
    return rc;
}

WS_EXPORT int MPI_Finalize(void)
{
    ws_pmpi *g = &ws_pmpi_g;
    if (g->measuring && !g->done)
        ws_finalize_measurement();
    return PMPI_Finalize();
}

/* Some rank called MPI from more than one thread: the per-rank files go,
 * nothing is written but rank 0's note saying why. */
static void void_measurement(int ranks)
{
    ws_pmpi *g = &ws_pmpi_g;
    char dir[4096] = "";
    if (g->tracer.on) {
        snprintf(dir, sizeof dir, "%s", g->tracer.dir);
        ws_omp_discard();
        ws_tracer_close(&g->tracer);
        unlink(g->tracer.evt_path);
        unlink(g->tracer.def_path);
    }
    PMPI_Barrier(g->private_comm);
    if (g->rank == 0) {
        if (*dir)
            rmdir(dir);
        ws_unseen_threads(ranks, g->thread_level);
    }
    PMPI_Comm_free(&g->private_comm);
    ws_requests_free_all();
}

void ws_finalize_measurement(void)
{
    ws_pmpi *g = &ws_pmpi_g;
    ws_sampling_stop();
    ws_omp_finalize(ws_now());
    ws_call_begin(WF_FINALIZE);
    clock_offset();
    uint64_t t1 = ws_now();
    ws_call_end(WF_FINALIZE, t1, 0, 0, 0);
    ws_callpath_leave_all(&g->cp, t1);
    ws_emit(t1, WS_EV_PROGRAM_END, 0, 0, 0, 0, 0, 0);
    g->t_finalize = t1;
    g->done = 1;
    g->measuring = 0;
    int threads = __atomic_load_n(&g->other_thread, __ATOMIC_RELAXED), ranks = 0;
    PMPI_Allreduce(&threads, &ranks, 1, MPI_INT, MPI_SUM, g->private_comm);
    if (ranks > 0) {
        void_measurement(ranks);
        return;
    }
    if (g->prof.on)
        ws_calibrate(&g->prof, g->private_comm, g->rank, g->size);
    ws_profiler_finalize(&g->prof, &g->cp, g->rank, g->size, (double)(t1 - g->t_init) * 1e-9,
                         (double)g->mpi_ns * 1e-9, g->command);
    if (g->tracer.on) {
        ws_omp_name_constructs(&g->omp);
        int ok = !g->tracer.failed, all_ok = 0;
        ws_tracer_def(&g->tracer, "end\t%llu\n", (unsigned long long)ws_tracer_count(&g->tracer));
        char raw_dir[4096];
        snprintf(raw_dir, sizeof raw_dir, "%s", g->tracer.dir ? g->tracer.dir : "");
        ws_tracer_close(&g->tracer);
        PMPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, g->private_comm);
        const char *dir = getenv("WAITSCOPE_TRACE_DIR"), *mode = getenv("WAITSCOPE_UNIFY");
        /* WAITSCOPE_UNIFY=serial: rank 0 alone writes the archive, reading every rank's events */
        int serial = mode && strcmp(mode, "serial") == 0;
        ws_error err;
        memset(&err, 0, sizeof err);
        if (!all_ok) {
            if (g->rank == 0)
                fprintf(stderr, "waitscope: writing the per-rank trace files failed; no archive was built\n");
        } else if ((serial && g->rank == 0) ||
                   (!serial && ws_pmpi_unify_parallel(dir, g->tracer.def_path, g->tracer.evt_path, g->private_comm,
                                                      &err) != WS_OK)) {
            /* every rank kept its files: one process builds the archive from them */
            if (g->rank == 0 && !serial)
                fprintf(stderr, "waitscope: the ranks could not write the archive together (%s); rank 0 writes it "
                                "alone\n", err.message);
            memset(&err, 0, sizeof err);
            if (g->rank == 0 && ws_pmpi_unify(dir, NULL, &err) != WS_OK)
                fprintf(stderr, "waitscope: building the trace archive failed: %s\n", err.message);
        } else if (!serial) {
            PMPI_Barrier(g->private_comm);
            if (g->rank == 0 && *raw_dir)
                rmdir(raw_dir);
        }
        PMPI_Barrier(g->private_comm);
    }
    PMPI_Comm_free(&g->private_comm);
    ws_requests_free_all();
}

void ws_abort_record(int code)
{
    ws_pmpi *g = &ws_pmpi_g;
    if (g->measuring && !g->done && !g->in_call) {
        ws_call_begin(WF_ABORT);
        g->done = 1;
        ws_tracer_def(&g->tracer, "abort\t%d\n", code);
    }
}

WS_EXPORT int MPI_Abort(MPI_Comm comm, int code)
{
    ws_abort_record(code);
    return PMPI_Abort(comm, code);
}

/* ---- communicators and topologies -------------------------------------------- */

#define PASS_THROUGH WS_PASS_THROUGH

WS_EXPORT int MPI_Comm_dup(MPI_Comm comm, MPI_Comm *newcomm)
{
    if (PASS_THROUGH)
        return PMPI_Comm_dup(comm, newcomm);
    ws_call_begin(WF_COMM_DUP);
    int rc = PMPI_Comm_dup(comm, newcomm);
    if (rc == MPI_SUCCESS)
        register_comm(*newcomm, comm);
    ws_call_end(WF_COMM_DUP, ws_now(), 0, 0, 0);
    return rc;
}

WS_EXPORT int MPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm *newcomm)
{
    if (PASS_THROUGH)
        return PMPI_Comm_split(comm, color, key, newcomm);
    ws_call_begin(WF_COMM_SPLIT);
    int rc = PMPI_Comm_split(comm, color, key, newcomm);
    if (rc == MPI_SUCCESS)
        register_comm(*newcomm, comm);
    ws_call_end(WF_COMM_SPLIT, ws_now(), 0, 0, 0);
    return rc;
}

WS_EXPORT int MPI_Comm_create(MPI_Comm comm, MPI_Group group, MPI_Comm *newcomm)
{
    if (PASS_THROUGH)
        return PMPI_Comm_create(comm, group, newcomm);
    ws_call_begin(WF_COMM_CREATE);
    int rc = PMPI_Comm_create(comm, group, newcomm);
    if (rc == MPI_SUCCESS)
        register_comm(*newcomm, comm);
    ws_call_end(WF_COMM_CREATE, ws_now(), 0, 0, 0);
    return rc;
}

WS_EXPORT int MPI_Comm_free(MPI_Comm *comm)
{
    if (PASS_THROUGH)
        return PMPI_Comm_free(comm);
    ws_call_begin(WF_COMM_FREE);
    ws_comm_forget(*comm);
    int rc = PMPI_Comm_free(comm);
    ws_call_end(WF_COMM_FREE, ws_now(), 0, 0, 0);
    return rc;
}

/* Records the Cartesian topology of `comm` (a communicator just
 * registered): dimensions, periodicity and this rank's coordinates. */
static void record_cart(MPI_Comm comm)
{
    int ndims = 0;
    if (comm == MPI_COMM_NULL || !ws_pmpi_g.tracer.on || PMPI_Cartdim_get(comm, &ndims) != MPI_SUCCESS ||
        ndims <= 0 || ndims > 16)
        return;
    uint32_t id = ws_comm_id(comm);
    int d[16], p[16], c[16], rank = 0;
    PMPI_Cart_get(comm, ndims, d, p, c);
    PMPI_Comm_rank(comm, &rank);
    char sd[200] = "", sp[200] = "", sc[200] = "";
    size_t nd = 0, np = 0, nc = 0;
    for (int i = 0; i < ndims; i++) {
        nd += (size_t)snprintf(sd + nd, sizeof sd - nd, "%s%d", i ? "," : "", d[i]);
        np += (size_t)snprintf(sp + np, sizeof sp - np, "%s%d", i ? "," : "", p[i] ? 1 : 0);
        nc += (size_t)snprintf(sc + nc, sizeof sc - nc, "%s%d", i ? "," : "", c[i]);
    }
    if (id != UINT32_MAX)
        ws_tracer_def(&ws_pmpi_g.tracer, "cart\t%u\t%d\t%s\t%s\t%d\t%s\n", (unsigned)id, ndims, sd, sp, rank, sc);
}

WS_EXPORT int MPI_Cart_create(MPI_Comm comm, int ndims, const int dims[], const int periods[], int reorder,
                              MPI_Comm *newcomm)
{
    if (PASS_THROUGH)
        return PMPI_Cart_create(comm, ndims, dims, periods, reorder, newcomm);
    ws_call_begin(WF_CART_CREATE);
    int rc = PMPI_Cart_create(comm, ndims, dims, periods, reorder, newcomm);
    if (rc == MPI_SUCCESS) {
        register_comm(*newcomm, comm);
        record_cart(*newcomm);
    }
    ws_call_end(WF_CART_CREATE, ws_now(), 0, 0, 0);
    return rc;
}

WS_EXPORT int MPI_Cart_sub(MPI_Comm comm, const int remain_dims[], MPI_Comm *newcomm)
{
    if (PASS_THROUGH)
        return PMPI_Cart_sub(comm, remain_dims, newcomm);
    ws_call_begin(WF_CART_SUB);
    int rc = PMPI_Cart_sub(comm, remain_dims, newcomm);
    if (rc == MPI_SUCCESS) {
        register_comm(*newcomm, comm);
        record_cart(*newcomm);
    }
    ws_call_end(WF_CART_SUB, ws_now(), 0, 0, 0);
    return rc;
}

WS_EXPORT int MPI_Comm_split_type(MPI_Comm comm, int split_type, int key, MPI_Info info, MPI_Comm *newcomm)
{
    if (PASS_THROUGH)
        return PMPI_Comm_split_type(comm, split_type, key, info, newcomm);
    ws_call_begin(WF_COMM_SPLIT_TYPE);
    int rc = PMPI_Comm_split_type(comm, split_type, key, info, newcomm);
    if (rc == MPI_SUCCESS)
        register_comm(*newcomm, comm);
    ws_call_end(WF_COMM_SPLIT_TYPE, ws_now(), 0, 0, 0);
    return rc;
}

/* Collective over the members of `group` only; the new communicator's
 * definition names `comm` as the one it was made from. */
WS_EXPORT int MPI_Comm_create_group(MPI_Comm comm, MPI_Group group, int tag, MPI_Comm *newcomm)
{
    if (PASS_THROUGH)
        return PMPI_Comm_create_group(comm, group, tag, newcomm);
    ws_call_begin(WF_COMM_CREATE_GROUP);
    int rc = PMPI_Comm_create_group(comm, group, tag, newcomm);
    if (rc == MPI_SUCCESS)
        register_comm(*newcomm, comm);
    ws_call_end(WF_COMM_CREATE_GROUP, ws_now(), 0, 0, 0);
    return rc;
}

/* Inter-communicators are not modelled (their messages are not recorded):
 * the call is a plain region.  Merging one gives an intra-communicator,
 * which is registered like any other. */
WS_EXPORT int MPI_Intercomm_create(MPI_Comm local_comm, int local_leader, MPI_Comm peer_comm, int remote_leader,
                                   int tag, MPI_Comm *newintercomm)
{
    if (PASS_THROUGH)
        return PMPI_Intercomm_create(local_comm, local_leader, peer_comm, remote_leader, tag, newintercomm);
    ws_call_begin(WF_INTERCOMM_CREATE);
    int rc = PMPI_Intercomm_create(local_comm, local_leader, peer_comm, remote_leader, tag, newintercomm);
    ws_call_end(WF_INTERCOMM_CREATE, ws_now(), 0, 0, 0);
    return rc;
}

WS_EXPORT int MPI_Intercomm_merge(MPI_Comm intercomm, int high, MPI_Comm *newintracomm)
{
    if (PASS_THROUGH)
        return PMPI_Intercomm_merge(intercomm, high, newintracomm);
    ws_call_begin(WF_INTERCOMM_MERGE);
    int rc = PMPI_Intercomm_merge(intercomm, high, newintracomm);
    if (rc == MPI_SUCCESS)
        register_comm(*newintracomm, intercomm);
    ws_call_end(WF_INTERCOMM_MERGE, ws_now(), 0, 0, 0);
    return rc;
}

