/* A program for the tier's tests, run under `zsmalloc tier`: it writes known patterns into
 * malloc blocks and anonymous mappings, reads every word back, and exits 0 only if all is
 * there. Modes:
 *   fill MIB          MIB in malloc blocks (small and large) and mappings, verified twice (the
 *                     same-filled ones rewritten with other data between)
 *   race THREADS MIB  writer threads, each over its own pages, every write checked against
 *                     the one before it (a write lost to an eviction shows as a stale value)
 *   fork MIB          fill, a pause, then a child checks every word, and again a moment later (a
 *                     tiered child has evicted meanwhile); the parent checks after it,
 *                     and again a moment later
 *   remap             munmap then mmap again reads zeros; mremap keeps the bytes; madvise
 *                     and a MAP_FIXED mapping over it empty what they cover; reallocarray
 *   partial MIB       a mapping of MIB pushed out by another, then parts of its 64K groups
 *                     emptied (madvise, a MAP_FIXED mapping over them, munmap of its tail at
 *                     a page inside a group) and the rest grown by mremap: the emptied pages
 *                     read zeros, every other word its own, before and after more eviction
 *   sparse MIB        the last page of each 64K group written (from the top down, so that
 *                     a first touch fills no other page of its group) and pushed out, then the
 *                     group's other pages first touched (some of them all zeros), pushed out
 *                     again, and every word checked
 *   spawn MIB         fill, then posix_spawn a program (its child shares the memory until it
 *                     executes) and check every word after
 *   hotcold KIB MIB   KIB of hot pages written again and again (every word checked against
 *                     the one before it) while streaming once through MIB of cold pages, each
 *                     written once and never touched again: a policy that sees writes keeps
 *                     the hot pages, one by arrival evicts them with the stream
 *   syscalls MIB      a 1 MiB block filled, then MIB more after it (the block is evicted
 *                     under a smaller budget); write(2) of the block to a memfd (the kernel
 *                     reads the evicted pages: "evicted write: ok" or "evicted write:
 *                     EFAULT"), then the block checked (user mode) and written again, and
 *                     read(2) back into fresh malloc'd memory ("fresh read: ...")
 *   signals MIB       fill, then check and free and allocate again while a timer's signal
 *                     handler reads words of the blocks (evicted, mostly) and writes its own
 *                     buffer, each write checked against the one before it
 *   closeall MIB      fill, close every descriptor above stderr (close, closefrom and
 *                     close_range), open a file of its own and write it, evict more, then
 *                     check every word and that the file holds only what it wrote
 *   threadfree MIB    a thread started first (its glibc TLS vector among the first blocks
 *                     evicted) waits while MIB are filled, then frees every block, the
 *                     evicted ones without touching them, and the program checks a block
 *                     made afterwards
 *   threadfork MIB    as threadfree, but the thread forks, and the child checks every word
 *   dup MIB TOP       fill, then dup2 a descriptor of its own onto every number from 3 to TOP
 *                     (a shell's `exec 3>file` names 3 to 9), fill as much again, and check
 *                     every word
 *   exit N            exit with status N
 *   signal N          raise signal N */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

static uint64_t mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

/* Half the words a pseudo-random value, half a small counter: about half compressible; every
 * 16th block all one value (same-filled pages) until it is rewritten (`rewritten`). */
static int rewritten;

static uint64_t word(uint64_t block, uint64_t i) {
  if (block % 16 == 5 && !rewritten) return block * 0x0101010101010101ull;
  return (i & 1) ? mix(block * 1000003 + i) : (block + i) & 0xff;
}

struct block { uint64_t *p; size_t words; int mapped; };

static void fill(struct block *b, uint64_t id) {
  for (size_t i = 0; i < b->words; i++) b->p[i] = word(id, i);
}

static long check(const struct block *b, uint64_t id) {
  long bad = 0;
  for (size_t i = 0; i < b->words; i++)
    if (b->p[i] != word(id, i)) {
      if (bad < 3) fprintf(stderr, "block %llu word %zu: %llx, expected %llx\n",
                           (unsigned long long)id, i, (unsigned long long)b->p[i],
                           (unsigned long long)word(id, i));
      bad++;
    }
  return bad;
}

static struct block *blocks;
static size_t nblocks;

static void make(size_t mib) {
  size_t total = mib << 20, used = 0, cap = 1 << 16;
  blocks = calloc(cap, sizeof *blocks);
  for (uint64_t id = 0; used < total && nblocks < cap; id++) {
    static const size_t sizes[] = {24, 200, 1000, 3000, 9000, 70000, 300000, 1 << 20};
    size_t size = sizes[id % 8];
    struct block *b = &blocks[nblocks++];
    b->words = size / 8;
    b->mapped = id % 3 == 0 && size > 4096;
    if (b->mapped) {
      b->p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (b->p == MAP_FAILED) { perror("mmap"); exit(1); }
    } else if (!(b->p = malloc(size))) { perror("malloc"); exit(1); }
    fill(b, id);
    used += size;
  }
}

static long check_all(void) {
  long bad = 0;
  for (size_t id = 0; id < nblocks; id++) bad += check(&blocks[id], id);
  return bad;
}

static int report(const char *what, long bad) {
  if (bad) { fprintf(stderr, "%s: %ld words wrong\n", what, bad); return 1; }
  printf("%s: ok\n", what);
  return 0;
}

struct writer { uint64_t *p; size_t pages; int rounds; long bad; };

static void *write_rounds(void *arg) {
  struct writer *w = arg;
  size_t per_page = 4096 / 8;
  for (int r = 1; r <= w->rounds; r++)
    for (size_t pg = 0; pg < w->pages; pg++)
      for (size_t k = 0; k < per_page; k += 61) {
        uint64_t *q = &w->p[pg * per_page + k];
        if (*q != (uint64_t)(r - 1)) w->bad++;
        *q = r;
      }
  return NULL;
}

static int race(int threads, size_t mib) {
  pthread_t t[64];
  struct writer w[64];
  if (threads < 1 || threads > 64) return 2;
  for (int i = 0; i < threads; i++) {
    w[i].pages = (mib << 20) / 4096 / threads;
    w[i].rounds = 6;
    w[i].bad = 0;
    w[i].p = mmap(NULL, w[i].pages * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (w[i].p == MAP_FAILED) { perror("mmap"); return 1; }
    pthread_create(&t[i], NULL, write_rounds, &w[i]);
  }
  long bad = 0;
  for (int i = 0; i < threads; i++) {
    pthread_join(t[i], NULL);
    bad += w[i].bad;
    for (size_t pg = 0; pg < w[i].pages; pg++)
      for (size_t k = 0; k < 512; k += 61) bad += w[i].p[pg * 512 + k] != (uint64_t)w[i].rounds;
  }
  return report("race", bad);
}

static int remap(void) {
  size_t len = 1 << 20;
  uint8_t *a = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  memset(a, 0xab, len);
  munmap(a, len);
  uint8_t *b = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  long bad = 0;
  for (size_t i = 0; i < len; i++) bad += b[i] != 0;
  printf("remap: %s address\n", a == b ? "same" : "another");
  struct block blk = {(uint64_t *)b, len / 8, 1};
  fill(&blk, 77);
  blk.p = mremap(b, len, 8 * len, MREMAP_MAYMOVE);
  if (blk.p == MAP_FAILED) { perror("mremap"); return 1; }
  bad += check(&blk, 77);
  for (size_t i = len / 8; i < len; i++) bad += blk.p[i] != 0;
  madvise(blk.p, len, MADV_DONTNEED);
  for (size_t i = 0; i < len / 8; i++) bad += blk.p[i] != 0;
  /* A fresh mapping over part of it reads zeros there and leaves the rest. */
  fill(&blk, 78);
  void *over = mmap(blk.p, len / 2, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
  if (over != blk.p) { perror("mmap MAP_FIXED"); return 1; }
  for (size_t i = 0; i < blk.words; i++)
    bad += blk.p[i] != (i < len / 16 ? 0 : word(78, i));
  /* reallocarray of a block of the tier's: its bytes kept. */
  uint64_t *ra = malloc(100 * sizeof *ra);
  for (int i = 0; i < 100; i++) ra[i] = word(79, i);
  ra = reallocarray(ra, 100000, sizeof *ra);
  for (int i = 0; i < 100; i++) bad += ra[i] != word(79, i);
  free(ra);
  return report("remap", bad);
}

static int hotcold(size_t hot_kib, size_t cold_mib) {
  size_t hot_words = hot_kib * 128, cold_pages = cold_mib * 256;
  uint64_t *hot = malloc(hot_words * 8);
  uint64_t *cold = mmap(NULL, cold_pages * 4096, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (!hot || cold == MAP_FAILED) { perror("hotcold"); return 1; }
  memset(hot, 0, hot_words * 8);
  long bad = 0;
  uint64_t round = 0;
  for (size_t pg = 0; pg < cold_pages; pg++) {
    for (size_t i = 0; i < 512; i++) cold[pg * 512 + i] = word(pg, i);
    /* Every 16 cold pages, a round over the hot ones: 8 words of each page. */
    if (pg % 16 == 0) {
      for (size_t i = 0; i < hot_words; i += 64) {
        bad += hot[i] != round;
        hot[i] = round + 1;
      }
      round++;
    }
  }
  printf("hotcold: %llu rounds over %zu hot pages, %zu cold pages\n", (unsigned long long)round,
         hot_words / 512, cold_pages);
  return report("hotcold", bad);
}

static const char *outcome(ssize_t n, size_t len) {
  if (n == (ssize_t)len) return "ok";
  return n < 0 && errno == EFAULT ? "EFAULT" : "short";
}

static int syscalls(size_t mib) {
  size_t len = 1 << 20;
  unsigned char *old = malloc(len);
  for (size_t i = 0; i < len; i++) old[i] = (unsigned char)(i * 7 + 1);
  make(mib);
  int fd = memfd_create("tier_check", 0);
  if (fd < 0) { perror("memfd_create"); return 1; }
  printf("evicted write: %s\n", outcome(write(fd, old, len), len));
  long bad = 0;
  for (size_t i = 0; i < len; i++) bad += old[i] != (unsigned char)(i * 7 + 1);
  if (ftruncate(fd, 0) || lseek(fd, 0, SEEK_SET)) { perror("memfd"); return 1; }
  printf("resident write: %s\n", outcome(write(fd, old, len), len));
  unsigned char *fresh = malloc(len);
  lseek(fd, 0, SEEK_SET);
  printf("fresh read: %s\n", outcome(read(fd, fresh, len), len));
  for (size_t i = 0; i < len; i++) bad += fresh[i] != old[i];
  return report("syscalls", bad + check_all());
}

/* The timer's signal handler touches tiered memory wherever the program is, inside free and
 * munmap too: the tier must never hold what its handler needs while a signal handler waits on
 * a fault. */
#define TICK_WORDS (1 << 17)
static uint64_t *ticks;
static volatile sig_atomic_t tick_bad;
static volatile uint64_t tick_count;
/* The block being freed and made again, which the handler must not check meanwhile. */
static volatile long replacing = -1;

static void on_tick(int sig) {
  (void)sig;
  uint64_t k = tick_count;
  uint64_t id = mix(k) % nblocks, i = mix(k + 1) % blocks[id].words;
  if ((long)id != replacing && blocks[id].p[i] != word(id, i)) tick_bad = 1;
  uint64_t *t = &ticks[(k * 509) % TICK_WORDS];
  if (*t != (k >= TICK_WORDS ? k - TICK_WORDS : 0) && *t != 0) tick_bad = 1;
  *t = k;
  tick_count = k + 1;
}

static int signals(size_t mib) {
  make(mib);
  ticks = calloc(TICK_WORDS, sizeof *ticks);
  struct sigaction sa = {.sa_handler = on_tick, .sa_flags = SA_RESTART};
  sigemptyset(&sa.sa_mask);
  sigaction(SIGALRM, &sa, NULL);
  struct itimerval every = {{0, 200}, {0, 200}};
  setitimer(ITIMER_REAL, &every, NULL);
  long bad = 0;
  for (int round = 0; round < 4; round++) {
    bad += check_all();
    /* Large blocks freed and made again: their pages are emptied under the tier's lock. */
    for (size_t id = 5; id < nblocks; id += 8) {
      replacing = (long)id;
      __atomic_signal_fence(__ATOMIC_SEQ_CST);
      if (blocks[id].mapped) munmap(blocks[id].p, blocks[id].words * 8); else free(blocks[id].p);
      blocks[id].p = malloc(blocks[id].words * 8);
      if (!blocks[id].p) { perror("malloc"); return 1; }
      blocks[id].mapped = 0;
      fill(&blocks[id], id);
      __atomic_signal_fence(__ATOMIC_SEQ_CST); /* the block filled before the handler sees it */
      replacing = -1;
    }
  }
  struct itimerval off = {{0, 0}, {0, 0}};
  setitimer(ITIMER_REAL, &off, NULL);
  bad += check_all();
  if (tick_bad) { fprintf(stderr, "the signal handler read or wrote a wrong word\n"); bad++; }
  if (tick_count < 100) { fprintf(stderr, "only %llu ticks\n", (unsigned long long)tick_count); bad++; }
  return report("signals", bad);
}

/* Every word of `pages` pages at `a` (block `id`'s words), the pages marked in `gone` zeros. */
static long check_pages(const uint64_t *a, size_t pages, const char *gone, uint64_t id) {
  long bad = 0;
  for (size_t p = 0; p < pages; p++)
    for (size_t i = p * 512; i < (p + 1) * 512; i++) bad += a[i] != (gone[p] ? 0 : word(id, i));
  return bad;
}

static void *anon(size_t len) {
  void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) { perror("mmap"); exit(1); }
  return p;
}

static int partial(size_t mib) {
  size_t len = mib << 20, pages = len / 4096;
  uint64_t *a = anon(len), *push = anon(len);
  struct block blk = {a, len / 8, 1}, pushed = {push, len / 8, 1};
  char *gone = calloc(pages * 2, 1);
  fill(&blk, 90);
  fill(&pushed, 91);
  /* In each 64K group, one to three pages at a place that moves from group to group. */
  for (size_t g = 0; g < pages / 16; g++) {
    size_t first = g * 16 + (g * 7) % 16, n = 1 + g % 3;
    if (first + n > (g + 1) * 16) n = (g + 1) * 16 - first;
    if (g % 2) madvise((char *)a + first * 4096, n * 4096, MADV_DONTNEED);
    else if (mmap((char *)a + first * 4096, n * 4096, PROT_READ | PROT_WRITE,
                  MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED) {
      perror("mmap MAP_FIXED"); return 1;
    }
    for (size_t p = first; p < first + n; p++) gone[p] = 1;
  }
  long bad = check_pages(a, pages, gone, 90);
  fill(&pushed, 92);
  bad += check_pages(a, pages, gone, 90);
  /* The tail cut at a page inside a group; the rest grown (and moved) keeps its bytes. */
  size_t kept = pages - 16 - 5;
  if (munmap((char *)a + kept * 4096, (pages - kept) * 4096)) { perror("munmap"); return 1; }
  a = mremap(a, kept * 4096, 2 * len, MREMAP_MAYMOVE);
  if (a == MAP_FAILED) { perror("mremap"); return 1; }
  memset(gone + kept, 1, 2 * pages - kept);
  fill(&pushed, 93);
  bad += check_pages(a, 2 * pages, gone, 90);
  free(gone);
  return report("partial", bad);
}

/* sparse's words: in every other group, the last page one value and the others zeros. */
static uint64_t sparse_word(size_t p, size_t i) {
  if ((p / 16) % 2 == 0) return word(95, i);
  return p % 16 == 15 ? 0x5555555555555555ull : 0;
}

static int sparse(size_t mib) {
  size_t len = mib << 20, pages = len / 4096;
  uint64_t *a = anon(len), *push = anon(len);
  struct block pushed = {push, len / 8, 1};
  for (size_t p = pages - 1; p < pages; p -= 16)
    for (size_t i = p * 512; i < (p + 1) * 512; i++) a[i] = sparse_word(p, i);
  fill(&pushed, 96);
  for (size_t p = 0; p < pages; p++)
    if (p % 16 != 15)
      for (size_t i = p * 512; i < (p + 1) * 512; i++) a[i] = sparse_word(p, i);
  fill(&pushed, 97);
  long bad = 0;
  for (size_t p = 0; p < pages; p++)
    for (size_t i = p * 512; i < (p + 1) * 512; i++) bad += a[i] != sparse_word(p, i);
  return report("sparse", bad);
}

/* The thread that frees the blocks: started before they are made, so that what glibc allocated
 * for it (its TLS vector) was evicted long before it frees; it frees without touching. */
static volatile int freeing;

static void *free_later(void *arg) {
  (void)arg;
  while (!freeing) usleep(1000);
  for (size_t id = 0; id < nblocks; id++) {
    struct block *b = &blocks[id];
    if (b->mapped) munmap(b->p, b->words * 8);
    else free(b->p);
  }
  return NULL;
}

static void *fork_later(void *arg) {
  (void)arg;
  while (!freeing) usleep(1000);
  pid_t pid = fork();
  if (pid < 0) { perror("fork"); return (void *)1; }
  if (pid == 0) _exit(report("child", check_all()));
  int status;
  waitpid(pid, &status, 0);
  return (void *)(intptr_t)(!WIFEXITED(status) || WEXITSTATUS(status));
}

static int threadfork(size_t mib) {
  pthread_t t;
  if (pthread_create(&t, NULL, fork_later, NULL)) { perror("pthread_create"); return 1; }
  make(mib);
  freeing = 1;
  void *failed;
  pthread_join(t, &failed);
  if (failed) { fprintf(stderr, "the child failed\n"); return 1; }
  return report("parent", check_all());
}

static int threadfree(size_t mib) {
  pthread_t t;
  if (pthread_create(&t, NULL, free_later, NULL)) { perror("pthread_create"); return 1; }
  make(mib);
  freeing = 1;
  pthread_join(t, NULL);
  printf("freed: ok\n");
  /* The pages given back read as new memory. */
  nblocks = 0;
  make(mib / 4 + 1);
  return report("after", check_all());
}

static int dups(size_t mib, int top) {
  make(mib);
  int own = memfd_create("tier_check", 0);
  if (own < 0) { perror("memfd_create"); return 1; }
  for (int fd = 3; fd <= top; fd++)
    if (fd != own && dup2(own, fd) != fd) { perror("dup2"); return 1; }
  if (report("replaced", check_all())) return 1;
  size_t first = nblocks;
  struct block *old = blocks;
  nblocks = 0;
  make(mib);
  long bad = 0;
  for (size_t id = 0; id < first; id++) bad += check(&old[id], id);
  return report("filled again", bad + check_all());
}

/* A program that closes every descriptor it did not open itself (as daemons and the children of
 * some launchers do) leaves the tier its own: evicted pages still come back, and the trace being
 * recorded goes to its file, never to the one the program opens next. */
static int closeall(size_t mib) {
  make(mib);
  for (int fd = 3; fd < 256; fd++) close(fd);
  closefrom(3);
  if (close_range(3, ~0U, 0)) { perror("close_range"); return 1; }
  int own = memfd_create("tier_check", 0);
  if (own < 0) { perror("memfd_create"); return 1; }
  char line[64];
  for (int i = 0; i < 1024; i++) {
    int n = snprintf(line, sizeof line, "line %d of the program's own file\n", i);
    if (write(own, line, n) != n) { perror("write"); return 1; }
  }
  off_t written = lseek(own, 0, SEEK_CUR);
  if (report("closed", check_all())) return 1;
  rewritten = 1; /* the same-filled blocks stored in the pool next: more evictions */
  for (size_t id = 0; id < nblocks; id++)
    if (id % 16 == 5) fill(&blocks[id], id);
  long bad = check_all();
  struct stat st;
  if (fstat(own, &st)) { perror("fstat"); return 1; }
  if (st.st_size != written) {
    fprintf(stderr, "the program's file has %lld bytes, %lld written\n", (long long)st.st_size,
            (long long)written);
    return 1;
  }
  off_t at = 0;
  for (int i = 0; i < 1024; i++) {
    int n = snprintf(line, sizeof line, "line %d of the program's own file\n", i);
    char got[64];
    if (pread(own, got, n, at) != n || memcmp(got, line, n)) {
      fprintf(stderr, "the program's file differs at byte %lld\n", (long long)at);
      return 1;
    }
    at += n;
  }
  return report("own file", bad);
}

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  /* Unbuffered: under --user-faults-only, a stdio buffer (tiered memory) evicted before it is
   * flushed would make the write(2) fail with EFAULT, and the line would be lost. */
  setvbuf(stdout, NULL, _IONBF, 0);
  const char *mode = argv[1];
  long n = argc > 2 ? atol(argv[2]) : 0;
  if (!strcmp(mode, "exit")) return (int)n;
  if (!strcmp(mode, "signal")) { raise((int)n); return 1; }
  if (!strcmp(mode, "remap")) return remap();
  if (!strcmp(mode, "syscalls")) return syscalls(n);
  if (!strcmp(mode, "partial")) return partial(n);
  if (!strcmp(mode, "sparse")) return sparse(n);
  if (!strcmp(mode, "hotcold")) return hotcold((size_t)n, argc > 3 ? atol(argv[3]) : 64);
  if (!strcmp(mode, "race")) return race((int)n, argc > 3 ? atol(argv[3]) : 16);
  if (!strcmp(mode, "signals")) return signals(n);
  if (!strcmp(mode, "closeall")) return closeall(n);
  if (!strcmp(mode, "dup")) return dups(n, argc > 3 ? atoi(argv[3]) : 9);
  if (!strcmp(mode, "threadfree")) return threadfree(n);
  if (!strcmp(mode, "threadfork")) return threadfork(n);
  if (!strcmp(mode, "fill")) {
    make(n);
    if (report("first pass", check_all())) return 1;
    /* The same-filled blocks become ordinary data: their pages are stored in the pool next. */
    rewritten = 1;
    for (size_t id = 0; id < nblocks; id++)
      if (id % 16 == 5) fill(&blocks[id], id);
    return report("second pass", check_all());
  }
  if (!strcmp(mode, "spawn")) {
    make(n);
    extern char **environ;
    char *args[] = {"/bin/sh", "-c", "exit 7", NULL};
    pid_t pid;
    int status;
    if (posix_spawn(&pid, "/bin/sh", NULL, NULL, args, environ)) { perror("posix_spawn"); return 1; }
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 7) { fprintf(stderr, "spawned: %d\n", status); return 1; }
    return report("spawn", check_all());
  }
  if (!strcmp(mode, "fork")) {
    make(n);
    usleep(100 * 1000); /* the handler done evicting, asleep within the budget */
    pid_t pid = fork();
    if (pid < 0) { perror("fork"); return 1; }
    if (pid == 0) {
      int r = report("child", check_all());
      usleep(200 * 1000);
      r |= report("child again", check_all());
      fflush(stdout);
      _exit(r);
    }
    int status;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status)) { fprintf(stderr, "the child failed\n"); return 1; }
    if (report("parent", check_all())) return 1;
    usleep(300 * 1000); /* the child gone, eviction goes on down to the budget */
    return report("parent again", check_all());
  }
  return 2;
}
