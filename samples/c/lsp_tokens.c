/* lsp_tokens.c: semantic tokens, declarations and code lenses (built with gcc -g -O0). */
#include "lsp_tokens.h"

enum mode { MODE_IDLE, MODE_BUSY };

struct box {
    int width;
    const char *label;
};

static const int limit = 10;
int total;

static int clamp(int value, const int ceiling) {
    // value > ceiling: "clamp" it
    const char *note = "value";
    if (value > ceiling)
        return ceiling;
    return value + (note[0] == 'v' ? 0 : 1);
}

int box_area(struct box *b) {
    enum mode m = MODE_BUSY;
    total += b->width;
    return clamp(b->width, limit) + (int)m;
}

int main(void) {
    struct box b = { 4, "box" };
    return box_area(&b) == 0;
}
