/* Shapes of code for going back against gdb's `record full` (tests/reverse_gdb.rs):
 * recursion, a loop whose line makes two calls, a function called from several sites,
 * struct and array element writes, writes through pointers and in a callee, and with
 * the argument `crash` a write through a bad pointer made from a struct field. */
#include <stdio.h>
#include <string.h>

struct point {
    int x;
    int y;
    long tag;
};

static struct point g_pts[4];
static long g_hist[6];
static long g_calls;

__attribute__((noinline)) static long fact(int n)
{
    g_calls++;                           /* fact entry line */
    if (n <= 1)
        return 1;                        /* fact base line */
    long r = n * fact(n - 1);            /* fact recurse line */
    return r;                            /* fact return line */
}

__attribute__((noinline)) static int twice(int v)
{
    int t = v * 2;                       /* twice line */
    return t;
}

__attribute__((noinline)) static void bump(long *slot, long by)
{
    *slot += by;                         /* bump line */
}

__attribute__((noinline)) static void place(struct point *p, int x, int y)
{
    p->x = x;                            /* place x line */
    p->y = y;                            /* place y line */
    p->tag = (long)x * 100 + y;
}

int main(int argc, char **argv)
{
    long acc = 0;
    int crash = argc > 1 && strcmp(argv[1], "crash") == 0;
    long f = fact(5);                    /* call fact line */
    for (int i = 0; i < 6; i++) {
        acc += twice(i) + twice(i + 1);  /* two calls line */
        bump(&g_hist[i % 3], acc);       /* bump call line */
    }
    for (int k = 0; k < 4; k++)
        place(&g_pts[k], k + 1, 10 * k); /* place call line */
    acc += twice(7);                     /* third site line */
    long *p = &g_hist[4];
    *p = acc + f;                        /* pointer write line */
    g_hist[5] = g_calls;                 /* calls copy line */
    struct point *bad = crash ? (struct point *)(long)(g_pts[2].y * 4096) : &g_pts[0];
    bad->tag = acc;                      /* bad write line */
    printf("%ld %ld %ld %d\n", acc, f, g_hist[4], g_pts[3].y); /* done line */
    return 0;
}
