/* Per-rank trace files (see rawtrace.h): events are collected in a fixed
 * block and appended to the rank's event file whenever the block is full,
 * so memory stays bounded for any run length; definition lines are written
 * through at once.  A rank that dies (MPI_Abort, a fatal signal, exit
 * without MPI_Finalize) flushes its block on the way out, so the
 * unification step finds everything up to the crash. */
#define _GNU_SOURCE
#include "pmpi.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define BLOCK_RECORDS 32768 /* 1.25 MiB */

static int mkdir_p(const char *dir)
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
    t->evt_fd = t->def_fd = -1;
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

int ws_tracer_open(ws_tracer *t, int rank, int size, const char *host, uint64_t start)
{
    if (!t->on)
        return 0;
    if (mkdir_p(t->dir) != 0) {
        t->failed = 1;
        return -1;
    }
    pid_t pid = getpid();
    snprintf(t->evt_path, sizeof t->evt_path, "%s/p%ld.evt", t->dir, (long)pid);
    snprintf(t->def_path, sizeof t->def_path, "%s/p%ld.defs", t->dir, (long)pid);
    t->evt_fd = open(t->evt_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    t->def_fd = open(t->def_path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0666);
    if (t->evt_fd < 0 || t->def_fd < 0) {
        t->failed = 1;
        return -1;
    }
    char line[512];
    int n = snprintf(line, sizeof line, "rank\t%d\t%d\t%ld\t%s\nstart\t%llu\n", rank, size, (long)pid, host,
                     (unsigned long long)start);
    write_all(t->def_fd, line, (size_t)n, &t->failed);
    if (t->pending.size)
        write_all(t->def_fd, t->pending.data, t->pending.size, &t->failed);
    ws_buffer_free(&t->pending);
    ws_tracer_flush(t);
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
    if (t->def_fd >= 0)
        write_all(t->def_fd, text, (size_t)n, &t->failed);
    else if (ws_buffer_append(&t->pending, text, (size_t)n) != 0)
        t->failed = 1;
    if (text != small)
        free(text);
}

void ws_tracer_flush(ws_tracer *t)
{
    if (!t->on || t->evt_fd < 0 || t->n == 0)
        return;
    write_all(t->evt_fd, t->buf, t->n * sizeof *t->buf, &t->failed);
    t->written += t->n;
    t->n = 0;
}

void ws_tracer_event(ws_tracer *t, const ws_raw_event *e)
{
    if (!t->on || t->failed)
        return;
    if (t->n == t->cap) {
        if (t->evt_fd >= 0) {
            ws_tracer_flush(t);
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
    ws_tracer_flush(t);
    if (t->evt_fd >= 0)
        close(t->evt_fd);
    if (t->def_fd >= 0)
        close(t->def_fd);
    t->evt_fd = t->def_fd = -1;
    free(t->buf);
    free(t->dir);
    t->buf = NULL;
    t->dir = NULL;
    t->on = 0;
}

/* ---- dying ranks ---------------------------------------------------------- */

static const int fatal_signals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTERM, SIGINT, SIGQUIT};
#define N_FATAL (sizeof fatal_signals / sizeof fatal_signals[0])

static void on_fatal_signal(int sig)
{
    ws_tracer *t = &ws_pmpi_g.tracer;
    if (!ws_pmpi_g.done && t->on && t->def_fd >= 0) {
        ws_pmpi_g.done = 1;
        ws_tracer_flush(t);
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
