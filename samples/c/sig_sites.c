/* The signal-torture program of tests/torture_signals.rs: four threads call three small
 * noinline hot functions (the third holds the instructions that are hard to step over or
 * displace: `rep movsb`, a raw `syscall`, a lock-prefixed RIP-relative add, and an
 * unlikely branch gcc moves to a `.cold` part) while a 2 kHz setitimer SIGALRM handler (on a sigaltstack,
 * SA_ONSTACK, no SA_RESTART) calls them too, and a queued real-time signal is sent to
 * the workers now and then; the workers block every signal across some of the calls
 * (sigprocmask). Breakpoints with never-true conditions go on every line of
 * the hot functions, including `return v;`, which at -O2 is the function's `ret`. Its
 * result depends only on the rounds each worker ran and on how many signals each
 * handler saw, which it prints, so a debugged run can be compared with a plain one:
 *
 *   sig_sites SECONDS          run rounds until SECONDS have passed, print the result
 *   sig_sites -r R0,R1,R2,R3   run exactly those rounds (no timer), print the result
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define THREADS 4
#define CALLS 64

int g_never = 0;
static volatile sig_atomic_t stop_now;
static volatile sig_atomic_t ticks;
/* Atomic: the handler runs in several threads at once (a plain ++ would lose counts). */
static long rt_seen;
static volatile unsigned handler_mix = 1;
static volatile long handler_calls;
static long fixed_rounds[THREADS];
static int fixed;

__attribute__((noinline)) int hot_add(int i, int t)
{
    int v = i * 3 + t;          /* S:add1 */
    if (v % 7 == 0)             /* S:add2 */
        v += g_never + 1;       /* S:add3 */
    v ^= (v >> 3);              /* S:add4 */
    return v;                   /* S:add5 */
}                               /* S:add6 */

__attribute__((noinline)) unsigned hot_mix(unsigned h, int i)
{
    h ^= (unsigned)i;           /* S:mix1 */
    h *= 16777619u;             /* S:mix2 */
    switch (i & 3) {            /* S:mix3 */
    case 0: h ^= 0x9e37u; break; /* S:mix4 */
    case 1: h += 0x7f4au; break; /* S:mix5 */
    default: h -= 1; break;     /* S:mix6 */
    }
    return h;                   /* S:mix7 */
}                               /* S:mix8 */

static volatile long g_locked;

__attribute__((noinline, cold)) unsigned rare_mix(unsigned v)
{
    return v * 2654435761u + 17u;
}

__attribute__((noinline)) unsigned hot_edge(unsigned h, int i)
{
    unsigned long long src[3], dst[3];
    src[0] = h * 0x9e3779b97f4a7c15ull;                            /* S:edge1 */
    src[1] = src[0] ^ (src[0] >> 29);
    src[2] = src[1] * 31u + (unsigned)i;
    void *d = dst;
    const void *s = src;
    unsigned long n = sizeof dst;
    __asm__ volatile("rep movsb" : "+D"(d), "+S"(s), "+c"(n) : : "memory"); /* S:edge2 */
    long r;
    __asm__ volatile("syscall" : "=a"(r) : "a"(39L) : "rcx", "r11", "memory"); /* S:edge3 */
    __atomic_fetch_add(&g_locked, 1, __ATOMIC_SEQ_CST);            /* S:edge4 */
    if (r <= 0)
        abort();
    unsigned v = (unsigned)(dst[0] ^ (dst[1] >> 7) ^ (dst[2] >> 13)); /* S:edge5 */
    if (__builtin_expect((i & 255) == 77, 0)) {                     /* S:edge6 */
        v = rare_mix(v);       /* in hot_edge.cold at -O2 */
        v ^= (unsigned)i;
    }
    return h ^ v;                                                  /* S:edge7 */
}

static void on_alarm(int sig)
{
    (void)sig;
    /* Now and then the handler runs the breakpointed code itself. */
    if ((ticks & 7) == 0) {
        handler_mix = hot_mix(handler_mix, hot_add((int)ticks, 9));
        handler_calls = handler_calls + 1;
    }
    ticks = ticks + 1;
}

/* A queued signal arrives as it was sent: SI_QUEUE from this process, with the value
 * the sender gave (the pair number, even). A debugger that re-sends it loses that. */
static long rt_bad_info;

static void on_rt(int sig, siginfo_t *info, void *uc)
{
    (void)sig;
    (void)uc;
    __atomic_fetch_add(&rt_seen, 1, __ATOMIC_RELAXED);
    if (info->si_code != SI_QUEUE || info->si_pid != getpid() || (info->si_value.sival_int & 1))
        __atomic_fetch_add(&rt_bad_info, 1, __ATOMIC_RELAXED);
}

struct worker {
    int t;
    long rounds;
    unsigned sum;
    pthread_t th;
};

static void *work(void *arg)
{
    struct worker *w = arg;
    /* Handlers run on an alternate stack in this thread (SA_ONSTACK). */
    stack_t ss;
    ss.ss_sp = malloc(1 << 16);
    ss.ss_size = 1 << 16;
    ss.ss_flags = 0;
    sigaltstack(&ss, NULL);
    int i = 0;
    unsigned h = 2166136261u ^ (unsigned)w->t;
    for (;;) {
        if (fixed ? w->rounds == fixed_rounds[w->t] : stop_now)
            break;
        for (int k = 0; k < CALLS; k++) {
            /* Now and then the signals are blocked across the sites (sigprocmask): they
             * wait, and land all at once as the mask comes off. */
            sigset_t all, old;
            int masked = (k & 15) == 3;
            if (masked) {
                sigfillset(&all);
                pthread_sigmask(SIG_BLOCK, &all, &old);
            }
            int x = hot_add(i, w->t);          /* S:call */
            h = hot_mix(h, x);
            if ((k & 3) == 1)
                h = hot_edge(h, i);
            if (masked)
                pthread_sigmask(SIG_SETMASK, &old, NULL);
            i++;
        }
        w->rounds++;
        if (!fixed) {
            struct timespec nap = {0, 200000};
            nanosleep(&nap, NULL);
        }
    }
    w->sum = h;
    return NULL;
}

int main(int argc, char **argv)
{
    double seconds = 2;
    if (argc > 2 && strcmp(argv[1], "-r") == 0) {
        fixed = 1;
        char *p = argv[2];
        for (int t = 0; t < THREADS; t++) {
            fixed_rounds[t] = strtol(p, &p, 10);
            if (*p == ',')
                p++;
        }
    } else if (argc > 1) {
        seconds = atof(argv[1]);
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sa.sa_flags = SA_ONSTACK;
    sigaction(SIGALRM, &sa, NULL);
    sa.sa_sigaction = on_rt;
    sa.sa_flags = SA_RESTART | SA_SIGINFO;
    sigaction(SIGRTMIN + 2, &sa, NULL);
    sigset_t blocked;
    sigemptyset(&blocked);
    sigaddset(&blocked, SIGALRM);
    sigaddset(&blocked, SIGRTMIN + 2);
    struct itimerval it = {{0, 500}, {0, 500}};
    if (!fixed)
        setitimer(ITIMER_REAL, &it, NULL);
    struct worker w[THREADS];
    for (int t = 0; t < THREADS; t++) {
        w[t].t = t;
        w[t].rounds = 0;
        w[t].sum = 0;
        pthread_create(&w[t].th, NULL, work, &w[t]);
    }
    /* The workers take the signals: the main thread blocks them. */
    pthread_sigmask(SIG_BLOCK, &blocked, NULL);
    long rt_sent = 0;
    if (!fixed) {
        struct timespec start, now;
        clock_gettime(CLOCK_MONOTONIC, &start);
        do {
            struct timespec nap = {0, 5000000};
            nanosleep(&nap, NULL);
            /* Queued real-time signals, two at a time to one worker. */
            pthread_t to = w[rt_sent % THREADS].th;
            union sigval val = {.sival_int = (int)(rt_sent & ~1L)};
            /* Only a signal the kernel queued counts as sent. */
            rt_sent += pthread_sigqueue(to, SIGRTMIN + 2, val) == 0;
            rt_sent += pthread_sigqueue(to, SIGRTMIN + 2, val) == 0;
            clock_gettime(CLOCK_MONOTONIC, &now);
        } while ((now.tv_sec - start.tv_sec) + (now.tv_nsec - start.tv_nsec) / 1e9 < seconds);
        stop_now = 1;
    }
    for (int t = 0; t < THREADS; t++)
        pthread_join(w[t].th, NULL);
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &off, NULL);
    unsigned total = 0;
    for (int t = 0; t < THREADS; t++) {
        printf("thread %d rounds %ld sum %08x\n", t, w[t].rounds, w[t].sum);
        total = total * 31 + w[t].sum;
    }
    printf("total %08x\n", total);
    /* Every queued signal was delivered once (the workers are joined, so all landed). */
    long seen = __atomic_load_n(&rt_seen, __ATOMIC_RELAXED);
    long bad = __atomic_load_n(&rt_bad_info, __ATOMIC_RELAXED);
    if (bad)
        printf("rt %ld with a wrong siginfo\n", bad);
    else if (fixed || seen == rt_sent)
        printf("rt all delivered\n");
    else
        printf("rt %s %ld of %ld\n", seen < rt_sent ? "LOST" : "DOUBLED",
               seen < rt_sent ? rt_sent - seen : seen - rt_sent, rt_sent);
    /* How often the handler ran the hot functions (timing-dependent: not compared). */
    printf("handler calls %ld\n", (long)handler_calls);
    printf("rounds %ld,%ld,%ld,%ld\n", w[0].rounds, w[1].rounds, w[2].rounds, w[3].rounds);
    return (int)(total & 0x3f);
}
