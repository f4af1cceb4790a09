/* The kernel's one allocation helper: every allocation of csrc/common,
 * trace, replay, analysis and api goes through these (free() releases).
 *
 * Built with WS_ALLOC_FAILURES (the sanitizer build, .ci/sanitize), the
 * helper can be told to fail: ws_alloc_fail_after(n) lets n more
 * allocations succeed and makes every later one return NULL, until
 * ws_alloc_fail_after(-1).  The tests loop n over open, load and analyze
 * so that every out-of-memory branch they reach runs.  Without the macro
 * the helpers are plain malloc/realloc/calloc with overflow checks and no
 * state. */
#ifndef WS_COMMON_ALLOC_H
#define WS_COMMON_ALLOC_H

#include <stddef.h>

/* Blocks of 4 MiB and more from these two are advised huge pages
 * (ws_advise_huge): written whole, they then cost a page fault per 2 MiB. */
void *ws_malloc(size_t size);
void *ws_realloc(void *p, size_t size);
/* calloc with an overflow check on count * size; never NULL for 0 bytes
 * unless allocation fails. */
void *ws_calloc(size_t count, size_t size);
/* ws_calloc for an array that will be written (or read) whole, such as a
 * record per site or per message: from 4 MiB on it is advised huge pages
 * like ws_malloc's blocks, below that it is written at once.  Not for
 * sparse ones (the result cube), which huge pages would make resident
 * 2 MiB at a time. */
void *ws_calloc_dense(size_t count, size_t size);

/* Asks the kernel to back the block p of `size` bytes (from the helpers
 * above) with transparent huge pages where it can: a large column that is
 * written once from start to end then costs one page fault per 2 MiB
 * instead of one per 4 KiB.  Only the 2 MiB-aligned interior of the block
 * is advised, so that the allocator's own headers and neighbours keep
 * their pages; blocks under 4 MiB and systems without MADV_HUGEPAGE are
 * left alone.  A hint: nothing to check, nothing changes for free(). */
void ws_advise_huge(void *p, size_t size);

/* Gives the pages of freed memory back to the system where the C
 * library keeps them (glibc: malloc_trim), so that blocks freed between
 * live ones no longer count in the resident set.  A hint, like
 * ws_advise_huge: nothing changes for the program. */
void ws_return_free_pages(void);

#ifdef WS_ALLOC_FAILURES
/* n >= 0: allocations after the next n fail; n < 0: none fails. */
void ws_alloc_fail_after(long long n);
/* Allocations made since the process started (successful or not). */
unsigned long long ws_alloc_count(void);
#endif

#endif
