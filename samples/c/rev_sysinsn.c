/* A system call made by the program's own `syscall` instruction
 * (tests/reverse_syscall_step.rs): stepping over that instruction by instruction while
 * recording must record the call (its result, the pid), so a replay passes it. */
#include <stdio.h>
#include <unistd.h>

static long g_pid;

static long raw_getpid(void)
{
    long r;
    __asm__ volatile("syscall" : "=a"(r) : "0"(39L) : "rcx", "r11", "memory"); /* syscall line */
    return r;
}

int main(void)
{
    long acc = 1;
    g_pid = raw_getpid();
    acc += g_pid % 7; /* after line */
    for (int i = 0; i < 3; i++) {
        acc += i; /* loop line */
    }
    printf("%ld %ld %ld\n", g_pid, (long)getpid(), acc);
    return 0;
}
