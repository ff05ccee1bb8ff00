/* proc_ptrace_loop: the minimal C ptrace loop the target benchmark compares against.
 * Usage: proc_ptrace_loop PROGRAM HEX_ADDR N
 * Runs PROGRAM N 0 (a non-PIE proc_target) with an int3 at ADDR; on every hit: move
 * the pc back, restore the byte, single-step, reinsert, continue. Prints hits/s. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: %s PROGRAM HEX_ADDR N\n", argv[0]);
        return 2;
    }
    unsigned long addr = strtoul(argv[2], NULL, 16);
    pid_t pid = fork();
    if (pid == 0) {
        ptrace(PTRACE_TRACEME, 0, 0, 0);
        execl(argv[1], argv[1], argv[3], "0", (char *)NULL);
        _exit(127);
    }
    int status;
    waitpid(pid, &status, 0); /* exec SIGTRAP */
    long orig = ptrace(PTRACE_PEEKDATA, pid, addr, 0);
    long trap = (orig & ~0xffL) | 0xcc;
    ptrace(PTRACE_POKEDATA, pid, addr, trap);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    long hits = 0;
    ptrace(PTRACE_CONT, pid, 0, 0);
    for (;;) {
        waitpid(pid, &status, 0);
        if (WIFEXITED(status) || WIFSIGNALED(status))
            break;
        struct user_regs_struct regs;
        ptrace(PTRACE_GETREGS, pid, 0, &regs);
        regs.rip -= 1;
        ptrace(PTRACE_SETREGS, pid, 0, &regs);
        ptrace(PTRACE_POKEDATA, pid, addr, orig);
        ptrace(PTRACE_SINGLESTEP, pid, 0, 0);
        waitpid(pid, &status, 0);
        ptrace(PTRACE_POKEDATA, pid, addr, trap);
        ptrace(PTRACE_CONT, pid, 0, 0);
        hits++;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double secs = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
    printf("c_loop hits=%ld seconds=%.3f hits_per_sec=%.0f\n", hits, secs, hits / secs);
    return 0;
}
