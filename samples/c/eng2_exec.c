/* Calls a function, then replaces itself with the program named by argv[1]
 * (eng2_exec_child): breakpoints must be re-resolved in the new image. */
#include <stdio.h>
#include <unistd.h>

static int before_exec(int n)
{
    return n * 2;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    int r = before_exec(21);
    fflush(stdout);
    execl(argv[1], argv[1], "from-parent", (char *)NULL);
    return r; /* exec failed */
}
