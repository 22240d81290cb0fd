/* bench_json.c — cdsh_json_parse, the lossless check and compact dump on a
 * ~1 MiB document of typical tool-result shape. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/json.h"
#include "base/strbuf.h"

int main(void)
{
    cdsh_strbuf sb;
    cdsh_strbuf_init(&sb);
    cdsh_strbuf_append_str(&sb, "{\"items\":[");
    for (int i = 0; i < 8000; i++)
        cdsh_strbuf_appendf(&sb,
                            "%s{\"id\":%d,\"name\":\"file_%d.c\",\"size\":%d.25,\"tags\":[\"src\","
                            "\"中文\"],\"ok\":true,\"note\":null}",
                            i ? "," : "", i, i, i * 7);
    cdsh_strbuf_append_str(&sb, "]}");
    double mib = (double)sb.len / (1 << 20);
    int64_t best_parse = INT64_MAX, best_check = INT64_MAX, best_dump = INT64_MAX;
    for (int r = 0; r < 5; r++) {
        int64_t t0 = cdsh_clock_mono_ns();
        json_t *v = cdsh_json_parse(sb.data, sb.len, 0, NULL);
        int64_t t1 = cdsh_clock_mono_ns();
        int rc = cdsh_json_check_lossless(v, NULL, NULL);
        int64_t t2 = cdsh_clock_mono_ns();
        char *out = cdsh_json_dump_compact_dup(v);
        int64_t t3 = cdsh_clock_mono_ns();
        if (!v || rc || !out)
            return 1;
        free(out);
        json_decref(v);
        best_parse = t1 - t0 < best_parse ? t1 - t0 : best_parse;
        best_check = t2 - t1 < best_check ? t2 - t1 : best_check;
        best_dump = t3 - t2 < best_dump ? t3 - t2 : best_dump;
    }
    printf("json document %.2f MiB\n", mib);
    printf("json parse          %8.2f ms  %7.1f MiB/s\n", best_parse / 1e6,
           mib / (best_parse / 1e9));
    printf("json check_lossless %8.2f ms  %7.1f MiB/s\n", best_check / 1e6,
           mib / (best_check / 1e9));
    printf("json dump_compact   %8.2f ms  %7.1f MiB/s\n", best_dump / 1e6, mib / (best_dump / 1e9));
    cdsh_strbuf_deinit(&sb);
    return 0;
}
