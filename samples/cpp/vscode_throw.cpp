// vscode_throw.cpp: throws of several kinds for tests/vscode_flow.rs, each caught; the
// first argument picks one: `invalid` (std::invalid_argument), `runtime`
// (std::runtime_error), `custom` (a class that overrides what()), `int` (throw 42).
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>

struct Custom : std::runtime_error {
    Custom() : std::runtime_error("hidden") {}
    const char *what() const noexcept override { return "computed at run time"; }
};

static int parse(const char *kind) {
    if (std::strcmp(kind, "invalid") == 0)
        throw std::invalid_argument("bad value: " + std::string(kind)); // THROW_INVALID
    if (std::strcmp(kind, "runtime") == 0)
        throw std::runtime_error("a runtime error with a message longer than fifteen");
    if (std::strcmp(kind, "custom") == 0)
        throw Custom();
    if (std::strcmp(kind, "int") == 0)
        throw 42;
    return 0;
}

int main(int argc, char **argv) {
    const char *kind = argc > 1 ? argv[1] : "invalid";
    try {
        parse(kind);
    } catch (const std::exception &e) {
        std::printf("caught: %s\n", e.what());
        return 1;
    } catch (int n) {
        std::printf("caught: %d\n", n);
        return 2;
    }
    return 0;
}
