/* rev_stdin: reads numbers from stdin with read(2) until end of input, adding them up
 * (crates/tracer/tests/record.rs: a recorded call that waits for another process,
 * buffered inside the program, paused and gone back over). */
#include <stdlib.h>
#include <unistd.h>

long g_total;

__attribute__((noinline)) void note(long value)
{
    g_total += value; /* note line */
}

int main(void)
{
    char buf[64];
    ssize_t n;
    while ((n = read(0, buf, sizeof buf - 1)) > 0) {
        buf[n] = 0;
        note(atol(buf));
    }
    return (int)(g_total % 100);
}
