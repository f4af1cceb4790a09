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

#endif
