/* Samples of the call stack between MPI calls (stack mode, tracing).
 *
 * The stacks seen at MPI calls cannot tell where the computation between
 * two calls ran: in a loop of compute_interior(); residual(); where only
 * residual calls MPI, every MPI call shows main/residual.  So, as
 * HPCToolkit and Score-P's sampling do, a timer on the CPU time of the
 * thread that initialised MPI interrupts it every WAITSCOPE_SAMPLING
 * milliseconds (5 by default; 0 turns sampling off) and the signal
 * handler stores the raw return addresses of the interrupted stack.  No
 * name is looked up in the handler: at the next MPI call (callpath.c) the
 * samples are named like the MPI calls' stacks and the trace moves through
 * them in time order with the same rule (the time between two
 * observations goes to the frames both share).  A sample taken inside an
 * MPI call, or while the library itself runs, is dropped.
 *
 * The timer counts the thread's own CPU time (a thread that sleeps or
 * waits in the kernel is not interrupted) and the signal goes to that
 * thread only (SIGEV_THREAD_ID); the handler is installed with SA_RESTART.
 * SIGPROF is used only if the program has no handler of its own for it
 * (gprof's -pg has).  Consecutive samples with the same return addresses
 * are stored once, with the time they were last seen; when the buffer is
 * full the last stack stands for the rest of the interval. */
#define _GNU_SOURCE
#include "pmpi.h"

#include <errno.h>
#include <execinfo.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define SAMPLES 512

static void on_sample(int sig, siginfo_t *info, void *context)
{
    (void)sig;
    (void)info;
    (void)context;
    ws_pmpi *g = &ws_pmpi_g;
    ws_sampler *s = &g->sampler;
    if (!s->on || !g->measuring || g->done || g->in_call || !s->buf)
        return;
    int saved = errno;
    void *addrs[WS_SAMPLE_DEPTH + 2];
    int n = backtrace(addrs, WS_SAMPLE_DEPTH + 2);
    /* addrs[0]: this handler, addrs[1]: the kernel's signal return
     * trampoline, addrs[2]: where the thread was interrupted */
    int skip = n > 2 ? 2 : n;
    uint64_t now = ws_now();
    ws_sample *last = s->n ? &s->buf[s->n - 1] : NULL;
    int m = n - skip;
    if (last && last->n == (uint32_t)m && m > 0 &&
        memcmp(last->addr + 1, addrs + skip + 1, (size_t)(m - 1) * sizeof(void *)) == 0) {
        last->t_last = now; /* the same callers: the same frames */
        errno = saved;
        return;
    }
    if (s->n == SAMPLES) {
        if (last)
            last->t_last = now;
        s->dropped++;
        errno = saved;
        return;
    }
    ws_sample *x = &s->buf[s->n];
    x->t_first = x->t_last = now;
    x->n = (uint32_t)m;
    memcpy(x->addr, addrs + skip, (size_t)m * sizeof(void *));
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    s->n++;
    errno = saved;
}

void ws_sampling_start(void)
{
    ws_pmpi *g = &ws_pmpi_g;
    ws_sampler *s = &g->sampler;
    const char *env = getenv("WAITSCOPE_SAMPLING");
    long ms = env && *env ? strtol(env, NULL, 10) : 5;
    if (ms <= 0 || !g->tracer.on || g->cp.instrument || g->cp.python)
        return;
    struct sigaction old;
    if (sigaction(SIGPROF, NULL, &old) != 0 || (old.sa_flags & SA_SIGINFO) ||
        (old.sa_handler != SIG_DFL && old.sa_handler != SIG_IGN))
        return; /* the program samples with SIGPROF itself */
    s->buf = calloc(SAMPLES, sizeof *s->buf);
    if (!s->buf)
        return;
    void *warm[4];
    backtrace(warm, 4); /* loads the unwinder now, not inside the handler */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_sample;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    clockid_t clock;
    struct sigevent ev;
    memset(&ev, 0, sizeof ev);
    ev.sigev_notify = SIGEV_THREAD_ID;
    ev.sigev_signo = SIGPROF;
#ifdef sigev_notify_thread_id
    ev.sigev_notify_thread_id = (pid_t)syscall(SYS_gettid);
#else
    ev._sigev_un._tid = (pid_t)syscall(SYS_gettid);
#endif
    if (pthread_getcpuclockid(pthread_self(), &clock) != 0 || sigaction(SIGPROF, &sa, &s->previous) != 0) {
        free(s->buf);
        s->buf = NULL;
        return;
    }
    if (timer_create(clock, &ev, &s->timer) != 0) {
        sigaction(SIGPROF, &s->previous, NULL);
        free(s->buf);
        s->buf = NULL;
        return;
    }
    struct itimerspec period;
    memset(&period, 0, sizeof period);
    period.it_interval.tv_sec = ms / 1000;
    period.it_interval.tv_nsec = (ms % 1000) * 1000000L;
    period.it_value = period.it_interval;
    s->interval_ns = (uint64_t)ms * 1000000u;
    s->on = 1;
    timer_settime(s->timer, 0, &period, NULL);
}

void ws_sampling_stop(void)
{
    ws_sampler *s = &ws_pmpi_g.sampler;
    if (!s->on)
        return;
    s->on = 0;
    timer_delete(s->timer);
    sigaction(SIGPROF, &s->previous, NULL);
    /* a signal already on its way finds s->on == 0; the buffer stays */
}

size_t ws_sampling_take(const ws_sample **samples)
{
    ws_sampler *s = &ws_pmpi_g.sampler;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    *samples = s->buf;
    return s->buf ? s->n : 0;
}

void ws_sampling_clear(void)
{
    ws_sampler *s = &ws_pmpi_g.sampler;
    s->n = 0;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
}
