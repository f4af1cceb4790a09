#include "error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int ws_error_set(ws_error *err, int code, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->message, sizeof err->message, fmt, ap);
        va_end(ap);
        err->code = code;
    }
    return code;
}

int ws_error_prefix(ws_error *err, const char *fmt, ...)
{
    if (!err)
        return WS_ERR_INTERNAL;
    char prefix[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    char old[sizeof err->message];
    memcpy(old, err->message, sizeof old);
    size_t n = strlen(prefix);
    if (n > sizeof err->message - 3)
        n = sizeof err->message - 3;
    memcpy(err->message, prefix, n);
    err->message[n] = ':';
    err->message[n + 1] = ' ';
    size_t room = sizeof err->message - n - 2;
    size_t m = strlen(old);
    if (m >= room)
        m = room - 1;
    memcpy(err->message + n + 2, old, m);
    err->message[n + 2 + m] = '\0';
    return err->code;
}

void ws_error_clear(ws_error *err)
{
    if (err) {
        err->code = WS_OK;
        err->message[0] = '\0';
    }
}

int ws_error_nomem(ws_error *err, const char *what)
{
    return ws_error_set(err, WS_ERR_NOMEM, "out of memory while allocating %s", what);
}

const char *ws_status_name(int status)
{
    static const char *const names[WS_STATUS_COUNT] = {
        [WS_OK] = "WS_OK",
        [WS_ERR_IO] = "WS_ERR_IO",
        [WS_ERR_FORMAT] = "WS_ERR_FORMAT",
        [WS_ERR_NOMEM] = "WS_ERR_NOMEM",
        [WS_ERR_ARGUMENT] = "WS_ERR_ARGUMENT",
        [WS_ERR_INTERRUPTED] = "WS_ERR_INTERRUPTED",
        [WS_ERR_MATCH] = "WS_ERR_MATCH",
        [WS_ERR_MPI] = "WS_ERR_MPI",
        [WS_ERR_INTERNAL] = "WS_ERR_INTERNAL",
    };
    return status >= 0 && status < WS_STATUS_COUNT ? names[status] : "unknown status";
}

#ifdef WS_CHECKS
int ws_check_failed(ws_error *err, const char *file, int line, const char *condition)
{
    return ws_error_set(err, WS_ERR_INTERNAL, "%s:%d: broken invariant: %s", file, line, condition);
}
#endif
