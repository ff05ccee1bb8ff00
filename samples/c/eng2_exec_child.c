/* The program eng2_exec replaces itself with. */
#include <string.h>

static int child_work(const char *tag, int n)
{
    return (int)strlen(tag) + n;
}

int main(int argc, char **argv)
{
    int r = child_work(argc > 1 ? argv[1] : "", 3);
    return r == 14 ? 0 : 1;
}
