/* Per-rank trace files (see rawtrace.h).  Events are written into a
 * window of the rank's event file mapped into memory (MAP_SHARED); when the
 * window is full the file grows and the next window is mapped, so memory
 * stays bounded for any run length and no system call is made per event.
 * Because the pages belong to the file, every event recorded so far
 * survives the death of the process, even by SIGKILL (which is how the
 * MPICH launcher ends the other ranks after MPI_Abort).  The unused tail of
 * the last window is zero (kind 0) and cut off when the file is closed or
 * skipped by the reader.  Definition lines are written through at once.
 * Before MPI_Init names the files, events go to a growing heap block. */
#define _GNU_SOURCE
#include "pmpi.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define BLOCK_RECORDS 32768 /* 1.25 MiB: the default window */
#define WINDOW_ALIGN 512     /* records: 20 KiB, a whole number of pages */

size_t ws_tracer_window_records(const char *text)
{
    if (!text || !*text)
        return BLOCK_RECORDS;
    char *end;
    double v = strtod(text, &end);
    double unit = 1.0;
    switch (*end) {
    case 'k':
    case 'K':
        unit = 1024.0, end++;
        break;
    case 'm':
    case 'M':
        unit = 1024.0 * 1024.0, end++;
        break;
    case 'g':
    case 'G':
        unit = 1024.0 * 1024.0 * 1024.0, end++;
        break;
    default:
        break;
    }
    if (*end == 'i')
        end++;
    if (*end == 'B' || *end == 'b')
        end++;
    if (*end != '\0' || !(v > 0.0) || v * unit > 64.0 * 1024 * 1024 * 1024)
        return BLOCK_RECORDS;
    size_t records = (size_t)(v * unit / (double)sizeof(ws_raw_event));
    records -= records % WINDOW_ALIGN;
    return records < WINDOW_ALIGN ? WINDOW_ALIGN : records;
}

static int map_window(ws_tracer *t, uint64_t window);

int ws_mkdir_p(const char *dir)
{
    char tmp[4096];
    size_t n = strlen(dir);
    if (n == 0 || n >= sizeof tmp)
        return -1;
    memcpy(tmp, dir, n + 1);
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(tmp, 0777) != 0 && errno != EEXIST)
            return -1;
        *p = '/';
    }
    if (mkdir(tmp, 0777) != 0 && errno != EEXIST)
        return -1;
    return 0;
}

int ws_tracer_setup(ws_tracer *t, const char *trace_dir)
{
    memset(t, 0, sizeof *t);
    pthread_mutex_init(&t->def_lock, NULL);
    t->evt_fd = t->def_fd = -1;
    t->window_records = ws_tracer_window_records(getenv("WAITSCOPE_BUFFER"));
    size_t n = strlen(trace_dir) + sizeof(WS_RAW_SUBDIR) + 2;
    t->dir = malloc(n);
    t->cap = BLOCK_RECORDS;
    t->buf = malloc(t->cap * sizeof *t->buf);
    if (!t->dir || !t->buf) {
        free(t->dir);
        free(t->buf);
        t->dir = NULL;
        t->buf = NULL;
        return -1;
    }
    snprintf(t->dir, n, "%s/%s", trace_dir, WS_RAW_SUBDIR);
    ws_buffer_init(&t->pending);
    t->on = 1;
    return 0;
}

static void write_all(int fd, const void *data, size_t n, int *failed)
{
    const char *p = data;
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            *failed = 1;
            return;
        }
        p += w;
        n -= (size_t)w;
    }
}

void ws_tracer_remove_stale(const ws_tracer *t, const char *trace_dir)
{
    if (!t->on || !trace_dir)
        return;
    char path[4096];
    snprintf(path, sizeof path, "%s/traces.otf2", trace_dir);
    unlink(path);
    DIR *d = opendir(t->dir);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t n = strlen(e->d_name);
        if (e->d_name[0] == 'p' &&
            ((n > 4 && strcmp(e->d_name + n - 4, ".evt") == 0) || (n > 5 && strcmp(e->d_name + n - 5, ".defs") == 0))) {
            snprintf(path, sizeof path, "%s/%s", t->dir, e->d_name);
            unlink(path);
        }
    }
    closedir(d);
}

int ws_tracer_open(ws_tracer *t, int rank, int size, const char *host, uint64_t start)
{
    if (!t->on)
        return 0;
    if (ws_mkdir_p(t->dir) != 0) {
        t->failed = 1;
        return -1;
    }
    pid_t pid = getpid();
    snprintf(t->evt_path, sizeof t->evt_path, "%s/p%ld.evt", t->dir, (long)pid);
    snprintf(t->def_path, sizeof t->def_path, "%s/p%ld.defs", t->dir, (long)pid);
    t->evt_fd = open(t->evt_path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    t->def_fd = open(t->def_path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0666);
    if (t->evt_fd < 0 || t->def_fd < 0) {
        t->failed = 1;
        return -1;
    }
    char line[512];
    int n = snprintf(line, sizeof line, "rank\t%d\t%d\t%ld\t%s\nstart\t%llu\n", rank, size, (long)pid, host,
                     (unsigned long long)start);
    pthread_mutex_lock(&t->def_lock);
    write_all(t->def_fd, line, (size_t)n, &t->failed);
    if (t->pending.size)
        write_all(t->def_fd, t->pending.data, t->pending.size, &t->failed);
    ws_buffer_free(&t->pending);
    pthread_mutex_unlock(&t->def_lock);
    ws_raw_event *early = t->buf;
    size_t n_early = t->n;
    if (map_window(t, 0) != 0) {
        t->buf = early;
        t->failed = 1;
        return -1;
    }
    for (size_t i = 0; i < n_early && !t->failed; i++)
        ws_tracer_event(t, &early[i]);
    free(early);
    return t->failed ? -1 : 0;
}

int ws_tracer_setup_thread(ws_tracer *t)
{
    memset(t, 0, sizeof *t);
    t->evt_fd = t->def_fd = -1;
    t->window_records = ws_tracer_window_records(getenv("WAITSCOPE_BUFFER"));
    t->cap = 1024;
    t->buf = malloc(t->cap * sizeof *t->buf);
    if (!t->buf)
        return -1;
    t->on = 1;
    return 0;
}

int ws_tracer_open_events(ws_tracer *t, const char *path)
{
    if (!t->on || t->evt_fd >= 0)
        return t->failed ? -1 : 0;
    snprintf(t->evt_path, sizeof t->evt_path, "%s", path);
    t->evt_fd = open(t->evt_path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (t->evt_fd < 0) {
        t->failed = 1;
        return -1;
    }
    ws_raw_event *early = t->buf;
    size_t n_early = t->n;
    if (map_window(t, 0) != 0) {
        t->buf = early;
        t->failed = 1;
        return -1;
    }
    for (size_t i = 0; i < n_early && !t->failed; i++)
        ws_tracer_event(t, &early[i]);
    free(early);
    return t->failed ? -1 : 0;
}

void ws_tracer_def(ws_tracer *t, const char *fmt, ...)
{
    if (!t->on)
        return;
    char small[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    char *text = small;
    if ((size_t)n >= sizeof small) {
        text = malloc((size_t)n + 1);
        if (!text)
            return;
        va_start(ap, fmt);
        vsnprintf(text, (size_t)n + 1, fmt, ap);
        va_end(ap);
    }
    pthread_mutex_lock(&t->def_lock);
    if (t->def_fd >= 0)
        write_all(t->def_fd, text, (size_t)n, &t->failed);
    else if (ws_buffer_append(&t->pending, text, (size_t)n) != 0)
        t->failed = 1;
    pthread_mutex_unlock(&t->def_lock);
    if (text != small)
        free(text);
}

static int map_window(ws_tracer *t, uint64_t window)
{
    size_t bytes = t->window_records * sizeof(ws_raw_event);
    if (ftruncate(t->evt_fd, (off_t)((window + 1) * bytes)) != 0)
        return -1;
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, t->evt_fd, (off_t)(window * bytes));
    if (p == MAP_FAILED)
        return -1;
    t->buf = p;
    t->cap = t->window_records;
    t->n = 0;
    t->window = window;
    t->mapped = 1;
    return 0;
}

static void unmap(ws_tracer *t)
{
    if (t->mapped)
        munmap(t->buf, t->window_records * sizeof(ws_raw_event));
    t->mapped = 0;
    t->buf = NULL;
}

/* Moves to the next window of the file. */
static int next_window(ws_tracer *t)
{
    uint64_t w = t->window + 1;
    t->written += t->n;
    unmap(t);
    if (map_window(t, w) != 0) {
        t->failed = 1;
        return -1;
    }
    return 0;
}

void ws_tracer_event(ws_tracer *t, const ws_raw_event *e)
{
    if (!t->on || t->failed)
        return;
    if (t->n == t->cap) {
        if (t->mapped) {
            if (next_window(t) != 0)
                return;
        } else {
            /* before MPI_Init names the file: grow (pre-initialisation
             * activity is short) */
            size_t cap = t->cap * 2;
            ws_raw_event *b = realloc(t->buf, cap * sizeof *b);
            if (!b) {
                t->failed = 1;
                return;
            }
            t->buf = b;
            t->cap = cap;
        }
    }
    t->buf[t->n++] = *e;
}

uint64_t ws_tracer_count(const ws_tracer *t)
{
    return t->written + t->n;
}

void ws_tracer_close(ws_tracer *t)
{
    if (!t->on)
        return;
    uint64_t total = ws_tracer_count(t);
    if (t->mapped) {
        unmap(t);
        if (ftruncate(t->evt_fd, (off_t)(total * sizeof(ws_raw_event))) != 0)
            t->failed = 1;
    } else {
        free(t->buf);
        t->buf = NULL;
    }
    if (t->evt_fd >= 0)
        close(t->evt_fd);
    if (t->def_fd >= 0)
        close(t->def_fd);
    t->evt_fd = t->def_fd = -1;
    free(t->dir);
    t->dir = NULL;
    t->on = 0;
    ws_buffer_free(&t->pending);
}

/* ---- dying ranks ---------------------------------------------------------- */

static const int fatal_signals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTERM, SIGINT, SIGQUIT};
#define N_FATAL (sizeof fatal_signals / sizeof fatal_signals[0])

static void on_fatal_signal(int sig)
{
    ws_tracer *t = &ws_pmpi_g.tracer;
    if (!ws_pmpi_g.done && t->on && t->def_fd >= 0) {
        ws_pmpi_g.done = 1;
        char line[32] = "signal\t";
        size_t n = 7;
        char digits[12];
        int k = 0, v = sig;
        do {
            digits[k++] = (char)('0' + v % 10);
            v /= 10;
        } while (v && k < 11);
        while (k)
            line[n++] = digits[--k];
        line[n++] = '\n';
        int failed = 0;
        write_all(t->def_fd, line, n, &failed);
    }
    /* hand the signal on: the previous handler (the MPI library's or the
     * default action) runs when it is raised again */
    for (size_t i = 0; i < N_FATAL; i++)
        if (fatal_signals[i] == sig)
            sigaction(sig, &ws_pmpi_g.tracer.previous[i], NULL);
    raise(sig);
}

void ws_tracer_install_crash_handlers(void)
{
    for (size_t i = 0; i < N_FATAL; i++) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_fatal_signal;
        sigemptyset(&sa.sa_mask);
        sa.sa_flags = SA_RESETHAND | SA_NODEFER;
        sigaction(fatal_signals[i], &sa, &ws_pmpi_g.tracer.previous[i]);
    }
}
