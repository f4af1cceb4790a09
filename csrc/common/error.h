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

enum ws_status {
    WS_OK = 0,
    WS_ERR_IO = 1,          /* a file is missing or unreadable            */
    WS_ERR_FORMAT = 2,      /* a file is not what it claims to be         */
    WS_ERR_NOMEM = 3,       /* allocation failed                          */
    WS_ERR_ARGUMENT = 4,    /* a caller passed an invalid argument        */
    WS_ERR_INTERRUPTED = 5, /* the caller asked to stop (e.g. Ctrl-C)     */
    WS_ERR_MATCH = 6,       /* communication records do not match up      */
    WS_ERR_MPI = 7,         /* an MPI call failed                         */
    WS_ERR_INTERNAL = 8     /* a broken invariant inside the core         */
};

/* Returned by non-blocking transport calls when data is not there yet. */
#define WS_BLOCKED (-1)

typedef struct ws_error {
    int code;
    char message[1024];
} ws_error;

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

void ws_error_clear(ws_error *err);

/* Convenience: out-of-memory error with the name of what was allocated. */
int ws_error_nomem(ws_error *err, const char *what);

#endif
