// A watched local's frame left by a C++ exception (tests/watch_scope.rs): the catch in
// main calls into the runtime, whose frames reuse the thrower's stack slots.
#include <cstdio>
#include <stdexcept>

int g_sink;

__attribute__((noinline)) int reuse(int v)
{
    int other = v; // reuse line
    other += 1;
    return other;
}

__attribute__((noinline)) void thrower(int n)
{
    int depth = n; // thrower line
    depth += 1;
    g_sink += depth;
    throw std::runtime_error("out"); // throw line
}

int main()
{
    int r = 0;
    try {
        thrower(7);
    } catch (const std::exception &e) { // catch line
        r = 1;
    }
    int c = reuse(r);
    std::printf("%d %d\n", c, g_sink);
    return 0;
}
