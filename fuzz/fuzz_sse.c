/* fuzz_sse.c — feeds arbitrary bytes to the SSE parser, split at a point
 * chosen by the first byte, and checks every event's data is NUL-terminated
 * at its length. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/sse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int check(void *arg, const cdsh_sse_event *ev)
{
    size_t *total = arg;
    if (ev->data[ev->data_len] != '\0' || !ev->event || !ev->id)
        abort();
    *total += ev->data_len;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t total = 0;
    cdsh_sse *p = cdsh_sse_new(4096, check, &total);
    if (!p)
        return 0;
    size_t cut = size ? data[0] % (size + 1) : 0;
    int rc = cdsh_sse_feed(p, (const char *)data, cut, NULL);
    if (rc == 0)
        rc = cdsh_sse_feed(p, (const char *)data + cut, size - cut, NULL);
    if (rc == 0)
        cdsh_sse_finish(p);
    if (total > size)
        abort(); /* data can only come from the input */
    cdsh_sse_free(p);
    return 0;
}
