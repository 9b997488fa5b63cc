/*
 * measure OUT_FILE PROGRAM [ARGS...]: run PROGRAM, write "utime stime maxrss_kib" of it (and of
 * the descendants it waited for) to OUT_FILE, and exit with its exit code (128 + signal if a
 * signal ended it).
 *
 * benches/peers/steps.py runs every engine through this small program rather than straight
 * from Python because Linux carries a process's peak resident set across exec: a child that
 * Python forks (or vforks) starts with Python's own peak, some 18 MiB, which would hide
 * the raw loop's and cosimo's real peaks. Forked from this program, a child starts from
 * about a MiB.
 *
 * Build: gcc -O2 -o measure measure.c
 */

#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s OUT_FILE PROGRAM [ARGS...]\n", argv[0]);
        return 2;
    }
    pid_t pid = fork();
    if (pid < 0) {
        perror("measure: fork");
        return 2;
    }
    if (pid == 0) {
        execvp(argv[2], argv + 2);
        perror("measure: exec");
        _exit(127);
    }
    int status;
    struct rusage usage;
    if (wait4(pid, &status, 0, &usage) < 0) {
        perror("measure: wait4");
        return 2;
    }
    FILE *out = fopen(argv[1], "w");
    if (!out) {
        perror("measure: OUT_FILE");
        return 2;
    }
    fprintf(out, "%ld.%06ld %ld.%06ld %ld\n", (long)usage.ru_utime.tv_sec, (long)usage.ru_utime.tv_usec,
            (long)usage.ru_stime.tv_sec, (long)usage.ru_stime.tv_usec, usage.ru_maxrss);
    fclose(out);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
