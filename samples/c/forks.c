/* Forking shapes for the child-session tests (tests/dap_children.rs):
 *   forks prefork    a parent forks 3 workers that each run a deterministic job
 *   forks exec PROG  fork, then exec PROG (a second program) in the child
 *   forks spawn N PROG  posix_spawn PROG N times (vfork underneath), one after another
 *   forks crash      a child dereferences a null pointer
 *   forks clone      a child made by clone(2) without CLONE_THREAD (a process)
 *   forks sigchld    prefork with a SIGCHLD handler without SA_NOCLDSTOP and waitpid
 *                    with WUNTRACED | WCONTINUED: any job-control stop or continue of a
 *                    worker is counted and printed; each worker checks that its signal
 *                    mask is the one it inherited (SIGUSR1 blocked, nothing else)
 * The parent reports every child's exit in order; children print nothing, so the
 * output is deterministic. */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

__attribute__((noinline)) static int job(int k)
{
    int acc = k * 7 + 1;
    for (int i = 0; i < 1000; i++)
        acc = (acc * 31 + i) % 9973;
    return acc % 50; /* S:job */
}

__attribute__((noinline)) static void crash(int *p)
{
    *p = 42; /* S:crash */
}

static volatile sig_atomic_t job_notices;

static void on_chld(int sig, siginfo_t *si, void *uc)
{
    (void)sig;
    (void)uc;
    if (si->si_code == CLD_STOPPED || si->si_code == CLD_CONTINUED)
        job_notices++;
}

/* A worker whose signal mask is not the inherited one exits with 99. */
static int checked_job(int k)
{
    sigset_t now, want;
    sigprocmask(SIG_BLOCK, NULL, &now);
    sigemptyset(&want);
    sigaddset(&want, SIGUSR1);
    for (int s = 1; s < 65; s++)
        if (sigismember(&now, s) != sigismember(&want, s))
            return 99;
    return job(k);
}

static void sigchld_mode(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_chld;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGCHLD, &sa, NULL);
    sigset_t usr1;
    sigemptyset(&usr1);
    sigaddset(&usr1, SIGUSR1);
    sigprocmask(SIG_BLOCK, &usr1, NULL);
    pid_t pids[3];
    for (int k = 0; k < 3; k++) {
        pids[k] = fork();
        if (pids[k] == 0)
            _exit(checked_job(k));
    }
    for (int k = 0; k < 3; k++) {
        int status = 0;
        for (;;) {
            pid_t r = waitpid(pids[k], &status, WUNTRACED | WCONTINUED);
            if (r < 0 && errno == EINTR)
                continue;
            if (r > 0 && WIFSTOPPED(status)) {
                printf("worker %d stopped\n", k);
                continue;
            }
            if (r > 0 && WIFCONTINUED(status)) {
                printf("worker %d continued\n", k);
                continue;
            }
            break;
        }
        printf("worker %d exit %d\n", k, WEXITSTATUS(status));
    }
    printf("job-control notices %d\n", (int)job_notices);
}

static int clone_child(void *arg)
{
    return job(*(int *)arg);
}

static void report(const char *what, int i, pid_t pid)
{
    int status = 0;
    waitpid(pid, &status, 0);
    if (WIFEXITED(status))
        printf("%s %d exit %d\n", what, i, WEXITSTATUS(status));
    else if (WIFSIGNALED(status))
        printf("%s %d signal %d\n", what, i, WTERMSIG(status));
    fflush(stdout);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "prefork";
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (strcmp(mode, "prefork") == 0) {
        pid_t pids[3];
        for (int k = 0; k < 3; k++) {
            pids[k] = fork();
            if (pids[k] == 0)
                _exit(job(k)); /* S:worker */
        }
        for (int k = 0; k < 3; k++)
            report("worker", k, pids[k]);
    } else if (strcmp(mode, "sigchld") == 0) {
        sigchld_mode();
    } else if (strcmp(mode, "exec") == 0 && argc > 2) {
        pid_t pid = fork();
        if (pid == 0) {
            execl(argv[2], argv[2], "5", (char *)NULL);
            _exit(127);
        }
        report("exec", 0, pid);
    } else if (strcmp(mode, "spawn") == 0 && argc > 3) {
        int n = atoi(argv[2]);
        for (int i = 0; i < n; i++) {
            char arg[16];
            snprintf(arg, sizeof arg, "%d", i);
            char *child_argv[] = {argv[3], arg, NULL};
            pid_t pid;
            if (posix_spawn(&pid, argv[3], NULL, NULL, child_argv, environ) != 0) {
                printf("spawn %d failed\n", i);
                continue;
            }
            report("spawn", i, pid);
        }
    } else if (strcmp(mode, "clone") == 0) {
        static char stack[64 * 1024];
        static int k = 7;
        pid_t pid = clone(clone_child, stack + sizeof stack, SIGCHLD, &k);
        report("clone", 0, pid);
    } else if (strcmp(mode, "crash") == 0) {
        pid_t pid = fork();
        if (pid == 0) {
            crash(NULL);
            _exit(0);
        }
        report("crash", 0, pid);
    }
    printf("parent done\n");
    return 0;
}
