/* bench_frontend.c — front-end figures: `cdsh --version` start-up time
 * (fork+exec+exit, 100 runs) and the resident memory of an idle `cdsh web`
 * (after start-up, and after 200 API requests). Uses the cdsh binary next
 * to the bench directory; prints, never asserts. */
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <jansson.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static long status_kb(pid_t pid, const char *field)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    long v = -1;
    size_t n = strlen(field);
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, field, n) == 0 && line[n] == ':')
            v = atol(line + n + 1);
    if (f)
        fclose(f);
    return v;
}

static size_t sink(char *p, size_t s, size_t n, void *ud)
{
    (void)p;
    (void)ud;
    return s * n;
}

int main(void)
{
    char self[PATH_MAX], cdsh[PATH_MAX + 16];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0)
        return 1;
    self[n] = '\0';
    *strrchr(self, '/') = '\0';
    snprintf(cdsh, sizeof cdsh, "%s/../cdsh", self);
    if (access(cdsh, X_OK) != 0) {
        fprintf(stderr, "bench_frontend: %s not found\n", cdsh);
        return 1;
    }

    /* ---- start-up ---- */
    enum { RUNS = 100 };
    double best = 1e9, total = 0;
    for (int i = 0; i < RUNS; i++) {
        double t0 = now();
        pid_t pid = fork();
        if (pid == 0) {
            freopen("/dev/null", "w", stdout);
            execl(cdsh, "cdsh", "--version", (char *)NULL);
            _exit(127);
        }
        int st;
        waitpid(pid, &st, 0);
        double dt = now() - t0;
        total += dt;
        if (dt < best)
            best = dt;
    }
    printf("cdsh --version start-up: mean %.2f ms, best %.2f ms (%d runs)\n", total / RUNS * 1e3,
           best * 1e3, RUNS);

    /* ---- idle memory of cdsh web ---- */
    char home[] = "/tmp/cdsh-bench-web-XXXXXX";
    if (!mkdtemp(home))
        return 1;
    int out[2];
    if (pipe(out) != 0)
        return 1;
    double t0 = now();
    pid_t pid = fork();
    if (pid == 0) {
        setenv("CDSH_HOME", home, 1);
        dup2(out[1], 1);
        close(out[0]);
        freopen("/dev/null", "w", stderr);
        execl(cdsh, "cdsh", "web", "--no-open", "--json", "--port", "0", (char *)NULL);
        _exit(127);
    }
    close(out[1]);
    char line[512];
    size_t len = 0;
    while (len < sizeof line - 1 && read(out[0], line + len, 1) == 1 && line[len] != '\n')
        len++;
    line[len] = '\0';
    double ready = now() - t0;
    json_t *info = json_loads(line, 0, NULL);
    if (!info) {
        fprintf(stderr, "bench_frontend: cdsh web did not start\n");
        kill(pid, SIGKILL);
        return 1;
    }
    usleep(300000);
    printf("cdsh web: ready in %.1f ms; idle RSS %ld kB (peak %ld kB), %ld threads\n", ready * 1e3,
           status_kb(pid, "VmRSS"), status_kb(pid, "VmHWM"), status_kb(pid, "Threads"));
    char url[128], auth[160];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/api/sessions",
             (int)json_integer_value(json_object_get(info, "port")));
    snprintf(auth, sizeof auth, "Authorization: Bearer %s",
             json_string_value(json_object_get(info, "token")));
    curl_global_init(CURL_GLOBAL_DEFAULT);
    CURL *c = curl_easy_init();
    struct curl_slist *h = curl_slist_append(NULL, auth);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, sink);
    t0 = now();
    for (int i = 0; i < 200; i++)
        curl_easy_perform(c);
    double per = (now() - t0) / 200;
    usleep(200000);
    printf("cdsh web: GET /api/sessions %.2f ms per request (keep-alive); RSS after 200 requests "
           "%ld kB\n",
           per * 1e3, status_kb(pid, "VmRSS"));
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
    curl_global_cleanup();
    json_decref(info);
    kill(pid, SIGTERM);
    waitpid(pid, NULL, 0);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", home);
    if (system(cmd) != 0)
        return 1;
    return 0;
}
