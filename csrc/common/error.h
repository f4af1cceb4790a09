/* Error reporting for the waitscope C core.
 *
 * Every fallible function takes a `ws_error *` as its last argument and
 * returns a status code (WS_OK on success).  On failure the error carries
 * a human-readable message that names the file or object concerned.
 * Nothing in the core prints or exits.
 */
#ifndef WS_COMMON_ERROR_H
#define WS_COMMON_ERROR_H

#include <stddef.h>

#include "../waitscope.h" /* enum ws_status, ws_error, ws_error_clear, ws_status_name */


/* Returned by non-blocking transport calls when data is not there yet. */
#define WS_BLOCKED (-1)


/* Sets code and a printf-style message; returns code for tail calls. */
int ws_error_set(ws_error *err, int code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Prefixes the existing message with more context ("file x: ..."). */
int ws_error_prefix(ws_error *err, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Convenience: out-of-memory error with the name of what was allocated. */
int ws_error_nomem(ws_error *err, const char *what);

/* Invariant checks, as Lua's api_check: WS_CHECK(cond, err) is WS_OK when
 * the kernel's own bookkeeping holds.  In checked builds (WS_CHECKS, set
 * by the sanitizer build) a false `cond` sets WS_ERR_INTERNAL naming the
 * file, line and condition and returns that code; in release builds the
 * condition is not evaluated at all.  Use:
 *     if ((rc = WS_CHECK(n == expected, err)) != WS_OK) goto fail;
 * Conditions that depend on input (files, arguments, other processes'
 * data) are checked always, with their own error codes, never with this. */
#ifdef WS_CHECKS
int ws_check_failed(ws_error *err, const char *file, int line, const char *condition);
#define WS_CHECK(cond, err) ((cond) ? WS_OK : ws_check_failed((err), __FILE__, __LINE__, #cond))
#else
#define WS_CHECK(cond, err) ((void)sizeof(cond), WS_OK)
#endif

#endif
