/* Loads the library named by argv[1] with dlopen and calls plugin_add from it. */
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    void *lib = dlopen(argv[1], RTLD_NOW);
    if (!lib)
        return 1;
    int (*add)(int, int) = (int (*)(int, int))dlsym(lib, "plugin_add");
    int r = add(4, 5);
    printf("%d\n", r);
    return r;
}
