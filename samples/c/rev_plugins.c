/* Two libraries loaded one after the other at the same address (crates/tracer/tests/
 * record_libs.rs): argv[1] is loaded, called and unloaded, then argv[2] is loaded and
 * called twice. Both are built from samples/c/rev_plugin.c, so their code is laid out
 * alike: a breakpoint set on the second one's function must not trap in the first
 * one's, which a replay runs at that address earlier. */
#include <dlfcn.h>
#include <stdio.h>

__attribute__((noinline)) void done(int v)
{
    printf("%d\n", v);                          /* done line */
}

static int run(const char *path, int times)
{
    void *lib = dlopen(path, RTLD_NOW);
    if (!lib)
        return -1000;
    int (*f)(int) = (int (*)(int))dlsym(lib, "plugin_run");
    int r = 0;
    for (int i = 0; i < times; i++)
        r += f(i);
    if (times == 1)
        dlclose(lib);
    return r;
}

int main(int argc, char **argv)
{
    if (argc < 3)
        return 2;
    int a = run(argv[1], 1);
    int b = run(argv[2], 2);
    done(a + b);
    return 0;
}
