/* Conditions at -O2 (tests/conditions_gdb.rs): the library unit. At -O2 gcc describes
 * `a`, `b` and `k` after the first call by DW_OP_entry_value (they are not used after
 * it), so a condition reading them needs the caller's call site. g_never is not
 * declared here: conditions find it in cond_main.c's unit. t_works is thread-local:
 * a condition on it reads the hitting thread's copy. */

int g_lib_total;
__thread int t_works;
extern int g_phase; /* declared here, defined in cond_main.c */

__attribute__((noipa)) static int leaf(int x) {
    __asm__ volatile("" : "+r"(x));
    return x + 1;
}

__attribute__((noipa)) int opaque(int x) {
    __asm__ volatile("" : "+r"(x));
    return x ^ 1;
}

int work(int a, int b) {
    int r = leaf(b);   /* LINE_WORK_CALL */
    r += leaf(r);      /* LINE_WORK_AFTER */
    g_lib_total += r;  /* LINE_WORK_TOTAL */
    t_works++;         /* LINE_WORK_TLS */
    return r;
}

int drift(int k) {
    int r = leaf(3);   /* LINE_DRIFT_CALL */
    g_lib_total -= r * g_phase; /* LINE_DRIFT_AFTER */
    return r;
}
