/* proc_fork: forks (argv[1] "fork" or "vfork"); both sides call proc_fork_common;
 * the child execs itself as "child", sleeps 300 ms and exits 3; the parent exits
 * with the child's code + 10. */
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

volatile int proc_fork_calls;

__attribute__((noinline)) void proc_fork_common(void) {
    proc_fork_calls++;
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "child") == 0) {
        struct timespec ts = {0, 300 * 1000 * 1000};
        nanosleep(&ts, NULL);
        return 3;
    }
    int use_vfork = argc > 1 && strcmp(argv[1], "vfork") == 0;
    pid_t pid = use_vfork ? vfork() : fork();
    if (pid == 0) {
        if (!use_vfork)
            proc_fork_common();
        execl("/proc/self/exe", argv[0], "child", (char *)NULL);
        _exit(99);
    }
    proc_fork_common();
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status))
        return 50;
    return WEXITSTATUS(status) + 10;
}
