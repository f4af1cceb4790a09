/* Internal to the threaded transport: the state its threads share (the
 * hub, thread_hub.c) and the hub's operations that transport_threads.c
 * uses.  What each field guards is said in transport_threads.c. */
#ifndef WS_REPLAY_THREAD_HUB_H
#define WS_REPLAY_THREAD_HUB_H
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include "transport_threads.h"

#include <pthread.h>
#include <stdatomic.h>

#include "../common/util.h"

/* What a waiting thread watches: changed (under the hub's lock) by a
 * record for it; read without the lock while it spins.  Padded so that
 * two threads' counters never share a cache line. */
typedef struct mailbox {
    atomic_uint_least64_t records;
    atomic_int_least64_t posted_at; /* when the last record came (ws_monotonic_ns) */
    atomic_int waiting; /* the thread ran out of work: senders deliver at once */
    unsigned char pad1[64 - sizeof(atomic_uint_least64_t) - sizeof(atomic_int_least64_t) - sizeof(atomic_int)];
    pthread_cond_t wake; /* the thread sleeps here (wait_once) */
    unsigned char pad2[64];
} mailbox;

typedef struct deposit {
    const void *data;
    size_t size;
    const uint32_t *dest;
    int flag;
    const ws_error *err;
} deposit;

struct ws_thread_hub {
    pthread_mutex_t lock;
    pthread_cond_t cond; /* the collectives' barrier */
    mailbox *box;        /* per thread */
    uint32_t n_box_conds; /* box[i].wake initialized for i below this */
    /* changed (under the lock) on an abort, a stall and a completed
     * replay: whatever a waiting thread must look at besides its inbox */
    atomic_uint_least64_t notice;
    int spin; /* 0: block at once (more threads than cores) */
    uint32_t n;
    uint32_t n_locations;
    const uint32_t *owner;
    ws_buffer *inbox;
    unsigned char *idle;
    unsigned char *in_finish;
    uint32_t n_idle;
    uint64_t generation;  /* replays completed by all threads */
    int stalled;          /* a replay stalled (then every wait fails) */
    int aborted;
    ws_error abort_err;
    uint32_t first_failure;
    /* collectives */
    uint32_t arrived;
    uint64_t barrier_gen;
    deposit *dep;
    /* threads owning members of each communicator */
    uint32_t n_comms;
    uint32_t **comm_threads;
    uint32_t *comm_n_threads;
    uint32_t *all_threads;
    uint32_t n_all_threads;
};

/* Called with the lock held: every waiting thread must look again. */
void ws_hub_notify_all(ws_thread_hub *h);
/* Called without the lock: spins until thread `me` got a record or the
 * hub a notice (then 1), at most `budget` nanoseconds (then 0). */
int ws_hub_spin_for_news(ws_thread_hub *h, uint32_t me, uint64_t records, uint64_t notice, int64_t budget);
/* The abort's error (called with the lock held). */
int ws_hub_aborted_error(ws_thread_hub *h, ws_error *err);
/* Called with the lock held by a thread about to wait: marks it idle and
 * returns 1 if that made the whole hub quiescent. */
int ws_hub_go_idle(ws_thread_hub *h, uint32_t me);
/* Waits (lock held) until thread `me` is woken; it is no longer idle. */
void ws_hub_wait_once(ws_thread_hub *h, uint32_t me);
/* Every thread arrives before any leaves.  With `abortable` an abort
 * releases the waiters (error); without, the barrier is one every thread
 * is sure to reach (the second half of a collective). */
int ws_hub_barrier(ws_thread_hub *h, int abortable, ws_error *err);

#endif
