/* fuzz_facade_analyzer.c — the analyzer's tokenizer and walker on arbitrary
 * source text: never crashes, every tool record has a valid UTF-8 name, a
 * positive line within the input, and the report, Markdown and both
 * proposals render. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/facade/analyze.h"
#include "plugins/facade/report.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *found = cdsh_facade_analyze_source((const char *)data, size, "lib/index.ts");
    if (!found)
        abort();
    size_t lines = 1;
    for (size_t i = 0; i < size; i++)
        lines += data[i] == '\n';
    size_t i;
    json_t *t;
    json_array_foreach(json_object_get(found, "tools"), i, t) {
        json_int_t line = json_integer_value(json_object_get(t, "line"));
        if (!json_is_string(json_object_get(t, "name")) || line < 1 || (size_t)line > lines)
            abort();
    }
    json_t *scanned = json_pack("[s]", "lib/index.ts");
    json_t *report = cdsh_facade_analyze_build("fuzz", scanned, json_object_get(found, "tools"),
                                               json_object_get(found, "capabilities"));
    if (!report)
        abort();
    char *md = cdsh_facade_report_full_dup(report, 1);
    if (!md)
        abort();
    free(md);
    json_decref(report);
    json_decref(scanned);
    json_decref(found);
    return 0;
}
