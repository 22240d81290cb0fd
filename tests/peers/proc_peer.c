/* proc_peer.c — a child for tests/base/test_process.c. Modes:
 *   fds          print every open descriptor above 2, one per line
 *   pgid         print "<pid> <pgid>"
 *   sigpipe      print "default" or "ignored" for SIGPIPE's disposition
 *   ignore-term  ignore SIGTERM, print "ready", then sleep for a minute */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    if (strcmp(argv[1], "fds") == 0) {
        for (int fd = 3; fd < 4096; fd++)
            if (fcntl(fd, F_GETFD) != -1)
                printf("%d\n", fd);
        return 0;
    }
    if (strcmp(argv[1], "pgid") == 0) {
        printf("%d %d\n", (int)getpid(), (int)getpgid(0));
        return 0;
    }
    if (strcmp(argv[1], "sigpipe") == 0) {
        struct sigaction sa;
        sigaction(SIGPIPE, NULL, &sa);
        puts(sa.sa_handler == SIG_IGN ? "ignored" : "default");
        return 0;
    }
    if (strcmp(argv[1], "ignore-term") == 0) {
        signal(SIGTERM, SIG_IGN);
        puts("ready");
        fflush(stdout);
        sleep(60);
        return 0;
    }
    return 2;
}
