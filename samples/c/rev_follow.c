/* Going forward to the present from a point a search of the past found by other moves
 * (tests/reverse_follow.rs): main's loop makes no system call, so from main's first
 * line to the end of the loop every point is in the interval of the present, wherever
 * in the loop the program is stopped. */
#include <stdio.h>

long g_total;

__attribute__((noinline)) void add(long v)
{
    g_total += v;                                       /* add line */
}

int main(void)
{
    for (int i = 0; i < 6; i++) {
        add(i * 3);                                     /* call line */
    }
    printf("total %ld\n", g_total);                     /* done line */
    return 0;
}
