/* Calls into libc after it is loaded, for function breakpoints on libc's own
 * functions (puts, malloc) set while the program is stopped in main. */
#include <stdio.h>
#include <stdlib.h>

static void greet(const char *who)
{
    puts(who);
}

int main(void)
{
    int total = 0; /* stop here first: libc is loaded */
    for (int i = 0; i < 3; i++) {
        char *p = malloc(16 + i);
        total += p != NULL;
        free(p);
        greet("hello");
    }
    return total == 3 ? 0 : 1;
}
