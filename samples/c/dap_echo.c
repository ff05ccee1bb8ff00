// dap_echo.c: reads one line from its terminal and answers it; the integratedTerminal
// test types the line through tandem's terminal relay.
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(void) {
    char line[256];
    printf("tty=%d\n", isatty(0));
    fflush(stdout);
    if (!fgets(line, sizeof line, stdin))
        return 2;
    line[strcspn(line, "\r\n")] = 0;
    printf("got: %s\n", line); // LINE_GOT
    return 0;
}
