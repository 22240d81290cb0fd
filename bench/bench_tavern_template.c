/* bench_tavern_template.c — issue 19 figures: the render time of a typical
 * card template in a warm template worker and the worker's start time
 * (median wall time, the worker is another process), printed for the
 * report. Targets: render <= 2 ms, worker start <= 50 ms. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

int main(int argc, char **argv)
{
    /* Optional counts (renders, starts), e.g. small ones under callgrind. */
    enum { NMAX = 60, SMAX = 10 };
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
    double t[NMAX], s[SMAX], c[NMAX], sc[SMAX];
    cdsh_error err = {0};
    for (int k = 0; k < STARTS; k++) {
        cdsh_tavern_template_worker_stop();
        double a = now_ms();
        json_t *res = NULL;
        if (cdsh_tavern_template_render("x", ctx, false, &lim, &res, &err) < 0) {
            fprintf(stderr, "render failed: %s %s\n", err.code, err.message);
            return 1;
        }
        s[k] = now_ms() - a;
        sc[k] = (double)cdsh_tavern_template_start_cpu_us() / 1000.0;
        json_decref(res);
    }
    for (int k = 0; k < N + 5; k++) {
        json_t *res = NULL;
        double a = now_ms();
        if (cdsh_tavern_template_render(TYPICAL, ctx, true, &lim, &res, &err) < 0) {
            fprintf(stderr, "render failed: %s %s\n", err.code, err.message);
            return 1;
        }
        if (k >= 5) {
            t[k - 5] = now_ms() - a;
            c[k - 5] = (double)cdsh_tavern_template_last_cpu_us() / 1000.0;
        }
        json_decref(res);
    }
    printf("template worker start (first render after a stop): median %.2f ms over %d (target "
           "<= 50)\n",
           median(s, STARTS), STARTS);
    printf("template worker start, CPU time of the worker (all threads) to ready: median %.2f "
           "ms\n",
           median(sc, STARTS));
    printf("template render, typical card template, warm worker: median %.3f ms over %d (target "
           "<= 2)\n",
           median(t, N), N);
    printf("template render, the same, CPU time in the worker: median %.3f ms\n", median(c, N));
    cdsh_tavern_template_worker_stop();
    json_decref(ctx);
    return 0;
}
