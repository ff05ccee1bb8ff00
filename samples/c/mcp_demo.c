/* The MCP tests' program: a struct, an array, a loop, output on both streams, and
 * modes that crash (SIGSEGV through a NULL pointer) or sleep (a run that must come
 * back as `running`). The tests find lines by the MARK comments. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

struct point {
    int x;
    int y;
};

static int counter = 0;

static int add(int a, int b) {
    int sum = a + b; /* MARK:add */
    return sum;
}

static int crash(int *p) {
    return *p; /* MARK:crash */
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "run";
    struct point pt = {3, 4};
    int values[100];
    for (int i = 0; i < 100; i++)
        values[i] = i * i;
    printf("hello from mcp_demo\n");
    fflush(stdout);
    fprintf(stderr, "to stderr\n");
    if (strcmp(mode, "crash") == 0)
        return crash(NULL);
    if (strcmp(mode, "sleep") == 0) {
        for (;;)
            sleep(1);
    }
    int total = 0;
    for (int i = 0; i < 3; i++) {
        total = add(total, pt.x + i); /* MARK:loop */
        counter++;
    }
    printf("total %d values %d\n", total, values[99]);
    return total % 256 == 12 ? 3 : 1; /* MARK:end */
}
