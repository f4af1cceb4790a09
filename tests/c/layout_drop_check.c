/* The in-process transport keeps what it holds when its mailboxes indexed
 * by message go (set_layout(NULL)): between processes, a faster process's
 * first payloads of the next replay may already be stored when this one
 * drops the layout.  Payloads of every kind (inline, heap, the bulk arena
 * of a join's first phase) must come out of take afterwards, unchanged,
 * and an id never posted must still block.  A message posted twice
 * is refused, the first payload kept.  Prints "ok". */
#include <stdio.h>
#include <string.h>

#include "replay/transport.h"
#include "waitscope.h"

static int fails;

static void expect(int cond, const char *what)
{
    if (!cond) {
        printf("FAILED: %s\n", what);
        fails++;
    }
}

static void expect_payload(ws_transport *tr, uint32_t loc, uint64_t id, int channel, const void *want, size_t n,
                           const char *what)
{
    const void *data = NULL;
    size_t size = 0;
    ws_error err;
    memset(&err, 0, sizeof err);
    int rc = tr->ops->take(tr, loc, id, channel, &data, &size, &err);
    expect(rc == WS_OK, what);
    if (rc == WS_OK) {
        expect(size == n, what);
        expect(size == n && memcmp(data, want, n) == 0, what);
        tr->ops->release(tr, loc, id, channel);
    }
}

int main(void)
{
    ws_error err;
    memset(&err, 0, sizeof err);
    ws_transport *tr = ws_transport_local_new(3);
    if (!tr) {
        printf("FAILED: no transport\n");
        return 1;
    }
    const uint64_t counts[3] = {2, 3, 1};
    expect(tr->ops->set_layout(tr, counts, 3, &err) == WS_OK, "set_layout");
    const char small[] = "abc";
    unsigned char large[100];
    for (size_t i = 0; i < sizeof large; i++)
        large[i] = (unsigned char)(i * 7 + 1);
    const char bulk[] = "from the bulk arena";
    expect(tr->ops->post(tr, 1, ws_message_id(0, 1), 0, small, sizeof small, &err) == WS_OK, "post inline");
    expect(tr->ops->post(tr, 0, ws_message_id(1, 2), 1, large, sizeof large, &err) == WS_OK, "post heap");
    tr->bulk = 1;
    expect(tr->ops->post(tr, 2, ws_message_id(2, 0), 0, bulk, sizeof bulk, &err) == WS_OK, "post bulk");
    expect(tr->ops->post(tr, 2, ws_message_id(1, 0), 0, "", 0, &err) == WS_OK, "post empty bulk");
    tr->bulk = 0;
    expect(tr->ops->set_layout(tr, NULL, 0, &err) == WS_OK, "drop the layout");
    expect_payload(tr, 1, ws_message_id(0, 1), 0, small, sizeof small, "inline payload after the drop");
    expect_payload(tr, 0, ws_message_id(1, 2), 1, large, sizeof large, "heap payload after the drop");
    expect_payload(tr, 2, ws_message_id(2, 0), 0, bulk, sizeof bulk, "bulk payload after the drop");
    expect_payload(tr, 2, ws_message_id(1, 0), 0, "", 0, "empty bulk payload after the drop");
    const void *data;
    size_t size;
    expect(tr->ops->take(tr, 0, ws_message_id(0, 0), 0, &data, &size, &err) == WS_BLOCKED,
           "a message never posted blocks");
    /* posted after the drop: the maps hold it */
    expect(tr->ops->post(tr, 0, ws_message_id(0, 0), 0, small, sizeof small, &err) == WS_OK, "post after the drop");
    /* the same message again: refused, and the first payload stays */
    expect(tr->ops->post(tr, 0, ws_message_id(0, 0), 0, large, sizeof large, &err) == WS_ERR_MATCH &&
               strstr(err.message, "posted twice") != NULL,
           "a message posted twice is refused");
    expect_payload(tr, 0, ws_message_id(0, 0), 0, small, sizeof small, "payload posted after the drop");
    /* released: the same id may come again (the next replay) */
    expect(tr->ops->post(tr, 0, ws_message_id(0, 0), 0, large, sizeof large, &err) == WS_OK, "post after release");
    expect_payload(tr, 0, ws_message_id(0, 0), 0, large, sizeof large, "payload posted after release");
    tr->ops->destroy(tr);
    if (fails)
        return 1;
    printf("ok\n");
    return 0;
}
