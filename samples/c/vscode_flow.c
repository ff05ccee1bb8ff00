// vscode_flow.c: the C program of tests/vscode_flow.rs. Its first argument picks what
// it does: `output` prints to stdout and stderr and reaches a breakpoint, `crash` prints
// and then dereferences NULL, `echo` reads a line from stdin and answers it, `recurse`
// recurses 45 deep before a breakpoint.
#include <stdio.h>
#include <string.h>
#include <unistd.h>

struct point {
    int x;
    int y;
};

static int depth_reached;

static int stop_here(int depth) {
    depth_reached = depth; // BREAK_DEEPEST
    return depth;
}

static int recurse(int depth, int limit) {
    int local = depth * 10;
    if (depth == limit)
        return stop_here(depth);
    return recurse(depth + 1, limit) + local - local;
}

static void crash(int *p) {
    *p = 1; // CRASH_LINE
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "output";
    struct point origin = {3, 4};
    int counter = 41;
    if (strcmp(mode, "output") == 0) {
        printf("tty: %d %d %d\n", isatty(0), isatty(1), isatty(2));
        // Enough lines that the last ones are still in flight when the stop is seen.
        for (int i = 0; i < 3000; i++)
            printf("line %04d of the output before the breakpoint\n", i);
        printf("before the breakpoint\n");
        fprintf(stderr, "on stderr\n");
        counter++; // BREAK_OUTPUT
        printf("after the breakpoint %d %d\n", counter, origin.x);
    } else if (strcmp(mode, "crash") == 0) {
        printf("before the crash\n");
        crash((int *)0);
    } else if (strcmp(mode, "echo") == 0) {
        char line[128];
        printf("type something\n");
        if (!fgets(line, sizeof line, stdin))
            return 2;
        line[strcspn(line, "\r\n")] = 0;
        printf("got: %s\n", line);
    } else if (strcmp(mode, "recurse") == 0) {
        recurse(1, 45);
    }
    return counter - 41;
}
