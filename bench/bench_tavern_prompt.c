/* bench_tavern_prompt.c — the issue 12 target: world-info activation plus
 * prompt assembly for a 1 000-entry lorebook over a 200-message chat, per
 * turn (target < 5 ms), and the peak memory growth, printed for the report. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "base/clock.h"
#include "plugins/tavern/assemble.h"
#include "plugins/tavern/card.h"
#include "plugins/tavern/wi_activate.h"

static const char *const WORDS[] = {"river",   "castle", "dragon", "forest", "sword",
                                    "queen",   "harbor", "storm",  "ember",  "crypt",
                                    "lantern", "wolf",   "market", "oracle", "bridge",
                                    "ruin",    "tower",  "mist",   "raven",  "valley"};
#define NW (sizeof WORDS / sizeof WORDS[0])

static json_t *make_book(int n)
{
    json_t *entries = json_object();
    for (int i = 0; i < n; i++) {
        char key[32], key2[32], content[256], uid[16];
        snprintf(key, sizeof key, "%s%d", WORDS[i % NW], i / (int)NW);
        snprintf(key2, sizeof key2, "%s", WORDS[(i * 7) % NW]);
        snprintf(content, sizeof content,
                 "Entry %d: the %s of the %s holds an old secret about {{char}} and the %s.", i,
                 WORDS[i % NW], WORDS[(i * 3) % NW], WORDS[(i * 5) % NW]);
        snprintf(uid, sizeof uid, "%d", i);
        json_t *e = json_pack("{s:i, s:[s,s], s:[s], s:s, s:b, s:b, s:i, s:i, s:i, s:i, s:b, s:s}",
                              "uid", i, "key", key, WORDS[(i * 11) % NW], "keysecondary", key2,
                              "content", content, "constant", i % 97 == 0, "selective", i % 3 == 0,
                              "selectiveLogic", i % 4, "order", i % 250, "position", i % 5, "depth",
                              4, "preventRecursion", i % 2 == 0, "group", i % 50 == 0 ? "g" : "");
        json_object_set_new(entries, uid, e);
    }
    return json_pack("{s:s, s:o}", "name", "Bench Book", "entries", entries);
}

/* CPU time of this thread: the machine is shared, so wall time mostly
 * measures the other processes. */
static int64_t cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Median of per-turn times in ms: robust against other processes on a
 * shared machine (the mean is printed too). */
static double median_ms(int64_t *ns, int n)
{
    qsort(ns, (size_t)n, sizeof *ns, cmp_i64);
    return (double)ns[n / 2] / 1e6;
}

static long rss_kib(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss;
}

int main(int argc, char **argv)
{
    json_t *card =
        json_pack("{s:s, s:s, s:{s:s, s:s, s:s, s:s, s:s, s:s}}", "name", "Bench", "spec",
                  "chara_card_v3", "data", "name", "Bench", "description",
                  "A long description of {{char}} for {{user}}.", "personality", "calm", "scenario",
                  "a city", "first_mes", "Hi.", "mes_example", "<START>\n{{char}}: hello");
    json_t *books = json_array();
    json_array_append_new(books, make_book(1000));
    static char texts[200][200];
    cdsh_tavern_chat_msg chat[200];
    for (int i = 0; i < 200; i++) {
        snprintf(texts[i], sizeof texts[i],
                 "Message %d talks about the %s near the %s and what happened after the %s fell.",
                 i, WORDS[i % NW], WORDS[(i * 3) % NW], WORDS[(i * 7) % NW]);
        chat[i] = (cdsh_tavern_chat_msg){i % 2 ? "assistant" : "user", NULL, texts[i], false};
    }
    json_t *persona = json_pack("{s:s, s:s}", "name", "Ann", "description", "A traveller.");
    cdsh_tavern_assemble_input in = {.card = card,
                                     .persona = persona,
                                     .character_books = books,
                                     .chat = chat,
                                     .n_chat = 200,
                                     .author_note = "Keep it short.",
                                     .chat_id = "bench",
                                     .now_ms = 1767225600000LL,
                                     .dry_run = true,
                                     .revision = "bench"};
    cdsh_tavern_wi_settings_default(&in.wi);
    in.wi.scan_depth = 4;

    long rss0 = rss_kib();
    const int warm = 5, n = argc > 1 ? atoi(argv[1]) : 200; /* argv[1]: turns (profiling) */
    size_t activated = 0, standing = 0, turn = 0;
    for (int i = 0; i < warm; i++) {
        json_t *plan = NULL;
        if (cdsh_tavern_assemble(&in, &plan, NULL) != 0) {
            fprintf(stderr, "assemble failed\n");
            return 1;
        }
        activated =
            json_array_size(json_object_get(json_object_get(plan, "worldInfo"), "activated"));
        standing = strlen(json_string_value(json_object_get(plan, "standing")));
        turn = strlen(json_string_value(json_object_get(plan, "turn")));
        json_decref(plan);
    }
    int64_t *per = calloc((size_t)n, sizeof *per);
    int64_t t0 = cdsh_clock_mono_ns();
    for (int i = 0; i < n; i++) {
        in.seed = (uint32_t)i;
        json_t *plan = NULL;
        int64_t a = cpu_ns();
        cdsh_tavern_assemble(&in, &plan, NULL);
        json_decref(plan);
        per[i] = cpu_ns() - a;
    }
    int64_t t1 = cdsh_clock_mono_ns();
    double med = median_ms(per, n);
    long rss1 = rss_kib();

    /* Activation alone, for the breakdown. */
    cdsh_tavern_wi_message msgs[200];
    for (int i = 0; i < 200; i++)
        msgs[i] = (cdsh_tavern_wi_message){i % 2 ? "Bench" : "Ann", texts[i]};
    cdsh_tavern_wi_input wi = {
        .character_books = books, .messages = msgs, .n_messages = 200, .no_log = true};
    cdsh_tavern_wi_settings_default(&wi.settings);
    wi.settings.scan_depth = 4;
    int64_t t2 = cpu_ns();
    for (int i = 0; i < n; i++) {
        json_t *out = NULL;
        wi.seed = (uint32_t)i;
        cdsh_tavern_wi_activate(&wi, &out, NULL);
        json_decref(out);
    }
    int64_t t3 = cpu_ns();
    in.trigger_log = true;
    int64_t t4 = cpu_ns();
    for (int i = 0; i < n; i++) {
        json_t *plan = NULL;
        cdsh_tavern_assemble(&in, &plan, NULL);
        json_decref(plan);
    }
    int64_t t5 = cpu_ns();

    printf("tavern prompt: 1000-entry lorebook, 200-message chat, scan depth 4\n");
    printf("  activation + assembly: %.3f ms CPU/turn (median), %.3f ms wall/turn (mean); "
           "%d turns; target < 5 ms\n",
           med, (double)(t1 - t0) / n / 1e6, n);
    printf("  activation alone:      %.3f ms CPU/turn (mean, no trigger log)\n",
           (double)(t3 - t2) / n / 1e6);
    printf("  with the trigger log (preview): %.3f ms CPU/turn (mean)\n",
           (double)(t5 - t4) / n / 1e6);
    printf("  activated entries %zu, standing %zu bytes, turn %zu bytes\n", activated, standing,
           turn);
    printf("  peak RSS %ld KiB (growth during the timed loop %ld KiB)\n", rss1, rss1 - rss0);
    free(per);
    json_decref(books);
    json_decref(card);
    json_decref(persona);
    return 0;
}
