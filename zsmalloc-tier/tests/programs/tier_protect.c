/* The tier's protection test program: memory whose pages the program protects itself, as
 * runtimes do (guard pages, read-only data, PROT_NONE holes, reservations committed later,
 * locked pages), filled past the budget and read back byte for byte. Every command prints
 * "ok ..." and exits 0, or names the first wrong word and exits 1.
 *
 *   guards MIB     MIB MiB in blocks of 64 pages: a PROT_NONE guard, 47 pages read and
 *                  written, 16 made read-only once filled; read back twice, the read-only
 *                  pages made writable again and rewritten, each guard checked to fault
 *   rowrite MIB    MIB MiB filled, made read-only, pushed out by as much again, then one
 *                  write to it: the program dies by SIGSEGV, as it would untiered
 *   reserve MIB    2*MIB MiB reserved PROT_NONE, half committed by mprotect and half by
 *                  mmap(MAP_FIXED), filled and read back; a quarter given back by
 *                  mmap(MAP_FIXED, PROT_NONE), checked to fault, and committed again: zeros
 *   lock MIB       1 MiB locked (mlock) and MIB MiB more filled: the locked pages stay
 *                  resident (mincore), and every page reads back
 *   filemap MIB    MIB MiB reserved and committed, filled; a file mapped with MAP_FIXED over
 *                  its second quarter (as a JVM maps its class-data archive into a
 *                  reservation) reads the file; the rest read back; then fresh anonymous
 *                  memory mapped over the file's place reads zeros and takes new words
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define PAGE 4096UL
#define WORDS (PAGE / sizeof(uint64_t))

static uint64_t word_of(uint64_t seed, size_t page, size_t w) {
    /* Half the page varies, half repeats: it compresses, as memory does. */
    uint64_t x = seed * 0x9e3779b97f4a7c15ULL + page * 0x100000001b3ULL + (w < WORDS / 2 ? w : 0);
    x ^= x >> 29;
    return x * 0xbf58476d1ce4e5b9ULL;
}

static void fill(char *at, size_t pages, uint64_t seed) {
    for (size_t p = 0; p < pages; p++) {
        uint64_t *q = (uint64_t *)(at + p * PAGE);
        for (size_t w = 0; w < WORDS; w++) q[w] = word_of(seed, p, w);
    }
}

static int check(const char *what, const char *at, size_t pages, uint64_t seed) {
    for (size_t p = 0; p < pages; p++) {
        const uint64_t *q = (const uint64_t *)(at + p * PAGE);
        for (size_t w = 0; w < WORDS; w++) {
            if (q[w] != word_of(seed, p, w)) {
                printf("%s: page %zu word %zu is %#llx, not %#llx\n", what, p, w,
                       (unsigned long long)q[w], (unsigned long long)word_of(seed, p, w));
                return 1;
            }
        }
    }
    return 0;
}

static int zeros(const char *what, const char *at, size_t len) {
    for (size_t i = 0; i < len; i++) {
        if (at[i]) {
            printf("%s: byte %zu is %d, not 0\n", what, i, at[i]);
            return 1;
        }
    }
    return 0;
}

static sigjmp_buf jump;
static void *volatile fault_addr;

static void on_segv(int sig, siginfo_t *si, void *ctx) {
    (void)sig;
    (void)ctx;
    fault_addr = si->si_addr;
    siglongjmp(jump, 1);
}

/* Whether a read of `at` faults with SIGSEGV at that address. */
static int faults_at(volatile char *at) {
    struct sigaction sa = {0}, old;
    sa.sa_sigaction = on_segv;
    sa.sa_flags = SA_SIGINFO;
    sigaction(SIGSEGV, &sa, &old);
    fault_addr = NULL;
    int faulted = 0;
    if (sigsetjmp(jump, 1) == 0) {
        (void)*at;
    } else {
        faulted = fault_addr == (void *)at;
    }
    sigaction(SIGSEGV, &old, NULL);
    return faulted;
}

static char *map(size_t len, int prot) {
    char *p = mmap(NULL, len, prot, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
        perror("mmap");
        exit(1);
    }
    return p;
}

static void must(int r, const char *what) {
    if (r != 0) {
        perror(what);
        exit(1);
    }
}

static int guards(size_t mib) {
    size_t blocks = mib * 256 / 64;
    char *m = map(blocks * 64 * PAGE, PROT_READ | PROT_WRITE);
    for (size_t b = 0; b < blocks; b++) {
        char *blk = m + b * 64 * PAGE;
        must(mprotect(blk, PAGE, PROT_NONE), "mprotect guard");
        fill(blk + PAGE, 63, b);
        must(mprotect(blk + 48 * PAGE, 16 * PAGE, PROT_READ), "mprotect read-only");
    }
    for (int pass = 0; pass < 2; pass++) {
        for (size_t b = 0; b < blocks; b++) {
            if (check("guards", m + b * 64 * PAGE + PAGE, 63, b)) return 1;
        }
    }
    for (size_t b = 0; b < blocks; b++) {
        char *blk = m + b * 64 * PAGE;
        if (!faults_at(blk) || !faults_at(blk + 10)) {
            printf("guards: the guard of block %zu did not fault at its address\n", b);
            return 1;
        }
        must(mprotect(blk + 48 * PAGE, 16 * PAGE, PROT_READ | PROT_WRITE), "mprotect back");
        fill(blk + 48 * PAGE, 16, b + 1000000);
    }
    for (size_t b = 0; b < blocks; b++) {
        char *blk = m + b * 64 * PAGE;
        if (check("guards", blk + PAGE, 47, b) ||
            check("guards rewritten", blk + 48 * PAGE, 16, b + 1000000))
            return 1;
    }
    must(munmap(m, blocks * 64 * PAGE), "munmap");
    printf("ok guards %zu blocks\n", blocks);
    return 0;
}

static int rowrite(size_t mib) {
    size_t pages = mib * 256;
    char *m = map(pages * PAGE, PROT_READ | PROT_WRITE);
    fill(m, pages, 1);
    must(mprotect(m, pages * PAGE, PROT_READ), "mprotect");
    char *more = map(pages * PAGE, PROT_READ | PROT_WRITE);
    fill(more, pages, 2);
    if (check("rowrite", m, pages, 1)) return 1;
    fill(more, pages, 3);
    printf("writing a read-only page\n");
    fflush(stdout);
    ((volatile char *)m)[5 * PAGE + 8] = 1;
    printf("the write to a read-only page did not fault\n");
    return 1;
}

static int reserve(size_t mib) {
    size_t half = mib * 256, quarter = half / 2;
    char *r = map(2 * half * PAGE, PROT_NONE);
    if (!faults_at(r) || !faults_at(r + half * PAGE)) {
        printf("reserve: an uncommitted page did not fault\n");
        return 1;
    }
    must(mprotect(r, half * PAGE, PROT_READ | PROT_WRITE), "mprotect commit");
    char *second = mmap(r + half * PAGE, half * PAGE, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    if (second != r + half * PAGE) {
        perror("mmap MAP_FIXED commit");
        return 1;
    }
    fill(r, 2 * half, 7);
    if (check("reserve", r, 2 * half, 7) || check("reserve again", r, 2 * half, 7)) return 1;
    char *back = mmap(r + quarter * PAGE, quarter * PAGE, PROT_NONE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
    if (back != r + quarter * PAGE) {
        perror("mmap MAP_FIXED uncommit");
        return 1;
    }
    if (!faults_at(r + quarter * PAGE + 100)) {
        printf("reserve: a page given back did not fault\n");
        return 1;
    }
    must(mprotect(back, quarter * PAGE, PROT_READ | PROT_WRITE), "mprotect recommit");
    if (zeros("reserve recommitted", back, quarter * PAGE) || check("reserve kept", r, quarter, 7))
        return 1;
    for (size_t p = 2 * quarter; p < 2 * half; p++) {
        const uint64_t *q = (const uint64_t *)(r + p * PAGE);
        if (q[3] != word_of(7, p, 3)) {
            printf("reserve kept: page %zu changed\n", p);
            return 1;
        }
    }
    must(munmap(r, 2 * half * PAGE), "munmap");
    printf("ok reserve %zu pages\n", 2 * half);
    return 0;
}

static int lock(size_t mib) {
    size_t locked = 256, pages = mib * 256;
    char *l = map(locked * PAGE, PROT_READ | PROT_WRITE);
    fill(l, locked, 11);
    if (mlock(l, locked * PAGE) != 0) {
        perror("mlock");
        return 1;
    }
    char *m = map(pages * PAGE, PROT_READ | PROT_WRITE);
    fill(m, pages, 12);
    if (check("lock others", m, pages, 12)) return 1;
    unsigned char *in = malloc(locked);
    must(mincore(l, locked * PAGE, in), "mincore");
    for (size_t p = 0; p < locked; p++) {
        if (!(in[p] & 1)) {
            printf("lock: locked page %zu is not resident\n", p);
            return 1;
        }
    }
    free(in);
    must(munlock(l, locked * PAGE), "munlock");
    fill(m, pages, 13);
    if (check("lock", l, locked, 11) || check("lock others", m, pages, 13)) return 1;
    printf("ok lock %zu pages\n", locked);
    return 0;
}

static int filemap(size_t mib) {
    size_t pages = mib * 256, quarter = pages / 4;
    char *r = map(pages * PAGE, PROT_NONE);
    must(mprotect(r, pages * PAGE, PROT_READ | PROT_WRITE), "mprotect commit");
    fill(r, pages, 21);
    FILE *f = tmpfile();
    char *file = malloc(quarter * PAGE);
    fill(file, quarter, 22);
    if (!f || fwrite(file, PAGE, quarter, f) != quarter || fflush(f)) {
        perror("tmpfile");
        return 1;
    }
    char *over = mmap(r + quarter * PAGE, quarter * PAGE, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_FIXED, fileno(f), 0);
    if (over != r + quarter * PAGE) {
        perror("mmap MAP_FIXED file");
        return 1;
    }
    char *more = map(pages * PAGE, PROT_READ | PROT_WRITE);
    fill(more, pages, 23);
    for (int pass = 0; pass < 2; pass++) {
        if (check("filemap before", r, quarter, 21) || check("filemap file", over, quarter, 22) ||
            check("filemap more", more, pages, 23))
            return 1;
        for (size_t p = 2 * quarter; p < pages; p++) {
            const uint64_t *q = (const uint64_t *)(r + p * PAGE);
            if (q[5] != word_of(21, p, 5)) {
                printf("filemap after: page %zu changed\n", p);
                return 1;
            }
        }
    }
    char *fresh = mmap(over, quarter * PAGE, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    if (fresh != over || zeros("filemap fresh", fresh, quarter * PAGE)) return 1;
    fill(fresh, quarter, 24);
    fill(more, pages, 25);
    if (check("filemap fresh", fresh, quarter, 24) || check("filemap before", r, quarter, 21) ||
        check("filemap more", more, pages, 25))
        return 1;
    must(munmap(r, pages * PAGE), "munmap");
    fclose(f);
    free(file);
    printf("ok filemap %zu pages\n", pages);
    return 0;
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc != 3) {
        fprintf(stderr, "usage: tier_protect guards|rowrite|reserve|lock|filemap MIB\n");
        return 2;
    }
    size_t mib = strtoul(argv[2], NULL, 10);
    if (!strcmp(argv[1], "guards")) return guards(mib);
    if (!strcmp(argv[1], "rowrite")) return rowrite(mib);
    if (!strcmp(argv[1], "reserve")) return reserve(mib);
    if (!strcmp(argv[1], "lock")) return lock(mib);
    if (!strcmp(argv[1], "filemap")) return filemap(mib);
    fprintf(stderr, "tier_protect: unknown command %s\n", argv[1]);
    return 2;
}
