/* The torture program of tests/torture.rs: four threads call the hot functions of
 * torture_lib.c in rounds while a 2 kHz SIGALRM handler calls them too. Its result
 * depends only on how many rounds each thread ran, which it prints, so a debugged run
 * can be compared with a plain run of the same rounds:
 *
 *   torture SECONDS        run rounds until SECONDS have passed, print the result
 *   torture -r R0,R1,R2,R3 run exactly those rounds, print the result
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

int hot_add(int i, int t);
unsigned hot_mix(unsigned h, int i);

int g_never = 0;
#define THREADS 4
#define CALLS 64

static volatile sig_atomic_t stop_now;
static volatile sig_atomic_t ticks;
static volatile unsigned handler_mix = 1;
static long fixed_rounds[THREADS];
static int fixed;

struct worker {
    int t;
    long rounds;
    unsigned sum;
};

static void on_alarm(int sig)
{
    (void)sig;
    /* Now and then the handler runs the hot code too: signals land inside it and it
     * lands in it. (On every tick, a debugger that takes longer than the 500 us between
     * ticks to pass its breakpoints would keep the thread in the handler for good.) */
    if ((ticks & 15) == 0)
        handler_mix = hot_mix(handler_mix, hot_add((int)ticks, 9));
    ticks = ticks + 1;
}

static void *work(void *arg)
{
    struct worker *w = arg;
    int i = 0;
    unsigned h = 2166136261u ^ (unsigned)w->t;
    for (;;) {
        if (fixed ? w->rounds == fixed_rounds[w->t] : stop_now)
            break;
        for (int k = 0; k < CALLS; k++) {
            int x = hot_add(i, w->t);          /* T:call */
            h = hot_mix(h, x);
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
    sa.sa_flags = SA_RESTART;
    sigaction(SIGALRM, &sa, NULL);
    /* The workers take the timer's signals: the main thread blocks it. */
    sigset_t alrm;
    sigemptyset(&alrm);
    sigaddset(&alrm, SIGALRM);
    struct itimerval it = {{0, 500}, {0, 500}};
    if (!fixed)
        setitimer(ITIMER_REAL, &it, NULL);
    pthread_t th[THREADS];
    struct worker w[THREADS];
    for (int t = 0; t < THREADS; t++) {
        w[t].t = t;
        w[t].rounds = 0;
        w[t].sum = 0;
        pthread_create(&th[t], NULL, work, &w[t]);
    }
    pthread_sigmask(SIG_BLOCK, &alrm, NULL);
    if (!fixed) {
        struct timespec start, now;
        clock_gettime(CLOCK_MONOTONIC, &start);
        do {
            struct timespec nap = {0, 10000000};
            nanosleep(&nap, NULL);
            clock_gettime(CLOCK_MONOTONIC, &now);
        } while ((now.tv_sec - start.tv_sec) + (now.tv_nsec - start.tv_nsec) / 1e9 < seconds);
        stop_now = 1;
    }
    for (int t = 0; t < THREADS; t++)
        pthread_join(th[t], NULL);
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &off, NULL);
    unsigned total = 0;
    for (int t = 0; t < THREADS; t++) {
        printf("thread %d rounds %ld sum %08x\n", t, w[t].rounds, w[t].sum);
        total = total * 31 + w[t].sum;
    }
    printf("total %08x\n", total);
    printf("rounds %ld,%ld,%ld,%ld\n", w[0].rounds, w[1].rounds, w[2].rounds, w[3].rounds);
    return (int)(total & 0x3f);
}
