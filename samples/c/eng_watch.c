/* Data breakpoints: a global counter, a struct field, an array element and an
   unaligned int written in a loop, and the counter written again by a thread
   created after the watchpoints were set. With an argument, it first waits (in two
   threads) until a debugger sets `go`, so it can be attached to before any write. */
#include <pthread.h>
#include <unistd.h>

struct point {
    int x;
    long y;
};

int counter;
struct point origin;
struct point *where = &origin;
short samples[8];
long total;
char bytes[16] __attribute__((aligned(16)));
int twelve[3];
volatile int go;

static void bump(int *p, int by)
{
    *p += by; /* bump */
}

static void *worker(void *arg)
{
    (void)arg;
    counter = 100; /* worker write */
    return 0;
}

static void *waiter(void *arg)
{
    (void)arg;
    while (!go)
        usleep(1000);
    counter += 1000; /* waiter write */
    return 0;
}

int main(int argc, char **argv)
{
    (void)argv;
    int waiting = argc > 1;
    pthread_t w;
    if (waiting) {
        pthread_create(&w, 0, waiter, 0);
        while (!go)
            usleep(1000);
    }
    int local = 0;
    for (int i = 0; i < 5; i++) { /* loop */
        bump(&counter, 1); /* call bump */
        origin.y = i * 10; /* write y */
        samples[3] = (short)i; /* write sample */
        local += i; /* add local */
    }
    int *unaligned = (int *)(bytes + 2);
    *unaligned = 7; /* unaligned write */
    twelve[1] = local;
    pthread_t th;
    pthread_create(&th, 0, worker, 0); /* create */
    pthread_join(th, 0);
    if (waiting)
        pthread_join(w, 0);
    total = counter + local; /* total */
    return 0;
}
