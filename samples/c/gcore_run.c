/* gcore_run.c (tests/gcore.rs): two workers add up numbers with short sleeps between
 * rounds; the main thread says "ready" once they run, joins them, then loads libm with
 * dlopen — the dynamic linker calls _dl_debug_state, where tandem keeps an int3 while
 * attached, so one left behind would kill the program with SIGTRAP — and prints the
 * sums, exiting with 3. The output does not depend on timing. Its own executable is also
 * mapped shared (a core leaves such a mapping's bytes to the file). */
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#define ROUNDS 500
static long sums[2];
const volatile unsigned char *shared_exe;

__attribute__((noinline)) long add_round(long acc, long i, long id) {
    return acc + i * (id + 1);
}

static void *worker(void *arg) {
    long id = (long)arg;
    long acc = 0;
    for (long i = 0; i < ROUNDS; i++) {
        acc = add_round(acc, i, id);
        usleep(2000);
    }
    sums[id] = acc;
    return NULL;
}

int main(void) {
    pthread_t t[2];
    int fd = open("/proc/self/exe", O_RDONLY);
    void *map = fd < 0 ? MAP_FAILED : mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
    shared_exe = map == MAP_FAILED ? NULL : map;
    for (long i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, worker, (void *)i);
    printf("ready\n");
    fflush(stdout);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL); /* main joins */
    void *m = dlopen("libm.so.6", RTLD_NOW);
    printf("sums %ld %ld libm %s\n", sums[0], sums[1], m ? "yes" : "no");
    fflush(stdout);
    return 3;
}
