/* OTF2's process-wide error handler: installed once, never replaced. */
#include "otf2_io.h"

#include <pthread.h>
#include <stdarg.h>

#include <otf2/otf2.h>

/* OTF2 prints its errors to stderr unless a handler is registered.  The
 * core reports errors through ws_error instead, so this handler only
 * returns the code.  It keeps no state. */
static OTF2_ErrorCode silent_otf2_errors(void *user, const char *file, uint64_t line, const char *function,
                                         OTF2_ErrorCode code, const char *fmt, va_list va)
{
    (void)user;
    (void)file;
    (void)line;
    (void)function;
    (void)fmt;
    (void)va;
    return code;
}

static void install(void)
{
    OTF2_Error_RegisterCallback(silent_otf2_errors, NULL);
}

void ws_otf2_silence(void)
{
    /* the one piece of process-wide state: OTF2's handler is itself
     * process-wide, and replacing it on every call would undo a host's */
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, install);
}
