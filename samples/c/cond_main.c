/* Conditions at -O2 (tests/conditions_gdb.rs): the main unit of a two-file program.
 * g_never is defined here and read by conditions on lines of cond_lib.c, which does
 * not declare it. */
#include <stdio.h>
#include <stdlib.h>

int g_never;      /* never 1: a condition naming it is false */
int g_phase = 3;  /* read by conditions too */
static int s_only_main = 11; /* a static of this unit only */

int work(int a, int b);      /* cond_lib.c */
int opaque(int x);           /* cond_lib.c */
int drift(int k);            /* cond_lib.c */

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 120;
    long sum = s_only_main;
    for (int i = 0; i < n; i++) {
        sum += work(i, n - i);
        if (i % 40 == 5)
            sum += drift(opaque(i)); /* k comes from a call: no call-site value for it */
    }
    printf("sum %ld\n", sum);
    return 0;
}
