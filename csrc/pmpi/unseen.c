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

static void note_if_unseen(void)
{
    ws_pmpi *g = &ws_pmpi_g;
    if (!g->loaded || g->t_init != 0)
        return;
    char exe[4096] = "";
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = '\0';
    if (launcher_process(exe))
        return;
    const char *dir = getenv("WAITSCOPE_TRACE_DIR");
    if (!dir || !*dir)
        dir = getenv("WAITSCOPE_PROFILE_DIR");
    if (!dir || !*dir)
        return;
    char path[4096], host[256] = "localhost";
    gethostname(host, sizeof host - 1);
    snprintf(path, sizeof path, "%s/.waitscope-unseen", dir);
    if (ws_mkdir_p(path) != 0)
        return;
    snprintf(path, sizeof path, "%s/.waitscope-unseen/%s.%ld", dir, host, (long)getpid());
    FILE *out = fopen(path, "w");
    if (!out)
        return;
    int initialized = 0, finalized = 0;
    PMPI_Initialized(&initialized);
    PMPI_Finalized(&finalized);
    fprintf(out, "exe\t%s\ninitialized\t%d\n", exe, initialized || finalized);
    write_loaded(out);
    fclose(out);
}

void ws_unseen_watch(void)
{
    atexit(note_if_unseen);
}
