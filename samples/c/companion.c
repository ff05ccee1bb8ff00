// companion.c: the program tests/lsp_companion.rs debugs through `tandem lsp` in companion
// mode (beside clangd): the hit count of a breakpoint line, the value a function returned
// after a step out, live hovers only while paused. Tests find lines by their LINE_* markers.
#include <stdio.h>

int square(int v) {
    int sq = v * v; // LINE_SQ
    return sq;
}

int main(void) {
    int acc = 0;
    for (int i = 1; i <= 5; i++) {
        acc += square(i); // LINE_CALL
    }
    printf("acc=%d\n", acc);
    return 0;
}
