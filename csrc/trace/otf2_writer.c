/* Trace store -> OTF2 archive, with the OTF2 C writer API. */
#include "otf2_io.h"

int ws_otf2_write(const ws_trace *t, const char *path, const ws_progress *progress, ws_error *err)
{
    (void)t;
    (void)progress;
    return ws_error_set(err, WS_ERR_INTERNAL, "%s: writing OTF2 is not available yet", path);
}
