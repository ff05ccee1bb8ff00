/* rev_timedwait: a worker waits on a condition nobody signals, with a 50 ms timeout,
 * while the main thread joins it (issue 30: every thread waits, one with a timeout).
 * Prints what the wait returned (ETIMEDOUT = 110). */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <time.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int got;

static void *worker(void *arg)
{
    (void)arg;
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_nsec += 50 * 1000 * 1000;
    if (until.tv_nsec >= 1000000000) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000;
    }
    pthread_mutex_lock(&m);
    got = pthread_cond_timedwait(&cv, &m, &until);
    pthread_mutex_unlock(&m);
    return NULL;
}

int main(void)
{
    pthread_t t;
    pthread_create(&t, NULL, worker, NULL);
    pthread_join(t, NULL);
    printf("%d\n", got);
    return got == ETIMEDOUT ? 0 : 1;
}
