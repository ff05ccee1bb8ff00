/* The program forks.c execs and spawns: its exit code is a function of its argument,
 * so the parent's report shows it ran as it would alone. */
#include <stdlib.h>

__attribute__((noinline)) static int square_plus(int n)
{
    int r = n * n + 3; /* S:target */
    return r;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 0;
    return square_plus(n) % 64;
}
