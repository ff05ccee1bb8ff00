/* The floor of a ptrace-per-call recorder (docs/benchmarks.md, "Recording for reverse
 * debugging"): runs PROGRAM ARGS under PTRACE_SYSCALL, two stops a system call, with
 * one PTRACE_GETREGS at each stop (what a recorder needs at least), and nothing else.
 *
 *     gcc -O2 -o ptrace_floor crates/bench/ptrace_floor.c
 *     time ./ptrace_floor ./rev_bench syscalls 100000
 */
#include <signal.h>
#include <stdio.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s PROGRAM [ARGS...]\n", argv[0]);
        return 2;
    }
    pid_t pid = fork();
    if (pid == 0) {
        ptrace(PTRACE_TRACEME, 0, 0, 0);
        raise(SIGSTOP);
        execvp(argv[1], argv + 1);
        _exit(127);
    }
    int status;
    waitpid(pid, &status, 0);
    ptrace(PTRACE_SETOPTIONS, pid, 0, PTRACE_O_TRACESYSGOOD | PTRACE_O_EXITKILL);
    long stops = 0;
    struct user_regs_struct regs;
    for (;;) {
        ptrace(PTRACE_SYSCALL, pid, 0, 0);
        if (waitpid(pid, &status, 0) < 0 || WIFEXITED(status) || WIFSIGNALED(status))
            break;
        if (WSTOPSIG(status) == (SIGTRAP | 0x80)) {
            ptrace(PTRACE_GETREGS, pid, 0, &regs);
            stops++;
        }
    }
    fprintf(stderr, "%ld system-call stops\n", stops);
    return 0;
}
