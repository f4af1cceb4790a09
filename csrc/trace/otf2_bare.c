/* The bare read of the benchmarks (ws_otf2_bare_read): the file work of
 * ws_otf2_open + ws_otf2_load_events decoded by libotf2 with callbacks that
 * do nothing, the baseline the store build is measured against. */
#include "otf2_io.h"
#include "otf2_check.h"
#include "otf2_reader_int.h"

#include <stdlib.h>

#include <otf2/otf2.h>

/* ---- bare read (benchmark baseline) ------------------------------------- */

/* Collects the location ids while the global definitions are decoded; no
 * other definition record has a callback. */
typedef struct bare_defs {
    uint64_t *ids;
    size_t n, cap;
} bare_defs;

static OTF2_CallbackCode bare_on_location(void *user, OTF2_LocationRef self, OTF2_StringRef name,
                                          OTF2_LocationType type, uint64_t n_events, OTF2_LocationGroupRef group)
{
    (void)name;
    (void)type;
    (void)n_events;
    (void)group;
    bare_defs *d = user;
    if (ws_grow((void **)&d->ids, &d->cap, d->n + 1, sizeof *d->ids) != 0)
        return OTF2_CALLBACK_INTERRUPT;
    d->ids[d->n++] = self;
    return OTF2_CALLBACK_SUCCESS;
}

/* OTF2's global event reader over every location (its own merge by
 * timestamp), with global callbacks that do nothing. */
static int bare_read_global(OTF2_Reader *reader, const char *anchor, const bare_defs *d, uint64_t *n_records,
                            ws_error *err)
{
    for (size_t i = 0; i < d->n; i++) {
        OTF2_DefReader *dr = OTF2_Reader_GetDefReader(reader, d->ids[i]);
        if (dr) {
            uint64_t nd = 0;
            OTF2_Reader_ReadAllLocalDefinitions(reader, dr, &nd);
            OTF2_Reader_CloseDefReader(reader, dr);
        }
        if (!OTF2_Reader_GetEvtReader(reader, d->ids[i]))
            return ws_error_set(err, WS_ERR_FORMAT, "%s: cannot open the event file of location %llu", anchor,
                                (unsigned long long)d->ids[i]);
    }
    OTF2_GlobalEvtReader *ger = OTF2_Reader_GetGlobalEvtReader(reader);
    if (!ger)
        return ws_error_set(err, WS_ERR_FORMAT, "%s: cannot open the global event reader", anchor);
    OTF2_GlobalEvtReaderCallbacks *cbs = OTF2_GlobalEvtReaderCallbacks_New();
    int rc = WS_OK;
    if (!cbs) {
        rc = ws_error_nomem(err, "event callbacks");
    } else {
        OTF2_ErrorCode s = OTF2_Reader_RegisterGlobalEvtCallbacks(reader, ger, cbs, NULL);
        if (s == OTF2_SUCCESS)
            s = OTF2_Reader_ReadAllGlobalEvents(reader, ger, n_records);
        if (s != OTF2_SUCCESS)
            rc = ws_error_set(err, WS_ERR_FORMAT, "%s: reading events failed: %s", anchor,
                              OTF2_Error_GetDescription(s));
        OTF2_GlobalEvtReaderCallbacks_Delete(cbs);
    }
    OTF2_Reader_CloseGlobalEvtReader(reader, ger);
    return rc;
}

/* The file work of ws_otf2_open + ws_otf2_load_events (anchor, global
 * definitions once, then per location its local definitions and events),
 * decoded by OTF2 with callbacks that do nothing; with `global`, the events
 * of all locations through OTF2's global event reader instead. */
int ws_otf2_bare_read(const char *path, int global, uint64_t *n_records, ws_error *err)
{
    *n_records = 0;
    char *anchor = NULL;
    OTF2_Reader *reader = NULL;
    int rc = ws_otf2_open_anchor(path, &anchor, &reader, err);
    if (rc)
        return rc;
    char *directory = ws_otf2_archive_directory(anchor);
    if (!directory) {
        OTF2_Reader_Close(reader);
        free(anchor);
        return ws_error_nomem(err, "path");
    }

    bare_defs d = {NULL, 0, 0};
    OTF2_ErrorCode s = OTF2_ERROR_MEM_ALLOC_FAILED;
    OTF2_GlobalDefReader *defs = OTF2_Reader_GetGlobalDefReader(reader);
    OTF2_GlobalDefReaderCallbacks *gcbs = OTF2_GlobalDefReaderCallbacks_New();
    if (defs && gcbs) {
        OTF2_GlobalDefReaderCallbacks_SetLocationCallback(gcbs, bare_on_location);
        s = OTF2_Reader_RegisterGlobalDefCallbacks(reader, defs, gcbs, &d);
        uint64_t n_defs = 0;
        if (s == OTF2_SUCCESS)
            s = OTF2_Reader_ReadAllGlobalDefinitions(reader, defs, &n_defs);
    }
    if (gcbs)
        OTF2_GlobalDefReaderCallbacks_Delete(gcbs);
    if (defs)
        OTF2_Reader_CloseGlobalDefReader(reader, defs);
    if (s != OTF2_SUCCESS)
        rc = ws_error_set(err, WS_ERR_FORMAT, "%s.def (global definitions): %s", directory,
                          OTF2_Error_GetDescription(s));

    for (size_t i = 0; i < d.n && rc == WS_OK; i++)
        if (OTF2_Reader_SelectLocation(reader, d.ids[i]) != OTF2_SUCCESS)
            rc = ws_error_set(err, WS_ERR_FORMAT, "cannot select location %llu", (unsigned long long)d.ids[i]);
    if (rc == WS_OK) {
        OTF2_Reader_OpenDefFiles(reader);
        if (OTF2_Reader_OpenEvtFiles(reader) != OTF2_SUCCESS)
            rc = ws_error_set(err, WS_ERR_FORMAT, "%s: cannot open event files", anchor);
    }
    if (rc == WS_OK && global) {
        rc = bare_read_global(reader, anchor, &d, n_records, err);
        d.n = 0; /* done: skip the per-location loop */
    }
    OTF2_EvtReaderCallbacks *cbs = rc == WS_OK && d.n ? OTF2_EvtReaderCallbacks_New() : NULL;
    if (rc == WS_OK && d.n && !cbs)
        rc = ws_error_nomem(err, "event callbacks");
    for (size_t i = 0; i < d.n && rc == WS_OK; i++) {
        char *evt_path = ws_otf2_location_file(directory, d.ids[i], "evt");
        char *def_path = ws_otf2_location_file(directory, d.ids[i], "def");
        if (!evt_path || !def_path) {
            rc = ws_error_nomem(err, "path");
        } else if (!ws_otf2_is_regular_file(evt_path)) {
            rc = ws_error_set(err, WS_ERR_IO, "%s: event file is missing", evt_path);
        } else {
            if (ws_otf2_is_regular_file(def_path)) {
                OTF2_DefReader *dr = OTF2_Reader_GetDefReader(reader, d.ids[i]);
                if (dr) {
                    uint64_t nd = 0;
                    OTF2_Reader_ReadAllLocalDefinitions(reader, dr, &nd);
                    OTF2_Reader_CloseDefReader(reader, dr);
                }
            }
            OTF2_EvtReader *er = OTF2_Reader_GetEvtReader(reader, d.ids[i]);
            if (!er) {
                rc = ws_error_set(err, WS_ERR_FORMAT, "%s: cannot open the event file", evt_path);
            } else {
                OTF2_EvtReader_SetCallbacks(er, cbs, NULL);
                uint64_t n = 0;
                s = OTF2_EvtReader_ReadEvents(er, OTF2_UNDEFINED_UINT64, &n);
                if (s != OTF2_SUCCESS)
                    rc = ws_error_set(err, WS_ERR_FORMAT, "%s: reading events failed: %s", evt_path,
                                      OTF2_Error_GetDescription(s));
                *n_records += n;
                OTF2_Reader_CloseEvtReader(reader, er);
            }
        }
        free(evt_path);
        free(def_path);
    }
    if (cbs)
        OTF2_EvtReaderCallbacks_Delete(cbs);
    OTF2_Reader_CloseEvtFiles(reader);
    OTF2_Reader_CloseDefFiles(reader);
    OTF2_Reader_Close(reader);
    free(d.ids);
    free(directory);
    free(anchor);
    return rc;
}
