/* zstd's multi-threaded compression for the differential torture harness
 * (tests/torture_real.rs): a deterministic buffer (text-like, compressible) is
 * compressed with ZSTD_c_nbWorkers = 2, 3 and 4 (small jobs, so the workers share the
 * work), decompressed and compared; it prints the sizes and checksums, which zstd makes
 * independent of how its workers are scheduled. The buffer is filled block by block by
 * torture_mark(block, ...): the harness's sometimes-true condition counts its hits
 * against the "marks" line (blocks with block % 16 == 0), which the program computes.
 *
 *   zstd-mt-O2 [KIB]   (the buffer's size, default 4096)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ZSTD_STATIC_LINKING_ONLY
#include "zstd.h"

#define BLOCK 4096

static unsigned long long state = 0x9e3779b97f4a7c15ull;

static unsigned next(void)
{
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return (unsigned)(state >> 33);
}

/* Fills one block with words from a small vocabulary (so it compresses). */
__attribute__((noinline)) void torture_mark(int block, unsigned char *p, size_t n)
{
    static const char *words[] = {"alpha ", "beta ", "gamma ", "delta ", "torture ",
                                  "signal ", "zstd ", "worker ", "\n", "0123456789 "};
    size_t i = 0;
    while (i < n) {
        const char *w = words[next() % 10];
        if (block % 7 == 0 && next() % 3 == 0)
            w = "noise";
        for (; *w && i < n; w++)
            p[i++] = (unsigned char)*w;
    }
}

static unsigned fnv(const unsigned char *p, size_t n)
{
    unsigned h = 2166136261u;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 16777619u;
    return h;
}

int main(int argc, char **argv)
{
    size_t kib = argc > 1 ? (size_t)atol(argv[1]) : 4096;
    size_t size = kib * 1024;
    unsigned char *src = malloc(size);
    long marks = 0;
    int blocks = 0;
    for (size_t at = 0; at < size; at += BLOCK, blocks++) {
        torture_mark(blocks, src + at, size - at < BLOCK ? size - at : BLOCK);
        marks += blocks % 16 == 0;
    }
    printf("input %zu bytes in %d blocks, checksum %08x\n", size, blocks, fnv(src, size));
    size_t cap = ZSTD_compressBound(size);
    unsigned char *dst = malloc(cap);
    unsigned char *back = malloc(size);
    int failed = 0;
    for (int workers = 2; workers <= 4; workers++) {
        ZSTD_CCtx *cctx = ZSTD_createCCtx();
        ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, 3);
        size_t r = ZSTD_CCtx_setParameter(cctx, ZSTD_c_nbWorkers, workers);
        if (ZSTD_isError(r)) {
            fprintf(stderr, "nbWorkers: %s\n", ZSTD_getErrorName(r));
            return 2;
        }
        ZSTD_CCtx_setParameter(cctx, ZSTD_c_jobSize, 512 * 1024);
        ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 1);
        size_t c = ZSTD_compress2(cctx, dst, cap, src, size);
        ZSTD_freeCCtx(cctx);
        if (ZSTD_isError(c)) {
            fprintf(stderr, "compress: %s\n", ZSTD_getErrorName(c));
            return 2;
        }
        size_t d = ZSTD_decompress(back, size, dst, c);
        int same = !ZSTD_isError(d) && d == size && memcmp(back, src, size) == 0;
        failed |= !same;
        printf("workers %d: compressed %zu bytes, checksum %08x, round trip %s\n", workers, c,
               fnv(dst, c), same ? "equal" : "DIFFERENT");
    }
    printf("marks %ld\n", marks);
    free(src);
    free(dst);
    free(back);
    return failed;
}
