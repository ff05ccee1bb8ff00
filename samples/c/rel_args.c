// rel_args.c: prints its arguments and the REL_* environment variables as hex, one per line,
// so the launch tests can compare them byte for byte (spaces, quotes, newlines and all).
#include <stdio.h>
#include <string.h>

extern char **environ;

static void hex(const char *tag, const char *s) {
    printf("%s ", tag);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        printf("%02x", *p);
    printf("\n");
}

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++)
        hex("ARG", argv[i]);
    for (char **e = environ; *e; e++)
        if (!strncmp(*e, "REL_", 4))
            hex("ENV", *e);
    printf("END %d\n", argc - 1);
    return 0;
}
