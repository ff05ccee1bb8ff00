/* A signal load for any program, without changing it (tests/torture_real.rs): built as
 * a shared object and put in LD_PRELOAD for both the plain and the debugged run. Its
 * constructor installs handlers (SA_RESTART | SA_ONSTACK, so the program's system calls
 * behave as without it as far as that goes) and starts, as the environment says:
 *
 *   TANDEM_SIGLOAD_OUT=FILE     where the one-line summary goes at exit (required: without
 *                               it the shim does nothing)
 *   TANDEM_SIGLOAD_HZ=N         a setitimer(ITIMER_PROF) SIGPROF N times per CPU second
 *                               (0: none; default 1000)
 *   TANDEM_SIGLOAD_RT_US=N      every N microseconds a helper thread queues a real-time
 *                               signal (SIGRTMAX-3, a sequence number as its value) to
 *                               each thread in /proc/self/task but itself (0: none;
 *                               default 2000)
 *   TANDEM_SIGLOAD_NEST=1       the handlers call sigload_work(), a function of the shim
 *                               (breakpoints go there too), and the real-time handler
 *                               leaves SIGPROF unblocked, so one nests in the other
 *
 * The summary, written to the file and never to the program's stdout or stderr:
 *   sent=N seen=N doubled=N lost=N exited=N prof=N nested=N work=N
 * sent/seen/doubled/lost count the queued signals by sequence number (each must be seen
 * exactly once: doubled and lost are 0; exited counts those that went to a thread that
 * ended before it ran the handler, which the kernel drops with the thread); prof is the SIGPROFs seen, nested how often a
 * handler ran inside the other (both depend on timing). Counters are atomic: handlers run
 * concurrently in several threads. */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define MAX_SEQ (1 << 20)
#define RT_SIG (SIGRTMAX - 3)

/* Never set: the harness's never-true conditions in this file name it. */
int sigload_never;

static const char *out_path;
static pid_t owner;
static int nest;
static long rt_us;
static pthread_t helper;
static int helper_started;
static atomic_int stop_helper;
static atomic_long sent, prof_seen, nested, work_calls;
static atomic_int in_handler;
static _Atomic unsigned char seen[MAX_SEQ];
/* The thread each queued signal went to. */
static pid_t target[MAX_SEQ];

/* Some work the handlers do when nesting is on: a function with lines of its own. */
__attribute__((noinline)) unsigned sigload_work(unsigned x)
{
    unsigned h = x * 2654435761u;
    for (int i = 0; i < 4; i++)
        h ^= h >> 13, h *= 0x5bd1e995u;
    atomic_fetch_add(&work_calls, 1);
    return h;
}

static void on_prof(int sig)
{
    (void)sig;
    atomic_fetch_add(&prof_seen, 1);
    if (nest) {
        if (atomic_load(&in_handler))
            atomic_fetch_add(&nested, 1);
        sigload_work((unsigned)sig);
    }
}

static void on_rt(int sig, siginfo_t *info, void *ctx)
{
    (void)sig;
    (void)ctx;
    int seq = info->si_value.sival_int;
    if (seq >= 0 && seq < MAX_SEQ)
        atomic_fetch_add(&seen[seq], 1);
    if (nest) {
        atomic_fetch_add(&in_handler, 1);
        sigload_work((unsigned)seq);
        atomic_fetch_sub(&in_handler, 1);
    }
}

static long env_long(const char *name, long dflt)
{
    const char *v = getenv(name);
    return v && *v ? atol(v) : dflt;
}

/* Queues one real-time signal to thread `tid` of this process; 1 if it was queued. */
static int queue_to(pid_t tid, int seq)
{
    siginfo_t info;
    memset(&info, 0, sizeof info);
    info.si_signo = RT_SIG;
    info.si_code = SI_QUEUE;
    info.si_pid = getpid();
    info.si_uid = getuid();
    info.si_value.sival_int = seq;
    return syscall(SYS_rt_tgsigqueueinfo, getpid(), tid, RT_SIG, &info) == 0;
}

static void *send_loop(void *arg)
{
    (void)arg;
    pid_t self = (pid_t)syscall(SYS_gettid);
    /* The helper takes none of the load itself. */
    sigset_t all;
    sigemptyset(&all);
    sigaddset(&all, SIGPROF);
    sigaddset(&all, RT_SIG);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    while (!atomic_load(&stop_helper)) {
        DIR *d = opendir("/proc/self/task");
        if (d) {
            struct dirent *e;
            while ((e = readdir(d)) && !atomic_load(&stop_helper)) {
                pid_t tid = (pid_t)atol(e->d_name);
                long seq = atomic_load(&sent);
                if (tid <= 0 || tid == self || seq >= MAX_SEQ)
                    continue;
                target[seq] = tid;
                if (queue_to(tid, (int)seq))
                    atomic_fetch_add(&sent, 1);
            }
            closedir(d);
        }
        struct timespec nap = {rt_us / 1000000, (rt_us % 1000000) * 1000};
        nanosleep(&nap, NULL);
    }
    return NULL;
}

static void summary(void)
{
    static atomic_int done;
    if (!out_path || getpid() != owner || atomic_exchange(&done, 1))
        return;
    if (helper_started) {
        atomic_store(&stop_helper, 1);
        pthread_join(helper, NULL);
        helper_started = 0;
    }
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_PROF, &off, NULL);
    long n = atomic_load(&sent);
    /* Signals queued to threads still running land soon: wait up to 2 s for them. */
    long seen_n = 0, doubled = 0, exited = 0;
    for (int tries = 0; tries < 2000; tries++) {
        seen_n = doubled = exited = 0;
        for (long i = 0; i < n; i++) {
            unsigned char s = atomic_load(&seen[i]);
            seen_n += s > 0;
            doubled += s > 1;
            /* A signal queued to a thread that then ended is dropped with it, by the
             * kernel, with or without a debugger: not lost by anyone. */
            if (!s) {
                char task[64];
                snprintf(task, sizeof task, "/proc/self/task/%d", (int)target[i]);
                exited += access(task, F_OK) != 0;
            }
        }
        if (seen_n + exited == n)
            break;
        struct timespec nap = {0, 1000000};
        nanosleep(&nap, NULL);
    }
    char line[256];
    int len = snprintf(line, sizeof line,
                       "sent=%ld seen=%ld doubled=%ld lost=%ld exited=%ld prof=%ld nested=%ld "
                       "work=%ld\n",
                       n, seen_n, doubled, n - seen_n - exited, exited, atomic_load(&prof_seen),
                       atomic_load(&nested), atomic_load(&work_calls));
    int fd = open(out_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd >= 0) {
        ssize_t w = write(fd, line, (size_t)len);
        (void)w;
        close(fd);
    }
}

__attribute__((constructor)) static void sigload_start(void)
{
    out_path = getenv("TANDEM_SIGLOAD_OUT");
    if (!out_path || !*out_path)
        return;
    owner = getpid();
    nest = env_long("TANDEM_SIGLOAD_NEST", 0) != 0;
    long hz = env_long("TANDEM_SIGLOAD_HZ", 1000);
    rt_us = env_long("TANDEM_SIGLOAD_RT_US", 2000);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_flags = SA_RESTART | SA_ONSTACK;
    sa.sa_handler = on_prof;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGPROF, &sa, NULL);
    sa.sa_flags = SA_RESTART | SA_ONSTACK | SA_SIGINFO;
    sa.sa_sigaction = on_rt;
    sigemptyset(&sa.sa_mask);
    if (!nest)
        sigaddset(&sa.sa_mask, SIGPROF);
    sigaction(RT_SIG, &sa, NULL);
    atexit(summary);
    if (hz > 0) {
        long us = 1000000 / hz;
        struct itimerval it = {{us / 1000000, us % 1000000}, {us / 1000000, us % 1000000}};
        setitimer(ITIMER_PROF, &it, NULL);
    }
    if (rt_us > 0 && pthread_create(&helper, NULL, send_loop, NULL) == 0)
        helper_started = 1;
}

/* A program that ends by returning from main or calling exit runs atexit; the
 * destructor covers a library unloaded earlier. */
__attribute__((destructor)) static void sigload_stop(void)
{
    summary();
}
