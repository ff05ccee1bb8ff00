/* A signal handler interrupting main: unwinding through the signal trampoline. */
#include <signal.h>

volatile int handled;

static void on_usr1(int signo)
{
    handled = signo;
}

int main(void)
{
    signal(SIGUSR1, on_usr1);
    raise(SIGUSR1);
    return handled == SIGUSR1 ? 0 : 1;
}
