// live_values.c: the program tests/live_values.rs debugs through `tandem lsp` and a bridged
// `tandem dap` (live values in the editor). Tests find lines by their LINE_* markers.
#include <stdio.h>

struct point {
    int x;
    int y;
};

int total = 0;

int scale(int factor, struct point p) {
    int sx = p.x * factor;
    int sy = p.y * factor;

    // LINE_BLANK: a comment, no code; a breakpoint here moves to the next line.
    int sum = sx + sy; // LINE_SUM
    total += sum;      // LINE_TOTAL
    return sum;
}

int main(void) {
    struct point p = {3, 4};
    int n = scale(5, p); // LINE_CALL
    printf("n=%d total=%d\n", n, total);
    return 0;
}
