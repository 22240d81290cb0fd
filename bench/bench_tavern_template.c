/* bench_tavern_template.c — issue 19 figures: the render time of a typical
 * card template in a warm template worker and the worker's start (stop to
 * the first result), as wall time and as the worker's CPU time (the
 * machine the figures come from is shared, so CPU is the steadier one),
 * beside the Duktape figures. Targets: render <= 2 ms, start <= 50 ms.
 * Arguments: [renders] [starts] (small counts for callgrind). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "plugins/tavern/template.h"

/* A template in the style real cards use: variables, a loop over world
 * state, a conditional on the last user message. ES5 so it also ran on the
 * engine this one replaced. */
static const char TYPICAL[] =
    "<% var hp = getvar('hp'); var items = ['sword', 'lamp', 'rope']; %>"
    "HP: <%= hp %>/100\n"
    "<% for (var i = 0; i < items.length; i++) { %>- <%= items[i] %>\n<% } %>"
    "<% if (hp < 50) { %>{{char}} looks hurt.<% } else { %>{{char}} is fine.<% } %>"
    "<% setvar('turns', (getvar('turns') || 0) + 1) %>";

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double now_ms(void)
{
    return (double)cdsh_clock_mono_ns() / 1e6;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    return v[n / 2];
}

/* The CPU time (user + system, all threads) process pid has used, in ms;
 * -1 if unknown. */
static double proc_cpu_ms(int pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    const char *p = strrchr(buf, ')');
    unsigned long ut = 0, st = 0;
    if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2)
        return -1;
    return (double)(ut + st) * 1000.0 / (double)sysconf(_SC_CLK_TCK);
}

static int render(const char *src, json_t *ctx, const cdsh_tavern_template_limits *lim)
{
    json_t *res = NULL;
    cdsh_error err = {0};
    if (cdsh_tavern_template_render(src, ctx, true, lim, &res, &err) < 0) {
        fprintf(stderr, "render failed: %s %s\n", err.code, err.message);
        return -1;
    }
    json_decref(res);
    return 0;
}

int main(int argc, char **argv)
{
    /* Optional counts (renders, starts), e.g. small ones under callgrind. */
    enum { NMAX = 200, SMAX = 15 };
    int N = argc > 1 ? atoi(argv[1]) : NMAX, STARTS = argc > 2 ? atoi(argv[2]) : SMAX;
    if (N < 1 || N > NMAX)
        N = NMAX;
    if (STARTS < 1 || STARTS > SMAX)
        STARTS = SMAX;
    json_t *ctx = json_loads("{\"vars\":{\"global\":{},\"local\":{\"hp\":42},\"message\":{}},"
                             "\"macros\":{\"char\":\"Seraphina\",\"user\":\"Ann\"},\"now\":0,"
                             "\"seed\":7}",
                             0, NULL);
    cdsh_tavern_template_limits lim;
    cdsh_tavern_template_limits_default(&lim);
    lim.wall_ms = 20000;
    static double t[NMAX], c[NMAX], s[SMAX], sc[SMAX], sf[SMAX];
    /* Start: from a stopped worker to the typical template's first result
     * (fork, JavaScriptCore, ejs, then that render cold). */
    for (int k = 0; k < STARTS; k++) {
        cdsh_tavern_template_worker_stop();
        double a = now_ms();
        if (render(TYPICAL, ctx, &lim) < 0)
            return 1;
        s[k] = now_ms() - a;
        sc[k] = (double)cdsh_tavern_template_start_cpu_us() / 1000.0;
        sf[k] = sc[k] + (double)cdsh_tavern_template_last_cpu_us() / 1000.0;
    }
    /* Warm: the same template again and again in one worker. */
    for (int k = 0; k < 5; k++)
        if (render(TYPICAL, ctx, &lim) < 0)
            return 1;
    int pid = cdsh_tavern_template_worker_pid();
    double w0 = proc_cpu_ms(pid), all0 = now_ms();
    for (int k = 0; k < N; k++) {
        double a = now_ms();
        if (render(TYPICAL, ctx, &lim) < 0)
            return 1;
        t[k] = now_ms() - a;
        c[k] = (double)cdsh_tavern_template_last_cpu_us() / 1000.0;
    }
    double w1 = proc_cpu_ms(pid), all1 = now_ms();
    printf("template worker start, stop to the typical template's first result: median %.2f ms "
           "wall over %d\n",
           median(s, STARTS), STARTS);
    printf("template worker start, worker CPU (all threads) to ready: median %.2f ms; to the "
           "first result: median %.2f ms (target <= 50)\n",
           median(sc, STARTS), median(sf, STARTS));
    printf("template render, typical card template, warm worker: median %.3f ms wall over %d\n",
           median(t, N), N);
    printf("template render, the same, worker CPU per evaluation: median %.3f ms (target <= 2)\n",
           median(c, N));
    if (w0 >= 0 && w1 >= 0)
        printf("template render, the same, all worker CPU (garbage collection and helper "
               "threads included) / renders: %.3f ms; %.1f renders/s\n",
               (w1 - w0) / N, N * 1000.0 / (all1 - all0));
    printf("for comparison, Duktape (the engine this replaced; measured on this machine before "
           "the switch, a fork per render): 27.2 ms per render, 29.2 ms for an empty one\n");
    cdsh_tavern_template_worker_stop();
    json_decref(ctx);
    return 0;
}
