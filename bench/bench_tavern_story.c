/* bench_tavern_story.c — cost of the story engine on a temporary directory:
 * logged floor writes (one fsynced transaction each), committing and undoing
 * a 20-write floor, BM25 memory search over 500 entries, and a branch
 * snapshot of that story. Prints figures; asserts nothing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/fs.h"
#include "plugins/tavern/memory.h"
#include "plugins/tavern/story.h"

int main(void)
{
    cdsh_tavern_memory_attach(); /* memory objects written through story.h are indexed */
    char dir[] = "/tmp/cdsh-bench-story-XXXXXX";
    if (!mkdtemp(dir))
        return 1;
    char path[256], snap[256];
    snprintf(path, sizeof path, "%s/s.db", dir);
    snprintf(snap, sizeof snap, "%s/snap.db", dir);
    cdsh_tavern_story *s = NULL;
    if (cdsh_tavern_story_create(path, "story-b", "card", "s-b", NULL, NULL) < 0 ||
        cdsh_tavern_story_open(path, &s, NULL) < 0)
        return 1;
    const char *words[] = {"castle",  "river", "dragon", "merchant", "银月",   "森林",
                           "lantern", "queen", "bridge", "storm",    "secret", "letter"};
    int64_t t0 = cdsh_clock_mono_ns();
    for (int i = 0; i < 500; i++) {
        char body[160];
        snprintf(body, sizeof body, "Entry %d: the %s near the %s keeps a %s.", i, words[i % 12],
                 words[(i * 7) % 12], words[(i * 5) % 12]);
        json_t *res = NULL;
        cdsh_tavern_memory_write(s, NULL, body, NULL, NULL, NULL, false, &res, NULL);
        json_decref(res);
    }
    int64_t t1 = cdsh_clock_mono_ns();
    printf("memory write (unlogged, fsync each): %.2f ms/op\n", (double)(t1 - t0) / 500 / 1e6);
    cdsh_tavern_story_floor_begin(s, "s-b", 1, NULL);
    t0 = cdsh_clock_mono_ns();
    for (int i = 0; i < 20; i++) {
        char key[32];
        snprintf(key, sizeof key, "k%d", i);
        json_t *v = json_integer(i);
        cdsh_tavern_story_put(s, "s-b#t1", CDSH_TAVERN_KIND_DOC, key, v, NULL, NULL);
        json_decref(v);
    }
    t1 = cdsh_clock_mono_ns();
    printf("logged floor write: %.2f ms/op\n", (double)(t1 - t0) / 20 / 1e6);
    t0 = cdsh_clock_mono_ns();
    cdsh_tavern_story_floor_commit(s, "s-b#t1", NULL);
    const char *names[] = {"s-b#t1"};
    cdsh_tavern_story_undo(s, names, 1, NULL, NULL);
    t1 = cdsh_clock_mono_ns();
    printf("commit + undo of a 20-record floor: %.2f ms\n", (double)(t1 - t0) / 1e6);
    t0 = cdsh_clock_mono_ns();
    int n = 200;
    for (int i = 0; i < n; i++) {
        json_t *hits = NULL;
        cdsh_tavern_memory_search(s, i % 2 ? "dragon secret" : "银月森林", 5, NULL, 0, &hits, NULL);
        json_decref(hits);
    }
    t1 = cdsh_clock_mono_ns();
    printf("memory search over 500 entries: %.2f ms/query\n", (double)(t1 - t0) / n / 1e6);
    t0 = cdsh_clock_mono_ns();
    cdsh__tavern_story_snapshot(s, snap, NULL);
    t1 = cdsh_clock_mono_ns();
    printf("branch snapshot (500 entries): %.2f ms\n", (double)(t1 - t0) / 1e6);
    cdsh_tavern_story_free(s);
    cdsh_fs_remove_tree(dir, NULL);
    return 0;
}
