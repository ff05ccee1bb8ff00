// The second unit of the debug-formats sample: a function breakpoint target and locals.
#include "shapes.h"

namespace shapes {
static int twice(int v) { return v * 2; }

int area(const Rect &r, int extra) {
    int base = r.width * r.height;
    Tagged<int> tagged{base + extra, "area"};
    int doubled = twice(tagged.value);
    return doubled / 2; // area returns
}

double total(const std::vector<Rect> &rects) {
    double sum = 0;
    for (const Rect &r : rects) {
        sum += area(r, 1) * r.scale;
    }
    return sum; // total returns
}
} // namespace shapes
