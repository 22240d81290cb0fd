/* bench_import.c — the importer's scan cost: a project with N command files
 * (10 000 .. 100 000, in folders of 1 000) and a .mcp.json with N servers
 * (2 000 .. 20 000), each scanned (discover + normalise + judge, no machine
 * probe) and timed (CPU, the figure the targets are about, and wall); the
 * CPU time per item, and its ratio between the largest and the smallest
 * size, show whether the cost is linear; each tree is scanned twice (the
 * cache as found, then warm) and the report made after the second. The
 * trees are made in a temporary directory and removed afterwards. */
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/fs.h"
#include "plugins/mcpimport/report.h"
#include "plugins/mcpimport/service.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        perror(path);
        exit(1);
    }
    fputs(text, f);
    fclose(f);
}

/* Wall time of one scan; *cpu its process CPU time (user + system); with
 * `report` (4 figures), the CPU time of the output step afterwards: making
 * the report (what `cdsh import scan` returns), its text form, its JSON
 * text (as --json prints it) and freeing them. */
static double scan(const char *home, const char *project, size_t *items, double *cpu,
                   double *report_cpu)
{
    char claude[4096], codex[4096], cj[4096];
    snprintf(claude, sizeof claude, "%s/claude", home);
    snprintf(codex, sizeof codex, "%s/codex", home);
    snprintf(cj, sizeof cj, "%s/claude.json", home);
    const char *projects[] = {project, NULL};
    cdsh_mcpimport_roots roots = {claude, cj, codex, projects};
    cdsh_mcpimport_scan sc;
    double t0 = now();
    clock_t c0 = clock();
    if (cdsh_mcpimport_scan_run(&roots, NULL, NULL, &sc, NULL) != 0) {
        fprintf(stderr, "scan failed\n");
        exit(1);
    }
    double t = now() - t0;
    *cpu = (double)(clock() - c0) / CLOCKS_PER_SEC;
    *items = sc.commands.n + json_array_size(sc.servers);
    if (report_cpu) {
        c0 = clock();
        json_t *r = cdsh_mcpimport_report_of_scan(&sc);
        report_cpu[0] = (double)(clock() - c0) / CLOCKS_PER_SEC;
        c0 = clock();
        char *text = cdsh_mcpimport_report_text_dup(r);
        report_cpu[1] = (double)(clock() - c0) / CLOCKS_PER_SEC;
        c0 = clock();
        char *js = json_dumps(r, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        report_cpu[2] = (double)(clock() - c0) / CLOCKS_PER_SEC;
        c0 = clock();
        free(text);
        free(js);
        json_decref(r);
        report_cpu[3] = (double)(clock() - c0) / CLOCKS_PER_SEC;
    }
    cdsh_mcpimport_scan_deinit(&sc);
    return t;
}

static double files(const char *base, size_t n)
{
    char tmpl[4096];
    snprintf(tmpl, sizeof tmpl, "%s/files%zu", base, n);
    char dir[4200];
    struct stat st;
    bool made = stat(tmpl, &st) == 0; /* a kept tree (--keep) is scanned as it is */
    for (size_t i = 0; !made && i < n; i++) {
        if (i % 1000 == 0) {
            snprintf(dir, sizeof dir, "%s/.claude/commands/d%zu", tmpl, i / 1000);
            cdsh_fs_mkdir_p(dir, 0700, NULL);
        }
        char p[4400];
        snprintf(p, sizeof p, "%s/c%zu.md", dir, i);
        write_file(p, "---\ndescription: A command\n---\nDo $ARGUMENTS now.\n");
    }
    /* Twice: the first scan finds the cache as it is (warm after making the
     * tree here; a kept tree may be cold), the second always warm. */
    size_t items;
    double cpu1, t1 = scan(base, tmpl, &items, &cpu1, NULL);
    double cpu, rep[4], t = scan(base, tmpl, &items, &cpu, rep);
    printf("scan of %6zu command files: cpu %7.3f s first (wall %7.3f s), %7.3f s warm (%5.2f us "
           "per file, wall %7.3f s); %zu commands\n",
           n, cpu1, t1, cpu, cpu * 1e6 / (double)n, t, items);
    printf("  then the output, cpu: report %.3f s, text %.3f s, JSON text %.3f s, freeing %.3f s; "
           "report + text = %.2fx the warm scan\n",
           rep[0], rep[1], rep[2], rep[3], (rep[0] + rep[1]) / cpu);
    return cpu / (double)n;
}

static double servers(const char *base, size_t n)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/servers%zu", base, n);
    cdsh_fs_mkdir_p(dir, 0700, NULL);
    json_t *map = json_object();
    for (size_t i = 0; i < n; i++) {
        char name[48], var[64];
        snprintf(name, sizeof name, "srv%zu", i);
        snprintf(var, sizeof var, "${BENCH_TOKEN_%zu}", i);
        json_object_set_new(map, name,
                            json_pack("{s:s, s:[s,s], s:{s:s}}", "command", "node", "args",
                                      "server.js", "--stdio", "env", "API_TOKEN", var));
    }
    json_t *doc = json_pack("{s:o}", "mcpServers", map);
    char p[4200];
    snprintf(p, sizeof p, "%s/.mcp.json", dir);
    json_dump_file(doc, p, 0);
    json_decref(doc);
    size_t items;
    double cpu, t = scan(base, dir, &items, &cpu, NULL);
    printf("scan of %6zu servers:       cpu %7.3f s (%5.2f us per server), wall %7.3f s\n", n, cpu,
           cpu * 1e6 / (double)n, t);
    return cpu / (double)n;
}

int main(int argc, char **argv)
{
    /* bench_import [FILES SERVERS] [--keep DIR]: one size of each instead of
     * the series; --keep makes the trees in DIR once and leaves them there
     * (for profiling the scan alone: making 100 000 files costs minutes). */
    bool sized = argc > 2 && strcmp(argv[1], "--keep") != 0;
    size_t one_f = sized ? strtoul(argv[1], NULL, 10) : 0;
    size_t one_s = sized ? strtoul(argv[2], NULL, 10) : 0;
    int k = sized ? 3 : 1;
    const char *keep = argc > k + 1 && strcmp(argv[k], "--keep") == 0 ? argv[k + 1] : NULL;
    char base[4096] = "/tmp/cdsh-bench-import-XXXXXX";
    if (keep) {
        snprintf(base, sizeof base, "%s", keep);
        cdsh_fs_mkdir_p(base, 0700, NULL);
    } else if (!mkdtemp(base)) {
        perror("mkdtemp");
        return 1;
    }
    const size_t nf[] = {10000, 50000, 100000};
    double per_f[3] = {0}, per_s[3] = {0};
    for (size_t i = 0; i < sizeof nf / sizeof nf[0]; i++)
        if (!one_f || i == 0)
            per_f[i] = files(base, one_f ? one_f : nf[i]);
    const size_t ns[] = {2000, 4000, 20000};
    for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++)
        if (!one_s || i == 0)
            per_s[i] = servers(base, one_s ? one_s : ns[i]);
    /* Linear cost: the time per item stays flat as the size grows tenfold. */
    if (!one_f)
        printf("before the command structs (issue 22, previous session): 10 000 files 0.56 s, "
               "50 000 2.65 s, 100 000 8.1 s cold / 6.3 s warm cpu\n");
    printf("before the report was made from the command structs (issue 22, this session, load "
           "~20): 100 000 files: warm scan 1.78 s, then the report 8.56 s cpu (the commands' JSON "
           "IR, then a redacted deep copy of it); `cdsh import scan` 11.4 s user + 4.1 s sys, "
           "962 MB peak\n");
    if (!one_f)
        printf("per-file cpu time, 100 000 vs 10 000 files: %.2fx (1.00 = linear); target: 100 000 "
               "files under 5 s\n",
               per_f[2] / per_f[0]);
    if (!one_s)
        printf(
            "per-server cpu time, 20 000 vs 2 000 servers: %.2fx (1.00 = linear); target: 20 000 "
            "servers under 1 s\n",
            per_s[2] / per_s[0]);
    if (!keep)
        cdsh_fs_remove_tree(base, NULL);
    return 0;
}
