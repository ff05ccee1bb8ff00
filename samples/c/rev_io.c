/* Going back in time (tests/reverse.rs, crates/tracer/tests/record.rs): a program whose
 * inputs are not reproducible — a file, the time, its pid, getrandom() — and whose
 * effects must happen once: its stdout and the file it writes. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

long g_sum;

__attribute__((noinline)) void note(int i, int r)
{
    g_sum += r + i;                                   /* note line */
    printf("step %d r=%d sum=%ld\n", i, r, g_sum);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    if (argc < 3)
        return 2;
    FILE *in = fopen(argv[1], "r");
    char line[128] = {0};
    if (!in || !fgets(line, sizeof line, in))
        return 3;
    fclose(in);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    time_t now = time(NULL);
    unsigned seed = 0;
    if (getrandom(&seed, sizeof seed, 0) != sizeof seed)
        return 4;
    srand(seed ^ (unsigned)now ^ (unsigned)ts.tv_nsec);
    long pid = getpid();
    FILE *out = fopen(argv[2], "w");
    if (!out)
        return 5;
    for (int i = 0; i < 5; i++) {
        int r = rand() % 1000;
        note(i, r);                                   /* loop line */
        fprintf(out, "%d %d\n", i, r);
    }
    fprintf(out, "pid=%ld t=%ld ns=%ld in=%s", pid, (long)now, (long)ts.tv_nsec, line);
    fclose(out);
    return (int)(g_sum % 7) + 10;
}
