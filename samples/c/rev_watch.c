/* Reverse data breakpoints (tests/reverse_watch.rs): writes to watch, some in the
 * interval between system calls that the point going back starts from, some before a
 * system call; with the argument `crash` it makes a bad pointer and dies writing
 * through it. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

long g_total;
int g_cells[8];
int *g_slot = &g_cells[0];

__attribute__((noinline)) void add(long v)
{
    g_total += v;                                      /* add line */
}

__attribute__((noinline)) void pick(int k)
{
    g_slot = k < 8 ? &g_cells[k] : (int *)(long)(k * 4096); /* pick line */
}

int main(int argc, char **argv)
{
    int crash = argc > 1 && strcmp(argv[1], "crash") == 0;
    for (int i = 0; i < 6; i++) {
        add(i * 3);
        if (i == 3) {
            char msg[32];
            int n = snprintf(msg, sizeof msg, "half %ld\n", g_total);
            if (write(1, msg, (size_t)n) != n)                 /* write line */
                return 2;
        }
    }
    (void)getppid();                                    /* interval line */
    g_total *= 2;                                       /* double line */
    pick(3);
    for (int i = 0; i < 8; i++)
        g_cells[i] = i;
    pick(crash ? 9 : 5);
    *g_slot = 42;                                       /* store line */
    printf("total %ld slot %d\n", g_total, g_cells[5]); /* done line */
    return 0;
}
