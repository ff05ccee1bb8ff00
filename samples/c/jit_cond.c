/* Conditions evaluated in the debuggee (tests/conditions_in_debuggee.rs): the same
 * conditional breakpoints must stop at exactly the same hits with and without it. */
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

enum color { RED, GREEN, BLUE };

struct sample {
    int count;
    unsigned char small;
    short level;
    enum color color;
    long values[4];
};

volatile long sink;
int zero;
long g_total;
unsigned int g_unsigned = 4294967290u;

void work(int i, struct sample *s)
{
    unsigned char c = (unsigned char)i;
    unsigned long u = (unsigned long)i * 2654435761u;
    signed char sc = (signed char)i;
    struct sample local = *s;
    sink += i + c + (long)u + sc + local.count; /* LINE_WORK */
    g_total += i;
}

void rare(int i)
{
    sink -= i; /* LINE_RARE */
}

static void *worker(void *arg)
{
    int id = (int)(long)arg;
    struct sample s = {0};
    for (int i = 0; i < 2000; i++) {
        s.count = i % 7;
        s.small = (unsigned char)(i * 3);
        s.level = (short)(i - 1000);
        s.color = (enum color)(i % 3);
        s.values[2] = (long)i * id;
        sink += i + id; /* LINE_THREAD */
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 30000;
    struct sample s = {0};
    for (int i = 0; i < n; i++) {
        s.count = i % 13;
        s.small = (unsigned char)i;
        s.level = (short)(i % 500 - 250);
        s.color = (enum color)(i % 3);
        s.values[2] = i / 3;
        work(i, &s);
        if (i % 500 == 0) /* LINE_AFTER_CALL */
            rare(i);
    }
    pthread_t t[4];
    for (long k = 0; k < 4; k++)
        pthread_create(&t[k], NULL, worker, (void *)(k + 1));
    for (int k = 0; k < 4; k++)
        pthread_join(t[k], NULL);
    if (argc > 2)
        sleep(atoi(argv[2])); /* LINE_SLEEP */
    return 0;
}
