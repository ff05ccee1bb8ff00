/* Recording overhead (docs/benchmarks.md) and replays from later snapshots
 * (crates/tracer/tests/record.rs): `syscalls N` makes N cheap system calls, calling
 * tick() every 1000 of them; `compute N` runs N rounds of arithmetic with none. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

volatile unsigned long g_acc;

__attribute__((noinline)) void tick(long i, unsigned long acc)
{
    g_acc = acc + (unsigned long)i;
}

int main(int argc, char **argv)
{
    long n = argc > 2 ? atol(argv[2]) : 1000000;
    unsigned long acc = 1;
    if (argc > 1 && strcmp(argv[1], "syscalls") == 0) {
        for (long i = 0; i < n; i++) {
            acc += (unsigned long)getppid() + (unsigned long)getpid() * (unsigned long)i;
            if (i % 1000 == 999)
                tick(i, acc);
        }
    } else {
        for (long i = 0; i < n; i++)
            acc = acc * 6364136223846793005UL + (unsigned long)i;
    }
    return (int)(acc & 1);
}
