/* The allocation helper (see alloc.h). */
#ifdef __linux__
#define _DEFAULT_SOURCE /* madvise, MADV_HUGEPAGE */
#endif
#include "alloc.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#ifdef __linux__
#include <sys/mman.h>
#endif
#ifdef __GLIBC__
#include <malloc.h>
#endif

#ifdef WS_ALLOC_FAILURES
#include <stdatomic.h>

/* The one piece of process-wide mutable state of the kernel, and only in
 * the sanitizer build: the failure switch of the tests. */
static struct {
    atomic_llong remaining; /* < 0: off */
    atomic_ullong count;
} failures = {-1, 0};

void ws_alloc_fail_after(long long n)
{
    atomic_store(&failures.remaining, n < 0 ? -1 : n);
}

unsigned long long ws_alloc_count(void)
{
    return atomic_load(&failures.count);
}

static int should_fail(void)
{
    atomic_fetch_add(&failures.count, 1);
    long long r = atomic_load(&failures.remaining);
    while (r > 0 && !atomic_compare_exchange_weak(&failures.remaining, &r, r - 1))
        ;
    return r == 0;
}
#define FAIL_HERE() should_fail()
#else
#define FAIL_HERE() 0
#endif

/* Blocks from this size on are advised huge pages (ws_advise_huge): the
 * kernel's arrays that are written whole.  Zeroed ones only when their
 * caller says they are dense (ws_calloc_dense): others are often written
 * sparsely (the result cube), and huge pages would make every 2 MiB they
 * touch resident. */
#define HUGE_FROM ((size_t)4 << 20)

static void *advised(void *p, size_t size)
{
    if (p && size >= HUGE_FROM)
        ws_advise_huge(p, size);
    return p;
}

void *ws_malloc(size_t size)
{
    return FAIL_HERE() ? NULL : advised(malloc(size ? size : 1), size);
}

void *ws_realloc(void *p, size_t size)
{
    return FAIL_HERE() ? NULL : advised(realloc(p, size ? size : 1), size);
}

void *ws_calloc(size_t count, size_t size)
{
    if (count == 0 || size == 0)
        count = size = 1;
    if (count > SIZE_MAX / size)
        return NULL;
    return FAIL_HERE() ? NULL : calloc(count, size);
}

void *ws_calloc_dense(size_t count, size_t size)
{
    if (size == 0 || count <= (HUGE_FROM - 1) / size) {
        /* written now: calloc leaves fresh pages unmapped, and an array
         * that is read before it is written (a mailbox, a row's wait
         * tested before it is set) would map the shared zero page first;
         * replacing it on the write then costs every thread of the process
         * a TLB flush, per 4 KiB page */
        void *p = ws_malloc(count * size); /* (below 4 MiB: no overflow) */
        return p ? memset(p, 0, count * size) : NULL;
    }
    void *p = ws_calloc(count, size);
    /* calloc leaves a fresh mapping untouched: its pages are still to be
     * faulted in, now 2 MiB at a time (a reused block, which calloc
     * zeroes, is resident already) */
    return p ? advised(p, count * size) : NULL;
}

void ws_advise_huge(void *p, size_t size)
{
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    const uintptr_t huge = (uintptr_t)2 << 20;
    if (!p || size < 2 * huge)
        return;
    uintptr_t begin = ((uintptr_t)p + huge - 1) & ~(huge - 1);
    uintptr_t end = ((uintptr_t)p + size) & ~(huge - 1);
    if (end > begin)
        (void)madvise((void *)begin, end - begin, MADV_HUGEPAGE);
#else
    (void)p;
    (void)size;
#endif
}

/* (Under AddressSanitizer its allocator serves every block and glibc's
 * is never set up: malloc_trim would set it up, racing with another
 * thread doing the same, and trim nothing.) */
#if defined(__SANITIZE_ADDRESS__)
#define WS_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define WS_ASAN 1
#endif
#endif

void ws_return_free_pages(void)
{
#if defined(__GLIBC__) && !defined(WS_ASAN)
    malloc_trim(0);
#endif
}
