// rel_faults.c: the fault paths of the reliability suite, one mode per argv[1]: a fault, an
// abort, an exit during a step, a long-running loop, 200 short-lived threads, fork + exec,
// many threads reaching one breakpoint at once, and a main thread that does nothing but
// create threads. Exit code 0 means the mode's own check passed.
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

volatile unsigned long ticks;
volatile int bodies;
pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

__attribute__((noinline)) void tick(int step) {
    ticks += step; // LINE_TICK
}

__attribute__((noinline)) void crash(void) {
    volatile int *p = (volatile int *)0x10;
    *p = 1; // LINE_SEGV
}

__attribute__((noinline)) void leave(int code) {
    exit(code); // LINE_EXIT
}

__attribute__((noinline)) void *body(void *arg) {
    (void)arg;
    pthread_mutex_lock(&lock);
    bodies++; // LINE_BODY
    pthread_mutex_unlock(&lock);
    return NULL;
}

static pthread_barrier_t barrier;
volatile long churned;

__attribute__((noinline)) void *churn_body(void *arg) {
    long k = (long)arg;
    __atomic_fetch_add(&churned, 1, __ATOMIC_RELAXED); // LINE_CHURN
    return (void *)k;
}

__attribute__((noinline)) void meet(void) {
    pthread_mutex_lock(&lock);
    bodies++;
    pthread_mutex_unlock(&lock);
}

static void *racer(void *arg) {
    (void)arg;
    pthread_barrier_wait(&barrier);
    meet(); // LINE_MEET
    return NULL;
}

__attribute__((noinline)) int after_fork(int status) {
    return status; // LINE_AFTER_FORK
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "spin";
    if (!strcmp(mode, "segv")) {
        crash();
    } else if (!strcmp(mode, "abort")) {
        abort();
    } else if (!strcmp(mode, "exit")) {
        tick(1); // LINE_BEFORE_EXIT
        leave(7);
    } else if (!strcmp(mode, "spin")) {
        for (;;) {
            tick(1);
            usleep(1000);
        }
    } else if (!strcmp(mode, "threads")) {
        // 200 threads, created and joined ten at a time.
        for (int round = 0; round < 20; round++) {
            pthread_t t[10];
            for (int i = 0; i < 10; i++)
                pthread_create(&t[i], NULL, body, NULL);
            for (int i = 0; i < 10; i++)
                pthread_join(t[i], NULL);
        }
        return bodies == 200 ? 0 : 1;
    } else if (!strcmp(mode, "race")) {
        enum { N = 8 };
        pthread_t t[N];
        pthread_barrier_init(&barrier, NULL, N);
        for (int i = 0; i < N; i++)
            pthread_create(&t[i], NULL, racer, NULL);
        for (int i = 0; i < N; i++)
            pthread_join(t[i], NULL);
        return bodies == N ? 0 : 1;
    } else if (!strcmp(mode, "churn")) {
        // Detached threads created back to back: the main thread is inside clone most of
        // the time, so a debugger that stops it is likely to find it there.
        // Enough that a breakpoint set 20-95 ms after the start lands while it runs.
        enum { N = 4000 };
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        for (long i = 0; i < N; i++) {
            pthread_t t;
            int err = pthread_create(&t, &attr, churn_body, (void *)i);
            if (err == EAGAIN) { // too many at once: let some finish
                usleep(100);
                i--;
            } else if (err != 0) {
                fprintf(stderr, "pthread_create: %s\n", strerror(err));
                return 2;
            }
        }
        while (__atomic_load_n(&churned, __ATOMIC_RELAXED) < N)
            usleep(1000);
        return 0;
    } else if (!strcmp(mode, "forkexec")) {
        pid_t child = fork();
        if (child == 0) {
            execl("/bin/sh", "sh", "-c", "exit 5", (char *)NULL);
            _exit(127);
        }
        int status = 0;
        waitpid(child, &status, 0);
        return after_fork(WIFEXITED(status) ? WEXITSTATUS(status) : 99) == 5 ? 0 : 1;
    }
    return 0;
}
