/* A global written by a signal handler, for going back against gdb's `record full`
 * (tests/reverse_gdb.rs): the program's own division by zero raises SIGFPE, whose
 * handler writes `g_sig` and jumps back out; a watchpoint on `g_sig` and
 * `reverseContinue` from the end find the handler's write. */
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

static volatile int g_sig;
static volatile int g_zero;
static sigjmp_buf g_back;

static void on_fpe(int sig)
{
    g_sig = sig + 100;                     /* handler line */
    siglongjmp(g_back, 1);
}

int main(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_fpe;
    sigaction(SIGFPE, &sa, NULL);
    int q = 7;
    g_sig = 1;                             /* first write line */
    if (sigsetjmp(g_back, 1) == 0)
        q = 100 / g_zero;                  /* divide line */
    q += g_sig;                            /* after line */
    printf("%d %d\n", q, g_sig);           /* done line */
    return 0;
}
