/* A note from a process that ran with the library but never saw MPI_Init:
 * without it, a run whose MPI calls all went past the library (an MPI
 * linked into the program statically, calls through a symbol the library
 * does not define, another MPI than the library's) would leave nothing
 * and look like a crash.  At exit, such a process writes
 * DIR/.waitscope-unseen/HOST.PID (DIR: the trace directory, else the
 * profile's), tab-separated:
 *
 *   exe          the executable
 *   initialized  1 if the library's MPI was initialised all the same
 *   loaded       an MPI-related shared object mapped into the process
 *
 * A run in which some rank called MPI from another thread than the one
 * that initialised it is not recorded (pmpi.h); rank 0 leaves a note with
 * `threads` (how many ranks did) and `level` (what MPI_Init_thread
 * provided) instead.
 *
 * Launchers and their helper processes (mpiexec, orted, hydra_pmi_proxy,
 * ...), which get the library too, never write one. */
#define _GNU_SOURCE
#include "pmpi.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int launcher_process(const char *exe)
{
    const char *base = strrchr(exe, '/');
    base = base ? base + 1 : exe;
    static const char *const names[] = {"mpiexec", "mpirun", "orterun", "orted", "prterun", "prted", "prte",
                                        "hydra_", "mpispawn"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strncmp(base, names[i], strlen(names[i])) == 0)
            return 1;
    return 0;
}

static int mpi_object(const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    return !strstr(base, "libwaitscope-pmpi") &&
           (strncmp(base, "libmpi", 6) == 0 || strncmp(base, "libopen-pal", 11) == 0 ||
            strncmp(base, "libopen-rte", 11) == 0 || strstr(path, "mpi4py") || strncmp(base, "libpmpi", 7) == 0 ||
            strncmp(base, "libfmpich", 9) == 0);
}

static void write_loaded(FILE *out)
{
    FILE *maps = fopen("/proc/self/maps", "r");
    if (!maps)
        return;
    char line[4608], last[4096] = "";
    while (fgets(line, sizeof line, maps)) {
        char *path = strchr(line, '/');
        if (!path)
            continue;
        path[strcspn(path, "\n")] = '\0';
        if (strcmp(path, last) == 0 || !mpi_object(path))
            continue;
        snprintf(last, sizeof last, "%s", path);
        fprintf(out, "loaded\t%s\n", path);
    }
    fclose(maps);
}

/* Opens this process's note, NULL if there is nowhere to write it. */
static FILE *open_note(const char *exe)
{
    const char *dir = getenv("WAITSCOPE_TRACE_DIR");
    if (!dir || !*dir)
        dir = getenv("WAITSCOPE_PROFILE_DIR");
    if (!dir || !*dir)
        return NULL;
    char path[4096], host[256] = "localhost";
    gethostname(host, sizeof host - 1);
    snprintf(path, sizeof path, "%s/.waitscope-unseen", dir);
    if (ws_mkdir_p(path) != 0)
        return NULL;
    snprintf(path, sizeof path, "%s/.waitscope-unseen/%s.%ld", dir, host, (long)getpid());
    FILE *out = fopen(path, "w");
    if (out)
        fprintf(out, "exe\t%s\n", exe);
    return out;
}

static void executable(char *exe, size_t size)
{
    ssize_t n = readlink("/proc/self/exe", exe, size - 1);
    exe[n > 0 ? n : 0] = '\0';
}

void ws_unseen_threads(int ranks, int level)
{
    char exe[4096];
    executable(exe, sizeof exe);
    FILE *out = open_note(exe);
    if (!out)
        return;
    static const char *const levels[] = {"MPI_THREAD_SINGLE", "MPI_THREAD_FUNNELED", "MPI_THREAD_SERIALIZED",
                                         "MPI_THREAD_MULTIPLE"};
    const char *name = level == MPI_THREAD_SINGLE       ? levels[0]
                       : level == MPI_THREAD_FUNNELED   ? levels[1]
                       : level == MPI_THREAD_SERIALIZED ? levels[2]
                       : level == MPI_THREAD_MULTIPLE   ? levels[3]
                                                        : "?";
    fprintf(out, "initialized\t1\nthreads\t%d\nlevel\t%s\n", ranks, name);
    fclose(out);
}

static void note_if_unseen(void)
{
    ws_pmpi *g = &ws_pmpi_g;
    if (!g->loaded || g->t_init != 0)
        return;
    char exe[4096] = "";
    executable(exe, sizeof exe);
    if (launcher_process(exe))
        return;
    FILE *out = open_note(exe);
    if (!out)
        return;
    int initialized = 0, finalized = 0;
    PMPI_Initialized(&initialized);
    PMPI_Finalized(&finalized);
    fprintf(out, "initialized\t%d\n", initialized || finalized);
    write_loaded(out);
    fclose(out);
}

void ws_unseen_watch(void)
{
    atexit(note_if_unseen);
}
