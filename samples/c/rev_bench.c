/* Recording overhead (docs/benchmarks.md): `syscalls N` makes N cheap system calls,
 * `compute N` runs N rounds of arithmetic with none. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    long n = argc > 2 ? atol(argv[2]) : 1000000;
    unsigned long acc = 1;
    if (argc > 1 && strcmp(argv[1], "syscalls") == 0) {
        for (long i = 0; i < n; i++)
            acc += (unsigned long)getppid();
    } else {
        for (long i = 0; i < n; i++)
            acc = acc * 6364136223846793005UL + (unsigned long)i;
    }
    return (int)(acc & 1);
}
