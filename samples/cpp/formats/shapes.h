// Shared declarations of the debug-formats sample (tests/debug_formats.rs).
#pragma once
#include <string>
#include <vector>

namespace shapes {
struct Rect {
    int width;
    int height;
    double scale;
};

template <typename T> struct Tagged {
    T value;
    const char *tag;
};

int area(const Rect &r, int extra);
double total(const std::vector<Rect> &rects);
} // namespace shapes
