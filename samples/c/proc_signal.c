/* proc_signal: raises SIGUSR1 three times (its handler counts) and exits with the
 * count. */
#include <signal.h>

static volatile int proc_usr1_count;

static void on_usr1(int sig) {
    (void)sig;
    proc_usr1_count++;
}

int main(void) {
    signal(SIGUSR1, on_usr1);
    for (int i = 0; i < 3; i++)
        raise(SIGUSR1);
    return proc_usr1_count;
}
