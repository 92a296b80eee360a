/* peakrss OUTFILE PROGRAM ARGS...: run PROGRAM with this process's stdio, wait for it, and
 * write its peak resident set (ru_maxrss, KiB) to OUTFILE. Used by bench/harness.py to
 * measure each server apart from its host: the wrapper replaces the server's command in
 * the servers file, so the host talks to the server through the same pipes. */
#include <signal.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

static pid_t child;

/* A host may end its server with SIGTERM to this wrapper: pass it on and keep waiting, so
 * the peak is still written. */
static void forward(int sig) {
    if (child > 0) kill(child, sig);
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: peakrss OUTFILE PROGRAM ARGS...\n");
        return 2;
    }
    pid_t pid = fork();
    if (pid < 0) return 2;
    if (pid == 0) {
        execvp(argv[2], argv + 2);
        perror("peakrss: exec");
        _exit(127);
    }
    child = pid;
    /* The host ends its server by closing stdin or by a signal to this wrapper. */
    signal(SIGINT, SIG_IGN);
    signal(SIGTERM, forward);
    int status = 0;
    struct rusage ru;
    while (wait4(pid, &status, 0, &ru) < 0) {
    }
    FILE *f = fopen(argv[1], "w");
    if (f) {
        fprintf(f, "%ld\n", ru.ru_maxrss);
        fclose(f);
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
