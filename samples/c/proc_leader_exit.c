/* proc_leader_exit: the main thread starts a worker and calls pthread_exit; the
 * worker calls proc_worker_step 50 times, then the process exits 0. */
#include <pthread.h>
#include <time.h>

volatile int proc_steps;

__attribute__((noinline)) void proc_worker_step(int i) {
    proc_steps += i;
}

static void *worker(void *arg) {
    (void)arg;
    struct timespec ts = {0, 1000 * 1000};
    nanosleep(&ts, NULL);
    for (int i = 0; i < 50; i++)
        proc_worker_step(i);
    return NULL;
}

int main(void) {
    pthread_t t;
    pthread_create(&t, NULL, worker, NULL);
    pthread_exit(NULL);
}
