// SPDX-License-Identifier: GPL-2.0-or-later OR MIT
/*
 * fuzz_abi: a libFuzzer harness over the C ABI (include/zsmalloc.h) with a shadow model.
 *
 * The input is decoded into a pool configuration (sometimes a bad one, which must be refused)
 * and a sequence of operations on a few handles: store, malloc + write, free, handle moves
 * (onto themselves too), copy-mode reads with and without a local copy, scatter-gather reads,
 * nested sections, ends (right and wrong), stale copies and forged handle words, NULL and
 * misaligned arguments, compaction, statistics and injected page-allocation faults (the
 * library's hidden test hook). The model knows every object's bytes and every counter the
 * library keeps of them; each result and each byte read is checked against it, and any
 * difference aborts (a crash for libFuzzer). Build and run: scripts/test-fuzz.sh.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zsmalloc.h"

int64_t zsmalloc_fault_inject(unsigned int point, unsigned int skip, unsigned int fail);
#define FAULT_PAGES 2

#define NH 48          /* handles */
#define MAX_OPEN 24    /* open sections at once */
#define MAX_PAGE 65536

#define FAIL(...)                                                                                  \
    do {                                                                                           \
        fprintf(stderr, "fuzz_abi: line %d: ", __LINE__);                                          \
        fprintf(stderr, __VA_ARGS__);                                                              \
        fprintf(stderr, " (last error %d: %s)\n", zs_last_error(), zs_last_error_message());       \
        abort();                                                                                   \
    } while (0)
#define EXPECT(cond, ...)                                                                          \
    do {                                                                                           \
        if (!(cond))                                                                               \
            FAIL(__VA_ARGS__);                                                                     \
    } while (0)

/* The input, consumed from the front; past its end every byte reads 0. */
struct input {
    const uint8_t *p;
    size_t n;
};

static uint8_t u8(struct input *in)
{
    if (in->n == 0)
        return 0;
    in->n--;
    return *in->p++;
}

static uint16_t u16(struct input *in)
{
    return (uint16_t)(u8(in) | (u8(in) << 8));
}

static uint64_t u64(struct input *in)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v |= (uint64_t)u8(in) << (8 * i);
    return v;
}

/* An object's bytes are a function of its seed. */
static uint8_t byte_of(uint32_t seed, size_t i)
{
    uint32_t x = seed * 2654435761u + (uint32_t)i * 40503u;
    return (uint8_t)(x >> 13 ^ x >> 24);
}

static uint8_t src[MAX_PAGE + 64];

static void fill(uint32_t seed, size_t len)
{
    for (size_t i = 0; i < len; i++)
        src[i] = byte_of(seed, i);
}

static void check_bytes(const uint8_t *p, size_t off, size_t len, uint32_t seed, const char *what)
{
    for (size_t i = 0; i < len; i++)
        if (p[i] != byte_of(seed, off + i))
            FAIL("%s: byte %zu is %u, expected %u", what, off + i, p[i], byte_of(seed, off + i));
}

/* The model of one handle. */
struct shadow {
    int live;
    size_t len;
    uint32_t seed;
    int open; /* sections open on it */
};

/* An open section. */
struct section {
    int h;
    int sg;
    size_t len;
    const void *ptr;
};

struct world {
    struct zs_pool *pool;
    size_t page;
    size_t max_len; /* the longest length the backend stores (the page, less on zblock) */
    uint32_t backend;
    uint64_t mem_limit;
    int fault_armed;
    struct zs_handle hs[NH];
    struct shadow sh[NH];
    struct section open[MAX_OPEN];
    int nopen;
    /* Counters the library must agree with. */
    uint64_t reads, reads_spanning, read_copy_bytes;
    uint8_t local[MAX_PAGE + 16];
    uintptr_t stale[8];
    int nstale;
};

static struct world w;

static int live_count(void)
{
    int n = 0;
    for (int i = 0; i < NH; i++)
        n += w.sh[i].live;
    return n;
}

static uint64_t bytes_stored(void)
{
    uint64_t n = 0;
    for (int i = 0; i < NH; i++)
        n += w.sh[i].live ? w.sh[i].len : 0;
    return n;
}

static void check_stats(void)
{
    struct zs_pool_stats st;
    EXPECT(zs_pool_stats(w.pool, &st) == 0, "zs_pool_stats");
    EXPECT(st.objs_inuse == (uint64_t)live_count(), "objs_inuse %llu, model %d",
           (unsigned long long)st.objs_inuse, live_count());
    EXPECT(st.bytes_stored == bytes_stored(), "bytes_stored %llu, model %llu",
           (unsigned long long)st.bytes_stored, (unsigned long long)bytes_stored());
    EXPECT(st.reads == w.reads, "reads %llu, model %llu", (unsigned long long)st.reads,
           (unsigned long long)w.reads);
    EXPECT(st.reads_spanning == w.reads_spanning, "reads_spanning %llu, model %llu",
           (unsigned long long)st.reads_spanning, (unsigned long long)w.reads_spanning);
    EXPECT(st.read_copy_bytes == w.read_copy_bytes, "read_copy_bytes %llu, model %llu",
           (unsigned long long)st.read_copy_bytes, (unsigned long long)w.read_copy_bytes);
    EXPECT(st.pages_allocated == zs_get_total_pages(w.pool), "pages_allocated");
    EXPECT(st.objs_allocated >= st.objs_inuse, "objs_allocated < objs_inuse");
    EXPECT(w.mem_limit == 0 || st.pages_allocated <= w.mem_limit, "over the memory limit");
}

/* A length: mostly valid, sometimes 0 or above the page. */
static size_t length(struct input *in)
{
    uint16_t v = u16(in);
    switch (v >> 13) {
    case 0:
        return (size_t)(v & 0x3f) + 1; /* small */
    case 1:
        return 0;
    case 2:
        return w.page + 1 + (v & 7);
    case 3:
        return w.page - (v & 0xf); /* huge */
    default:
        return (size_t)(v % w.page) + 1;
    }
}

/* A store (or malloc + write) into handle `i` of `len` bytes, checked against the model. */
static void do_store(int i, size_t len, uint32_t seed, int via_malloc)
{
    struct zs_pool_stats before;
    zs_pool_stats(w.pool, &before);
    uintptr_t word = w.hs[i].obj;
    fill(seed, len < sizeof(src) ? len : sizeof(src));
    int r = via_malloc ? zs_malloc(w.pool, &w.hs[i], len, 0)
                       : zs_store(w.pool, &w.hs[i], src, len, 0);
    /* The length is checked first, then the handle. */
    if (len == 0) {
        EXPECT(r == -EINVAL && w.hs[i].obj == word, "store of 0 bytes: %d", r);
        return;
    }
    if (len > w.max_len) {
        EXPECT(r == -ENOSPC && w.hs[i].obj == word, "store of %zu bytes: %d", len, r);
        return;
    }
    if (w.sh[i].live) {
        EXPECT(r == -EEXIST && w.hs[i].obj == word, "store into a live handle: %d", r);
        return;
    }
    if (r == -ENOMEM) {
        EXPECT(w.mem_limit || w.fault_armed, "ENOMEM without a limit or a fault");
        EXPECT(w.hs[i].obj == 0, "a failed store filled the handle");
        struct zs_pool_stats after;
        zs_pool_stats(w.pool, &after);
        EXPECT(after.objs_inuse == before.objs_inuse &&
                   after.pages_allocated == before.pages_allocated &&
                   after.objs_allocated == before.objs_allocated,
               "a failed store changed the pool");
        return;
    }
    EXPECT(r == 0 && w.hs[i].obj != 0, "store of %zu bytes: %d", len, r);
    if (via_malloc) {
        EXPECT(zs_obj_write(w.pool, &w.hs[i], src, len + 1) == -EINVAL, "write of a wrong length");
        EXPECT(zs_obj_write(w.pool, &w.hs[i], src, len) == 0, "write after malloc");
    }
    w.sh[i] = (struct shadow){1, len, seed, 0};
}

static void do_free(int i)
{
    uintptr_t word = w.hs[i].obj;
    int r = zs_free(w.pool, &w.hs[i]);
    if (!w.sh[i].live) {
        EXPECT(r == 0 && w.hs[i].obj == 0, "free of an empty handle: %d", r);
        return;
    }
    if (w.sh[i].open) {
        EXPECT(r == -EBUSY && w.hs[i].obj == word, "free while read: %d", r);
        return;
    }
    EXPECT(r == 0 && w.hs[i].obj == 0, "free: %d", r);
    w.sh[i].live = 0;
    if (w.nstale < 8)
        w.stale[w.nstale++] = word;
    else
        w.stale[word % 8] = word;
}

/* A pointer section on handle `i`: in place, copied, or (no local copy) refused if spanning. */
static void do_read_begin(int i, int null_copy, int wrong_len)
{
    if (w.nopen == MAX_OPEN)
        return;
    size_t len = w.sh[i].live ? w.sh[i].len : 1;
    if (wrong_len)
        len += 1;
    const uint8_t *p = zs_obj_read_begin(w.pool, &w.hs[i], len, null_copy ? NULL : w.local);
    if (!w.sh[i].live || wrong_len) {
        EXPECT(p == NULL && zs_last_error() == -EINVAL, "read of %s", wrong_len ? "a wrong length"
                                                                                : "an empty handle");
        return;
    }
    if (p == NULL) {
        EXPECT(null_copy && zs_last_error() == -EINVAL, "read refused: %d", zs_last_error());
        return; /* spanning without a local copy: counts nothing */
    }
    int copied = p == w.local + ZS_HANDLE_SIZE;
    EXPECT(!(copied && null_copy), "copied without a local copy");
    check_bytes(p, 0, len, w.sh[i].seed, copied ? "copied read" : "in-place read");
    w.reads++;
    if (copied) {
        w.reads_spanning++;
        w.read_copy_bytes += len;
    }
    w.open[w.nopen++] = (struct section){i, 0, len, copied ? NULL : p};
    w.sh[i].open++;
}

static void do_sg_begin(int i)
{
    if (w.nopen == MAX_OPEN)
        return;
    struct zs_sg sg[2];
    size_t len = w.sh[i].live ? w.sh[i].len : 1;
    int n = zs_obj_read_sg_begin(w.pool, &w.hs[i], sg, len);
    if (!w.sh[i].live) {
        EXPECT(n == -EINVAL, "sg read of an empty handle: %d", n);
        return;
    }
    EXPECT(n == 1 || n == 2, "sg read: %d", n);
    /* The kernel's spanning rule counts the header: an object whose payload starts a page is
     * spanning with one segment. A copy-mode read (copied iff spanning) tells the model. */
    const uint8_t *p = zs_obj_read_begin(w.pool, &w.hs[i], len, w.local);
    EXPECT(p != NULL, "probe read");
    int spanning = p == w.local + ZS_HANDLE_SIZE;
    EXPECT(zs_obj_read_end(w.pool, &w.hs[i], len, (void *)p) == 0, "probe end");
    EXPECT(spanning || n == 1, "two segments of an object that does not span");
    w.reads += 2;
    w.reads_spanning += 2 * spanning;
    w.read_copy_bytes += spanning ? len : 0;
    EXPECT(sg[0].len + (n == 2 ? sg[1].len : 0) == len, "sg segments' lengths");
    check_bytes(sg[0].addr, 0, sg[0].len, w.sh[i].seed, "sg segment 0");
    if (n == 2)
        check_bytes(sg[1].addr, sg[0].len, sg[1].len, w.sh[i].seed, "sg segment 1");
    w.open[w.nopen++] = (struct section){i, 1, len, NULL};
    w.sh[i].open++;
}

/* Ends open section `k` (of any kind; sections of one handle are alike). */
static void do_end(int k, int wrong_len)
{
    if (w.nopen == 0) {
        int i = k % NH;
        if (!w.sh[i].open) {
            size_t len = w.sh[i].live ? w.sh[i].len : 1;
            EXPECT(zs_obj_read_end(w.pool, &w.hs[i], len, NULL) == -EINVAL, "end without section");
            EXPECT(zs_obj_read_sg_end(w.pool, &w.hs[i]) == -EINVAL, "sg end without section");
        }
        return;
    }
    k %= w.nopen;
    struct section s = w.open[k];
    if (wrong_len && !s.sg) {
        EXPECT(zs_obj_read_end(w.pool, &w.hs[s.h], s.len + 1, NULL) == -EINVAL,
               "end of a wrong length");
        return;
    }
    if (s.ptr) /* an in-place section still sees the object's bytes */
        check_bytes(s.ptr, 0, s.len, w.sh[s.h].seed, "in-place section at its end");
    int r = s.sg ? zs_obj_read_sg_end(w.pool, &w.hs[s.h])
                 : zs_obj_read_end(w.pool, &w.hs[s.h], s.len, (void *)s.ptr);
    EXPECT(r == 0, "end: %d", r);
    w.open[k] = w.open[--w.nopen];
    w.sh[s.h].open--;
}

static void do_move(int from, int to)
{
    uintptr_t fw = w.hs[from].obj, tw = w.hs[to].obj;
    int r = zs_handle_move(w.pool, &w.hs[from], &w.hs[to]);
    if (!w.sh[from].live) {
        EXPECT(r == -EINVAL || (r == -EEXIST && from != to && w.sh[to].live),
               "move of an empty handle: %d", r);
        EXPECT(w.hs[from].obj == fw && w.hs[to].obj == tw, "a refused move changed a handle");
        return;
    }
    if (from == to) {
        EXPECT(r == 0, "move onto itself: %d", r);
        return;
    }
    if (w.sh[to].live) {
        EXPECT(r == -EEXIST, "move onto a live handle: %d", r);
        return;
    }
    if (w.sh[from].open) {
        EXPECT(r == -EBUSY && w.hs[from].obj == fw, "move while read: %d", r);
        return;
    }
    /* zsmalloc moves the word as it is; zblock and malloc give it a new sequence number. */
    EXPECT(r == 0 && w.hs[from].obj == 0 && w.hs[to].obj != 0 &&
               (w.backend != ZS_BACKEND_ZSMALLOC || w.hs[to].obj == fw),
           "move: %d", r);
    w.sh[to] = w.sh[from];
    w.sh[from].live = 0;
}

/* A handle word that is not this handle's: stale (a freed object's), another handle's, or
 * forged; every call on it is refused and changes nothing. */
static void do_bad_word(struct input *in, int i)
{
    static struct zs_handle bad;
    uint8_t kind = u8(in) % 3;
    if (kind == 0 && w.nstale)
        bad.obj = w.stale[u8(in) % w.nstale];
    else if (kind == 1)
        bad.obj = w.hs[i].obj;
    else
        bad.obj = (uintptr_t)u64(in);
    uintptr_t word = bad.obj;
    if (word == 0)
        return;
    EXPECT(zs_free(w.pool, &bad) == -EINVAL, "free of a bad word %#lx", (unsigned long)word);
    EXPECT(zs_obj_read_begin(w.pool, &bad, 1 + (u8(in) % 64), w.local) == NULL &&
               zs_last_error() == -EINVAL,
           "read of a bad word");
    struct zs_sg sg[2];
    EXPECT(zs_obj_read_sg_begin(w.pool, &bad, sg, 8) == -EINVAL, "sg read of a bad word");
    EXPECT(zs_obj_write(w.pool, &bad, src, 8) == -EINVAL, "write through a bad word");
    EXPECT(zs_handle_move(w.pool, &bad, &bad) == -EINVAL, "move of a bad word onto itself");
    EXPECT(bad.obj == word, "a refused call changed the word");
}

/* NULL and misaligned arguments. */
static void do_misuse(void)
{
    static uint64_t raw[3];
    struct zs_handle *misaligned = (struct zs_handle *)((char *)raw + 4);
    EXPECT(zs_store(NULL, &w.hs[0], src, 8, 0) == -EINVAL, "NULL pool");
    EXPECT(zs_store(w.pool, NULL, src, 8, 0) == -EINVAL, "NULL handle");
    EXPECT(zs_store(w.pool, misaligned, src, 8, 0) == -EINVAL, "misaligned handle");
    EXPECT(zs_free(w.pool, misaligned) == -EINVAL, "misaligned free");
    EXPECT(zs_obj_read_begin(w.pool, NULL, 8, w.local) == NULL, "NULL read");
    EXPECT(zs_obj_read_sg_begin(w.pool, &w.hs[0], NULL, 8) == -EINVAL, "NULL sg");
    EXPECT(zs_pool_stats(w.pool, NULL) == -EINVAL, "NULL stats");
    EXPECT(zs_get_total_pages(NULL) == 0 && zs_compact(NULL) == 0, "NULL pool queries");
}

/* Every live object reads back its bytes (one-call section: begin, check, end). */
static void check_all(void)
{
    for (int i = 0; i < NH; i++) {
        if (!w.sh[i].live)
            continue;
        const uint8_t *p = zs_obj_read_begin(w.pool, &w.hs[i], w.sh[i].len, w.local);
        EXPECT(p != NULL, "read of live handle %d", i);
        int copied = p == w.local + ZS_HANDLE_SIZE;
        check_bytes(p, 0, w.sh[i].len, w.sh[i].seed, "check");
        w.reads++;
        w.reads_spanning += copied;
        w.read_copy_bytes += copied ? w.sh[i].len : 0;
        EXPECT(zs_obj_read_end(w.pool, &w.hs[i], w.sh[i].len, (void *)p) == 0, "end of check");
    }
    check_stats();
}

/* The pool configuration: defaults or a decoded (possibly bad) one. */
static struct zs_pool *make_pool(struct input *in)
{
    struct zs_pool_config cfg;
    zs_pool_config_init(&cfg);
    uint8_t a = u8(in), b = u8(in), c = u8(in);
    w.mem_limit = 0;
    if (!(a & 1) && b % 4 != 0 && b % 4 != 3) { /* zblock or malloc, defaults otherwise */
        cfg.backend = b % 4 == 1 ? ZS_BACKEND_ZBLOCK : ZS_BACKEND_MALLOC;
        cfg.page_size = 4096u << (2 * (c % 3)); /* 4K, 16K, 64K */
        if (a & 2)
            cfg.mem_limit_pages = w.mem_limit = 4 + (a >> 2) % 64;
    } else if (a & 1) {
        cfg.page_size = 4096u << (b % 5);             /* 4K..64K */
        cfg.max_pages_per_zspage = 1 + (b >> 4) % 16; /* 1..16 */
        cfg.chain_policy = c % 3 == 2 ? ZS_CHAIN_FIXED_BASE + 1 + (c >> 2) % cfg.max_pages_per_zspage
                                     : c % 3;
        cfg.size_class_delta = (c & 0x80) ? 8u * (1 + (c >> 3) % 16) : 0;
        if (a & 2)
            cfg.mem_limit_pages = w.mem_limit = 4 + (a >> 2) % 64;
        if ((a & 0x1c) == 0x1c) { /* a bad setting: refused, no pool */
            struct zs_pool_config bad = cfg;
            switch ((a >> 5) % 4) {
            case 0: bad.page_size = 4096 + 512; break;
            case 1: bad.max_pages_per_zspage = 17; break;
            case 2: bad.size_class_delta = 12; break;
            default: bad.read_mode = 99; break;
            }
            EXPECT(zs_create_pool_with_config("bad", &bad) == NULL && zs_last_error() == -EINVAL,
                   "a bad configuration made a pool");
        }
    }
    struct zs_pool *pool = zs_create_pool_with_config("fuzz", &cfg);
    EXPECT(pool != NULL, "a good configuration made no pool (page %u chain %u delta %u policy %u)",
           cfg.page_size, cfg.max_pages_per_zspage, cfg.size_class_delta, cfg.chain_policy);
    w.page = cfg.page_size;
    w.backend = cfg.backend;
    /* zblock refuses its last slot size and above: zs_huge_class_size() is the first refused. */
    w.max_len = cfg.backend == ZS_BACKEND_ZBLOCK ? zs_huge_class_size(pool) - 1 : w.page;
    return pool;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct input in = {data, size};
    memset(&w, 0, sizeof(w));
    w.pool = make_pool(&in);
    int steps = 0;
    static int trace = -1;
    if (trace < 0)
        trace = getenv("FUZZ_TRACE") != NULL;
    while (in.n > 0 && steps++ < 2000) {
        uint8_t op = u8(&in);
        int i = ((op >> 4) + 16 * (u8(&in) % 3)) % NH;
        if (trace) {
            struct zs_pool_stats st;
            zs_pool_stats(w.pool, &st);
            fprintf(stderr, "op %2d handle %2d: reads %llu/%llu spanning %llu/%llu\n", op % 16, i,
                    (unsigned long long)st.reads, (unsigned long long)w.reads,
                    (unsigned long long)st.reads_spanning, (unsigned long long)w.reads_spanning);
        }
        switch (op % 16) {
        case 0:
        case 1:
            do_store(i, length(&in), u16(&in), 0);
            break;
        case 2:
            do_store(i, length(&in), u16(&in), 1);
            break;
        case 3:
        case 4:
            do_free(i);
            break;
        case 5:
        case 6:
            do_read_begin(i, 0, 0);
            break;
        case 7:
            do_read_begin(i, 1, u8(&in) == 0xff);
            break;
        case 8:
            do_sg_begin(i);
            break;
        case 9:
        case 10:
            do_end(u8(&in), 0);
            break;
        case 11:
            do_move(i, u8(&in) % NH);
            break;
        case 12: {
            int r = (int)zs_compact(w.pool);
            EXPECT(r >= 0 && zs_last_error() == 0, "compact");
            check_all();
            break;
        }
        case 13:
            do_bad_word(&in, i);
            break;
        case 14: {
            uint8_t k = u8(&in);
            if (k < 16) {
                zsmalloc_fault_inject(FAULT_PAGES, k % 4, 1 + k / 4);
                w.fault_armed = 1;
            } else if (k < 32) {
                do_misuse();
            } else {
                do_end(k, 1);
            }
            break;
        }
        default: {
            uint8_t k = u8(&in);
            if (k < 128) {
                check_stats();
                break;
            }
            /* A run of objects of one length, every other one freed: sparse zspages that
             * compaction can empty. */
            size_t len = length(&in);
            uint16_t seed = u16(&in);
            int stored[NH], n = 0;
            for (int j = 0; j < NH && n < 8 + (k & 31); j++)
                if (!w.sh[j].live) {
                    do_store(j, len, seed + (uint16_t)j, 0);
                    if (w.sh[j].live)
                        stored[n++] = j;
                }
            for (int j = 0; j < n; j += 2)
                do_free(stored[j]);
            break;
        }
        }
    }
    while (w.nopen)
        do_end(0, 0);
    zsmalloc_fault_inject(FAULT_PAGES, 0, 0);
    w.fault_armed = 0;
    check_all();
    for (int i = 0; i < NH; i++)
        do_free(i);
    check_stats();
    EXPECT(zs_get_total_pages(w.pool) == 0, "pages left after every free: %lu",
           zs_get_total_pages(w.pool));
    zs_destroy_pool(w.pool);
    return 0;
}
