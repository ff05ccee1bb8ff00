/* Breakpoints in a shared library while recording (tests/reverse_libs.rs): getppid
 * (in libc) is called once per round of a loop. The recording's first snapshot is
 * taken when execve returns, before libc is mapped, so every replay from it has to
 * plant the breakpoint's int3 when it maps libc again. */
#include <stdio.h>
#include <unistd.h>

long g_sum;

__attribute__((noinline)) static long ask(int i)
{
    return (long)getppid() % 7 + i;              /* ask line */
}

int main(void)
{
    for (int i = 0; i < 5; i++)
        g_sum += ask(i);                         /* loop line */
    printf("sum %ld\n", g_sum);                  /* done line */
    return 0;
}
