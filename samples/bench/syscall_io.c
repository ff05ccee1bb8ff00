/* R1 (tandem-bench, docs/benchmarks.md): a syscall-heavy program doing file I/O. Each of
 * N rounds reads the clock (`clock_gettime`, a vDSO call that a recording turns into a
 * system call), formats a line with `snprintf` and `write`s it to FILE; then the file is
 * read back in 64-byte `read`s and its length checked against what was written. Exits 0
 * when it matches, 1 when not, 2 on a usage or I/O error; FILE is removed at the end.
 *
 *     syscall_io N FILE [syscall]
 *
 * With `syscall` the clock is read by the system call itself instead of the vDSO: gdb 13's
 * `record full` stops at the vDSO's `rdtscp` ("Process record does not support
 * instruction 0xf01f9"), so this is how gdb records the program at all. A recording by
 * tandem turns the vDSO's entry into the same system call anyway (docs/reverse.md).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s N FILE\n", argv[0]);
        return 2;
    }
    long n = atol(argv[1]);
    const char *path = argv[2];
    int direct = argc > 3 && strcmp(argv[3], "syscall") == 0;
    int fd = open(path, O_CREAT | O_TRUNC | O_RDWR, 0600);
    if (fd < 0) {
        perror(path);
        return 2;
    }
    long written = 0;
    char line[96];
    for (long i = 0; i < n; i++) {
        struct timespec ts;
        if (direct)
            syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &ts);
        else
            clock_gettime(CLOCK_MONOTONIC, &ts);
        int len = snprintf(line, sizeof line, "%ld %ld.%09ld\n", i, (long)ts.tv_sec,
                           ts.tv_nsec);
        if (write(fd, line, (size_t)len) != len) {
            perror("write");
            return 2;
        }
        written += len;
    }
    if (lseek(fd, 0, SEEK_SET) != 0) {
        perror("lseek");
        return 2;
    }
    long read_back = 0;
    char chunk[64];
    for (;;) {
        ssize_t got = read(fd, chunk, sizeof chunk);
        if (got < 0) {
            perror("read");
            return 2;
        }
        if (got == 0)
            break;
        read_back += got;
    }
    close(fd);
    unlink(path);
    printf("syscall_io: %ld lines, %ld bytes written, %ld read back\n", n, written, read_back);
    return read_back == written ? 0 : 1;
}
