// SPDX-License-Identifier: GPL-2.0-or-later OR MIT
/*
 * bad_input: every bad input of the C ABI's contract, asserting the exact error and that the
 * pool still works afterwards (and that its counters did not change).
 *
 *   bad_input [BACKEND]    prints one line per failed check and "N passed, M failed"
 *
 * BACKEND (zsmalloc, zblock or malloc; default zsmalloc) is the pools' backend: the contract's
 * refusals are the same on every backend; what differs (huge sizes, spanning, class rows, the
 * lengths zblock refuses) is checked per backend.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zsmalloc.h"
#include "check.h"

#define PAGE 4096


/* An int-returning call that must fail with -err (returned and in zs_last_error()). */
#define EXPECT_ERR(expr, err)                                                                      \
    do {                                                                                           \
        int ret_ = (expr);                                                                         \
        CHECK(ret_ == -(err) && zs_last_error() == -(err), "%s returned %d, expected %d", #expr,   \
              ret_, -(err));                                                                       \
    } while (0)

/* A pointer-returning call that must give NULL with zs_last_error() == -err. */
#define EXPECT_NULL(expr, err)                                                                     \
    do {                                                                                           \
        const void *p_ = (expr);                                                                   \
        CHECK(p_ == NULL && zs_last_error() == -(err), "%s returned %p, expected NULL", #expr,     \
              p_);                                                                                 \
    } while (0)

#define EXPECT_OK(expr)                                                                            \
    do {                                                                                           \
        int ret_ = (expr);                                                                         \
        CHECK(ret_ == 0 && zs_last_error() == 0, "%s returned %d", #expr, ret_);                   \
    } while (0)

static unsigned char data[PAGE + 64];
static unsigned char local_copy[PAGE + 64];

/* The backend under test, and the longest length it stores on 4K pages. */
static uint32_t backend = ZS_BACKEND_ZSMALLOC;
static size_t top = PAGE;

/* The default configuration on the backend under test. */
static void config_init(struct zs_pool_config *cfg)
{
    zs_pool_config_init(cfg);
    cfg->backend = backend;
}

static void fill(size_t len, unsigned seed)
{
    for (size_t j = 0; j < len; j++)
        data[j] = (unsigned char)(seed + j * 7);
}

/* Reads `*h` (`len` bytes) and compares it with fill(len, seed). */
static int verify(struct zs_pool *pool, struct zs_handle *h, size_t len, unsigned seed)
{
    const unsigned char *p = zs_obj_read_begin(pool, h, len, local_copy);
    if (!p)
        return 0;
    int ok = 1;
    for (size_t j = 0; j < len; j++)
        ok &= p[j] == (unsigned char)(seed + j * 7);
    return zs_obj_read_end(pool, h, len, (void *)p) == 0 && ok;
}

struct snap {
    uint64_t inuse, bytes, pages;
};

static struct snap snap(struct zs_pool *pool)
{
    struct zs_pool_stats st;
    memset(&st, 0xff, sizeof(st));
    zs_pool_stats(pool, &st);
    struct snap s = {st.objs_inuse, st.bytes_stored, st.pages_allocated};
    return s;
}

static int same(struct snap a, struct snap b)
{
    return a.inuse == b.inuse && a.bytes == b.bytes && a.pages == b.pages;
}

/* The pool still stores, reads, frees (small, spanning, huge objects) and its counters return. */
static void pool_works(struct zs_pool *pool, const char *after)
{
    const size_t lens[] = {1, 100, 1000, 2000, 3000, 4000, top};
    struct zs_handle hs[sizeof(lens) / sizeof(lens[0])];
    struct snap before = snap(pool);
    int ok = 1;
    memset(hs, 0, sizeof(hs));
    for (size_t k = 0; k < sizeof(lens) / sizeof(lens[0]); k++) {
        fill(lens[k], (unsigned)k + 11);
        ok &= zs_store(pool, &hs[k], data, lens[k], 0) == 0;
    }
    for (size_t k = 0; k < sizeof(lens) / sizeof(lens[0]); k++)
        ok &= verify(pool, &hs[k], lens[k], (unsigned)k + 11);
    for (size_t k = 0; k < sizeof(lens) / sizeof(lens[0]); k++)
        ok &= zs_free(pool, &hs[k]) == 0 && hs[k].obj == 0;
    CHECK(ok && same(before, snap(pool)), "pool works after %s", after);
}

static void test_config(void)
{
    struct zs_pool_config cfg, good;
    zs_pool_config_init(NULL);
    CHECK(zs_last_error() == -EINVAL, "zs_pool_config_init(NULL) sets -EINVAL");
    zs_pool_config_init(&good);
    CHECK(zs_last_error() == 0 && good.page_size == 4096 && good.max_pages_per_zspage == 8 &&
              good.size_class_delta == 0 && good.chain_policy == ZS_CHAIN_CLASSIC &&
              good.read_mode == ZS_READ_COPY && good.mem_limit_pages == 0 &&
              good.backing == ZS_BACKING_ANONYMOUS,
          "mainline defaults");

    static const struct {
        const char *field;
        uint32_t page, chain, delta, policy, mode;
    } bad[] = {
        {"page_size", 5000, 8, 0, 0, 0},      {"page_size", 2048, 8, 0, 0, 0},
        {"page_size", 131072, 8, 0, 0, 0},    {"page_size", 0, 8, 0, 0, 0},
        {"chain_size", 4096, 0, 0, 0, 0},     {"chain_size", 4096, 17, 0, 0, 0},
        {"class_delta", 4096, 8, 12, 0, 0},   {"class_delta", 4096, 8, 4096, 0, 0},
        {"chain_policy", 4096, 8, 0, 2, 0},   {"chain_policy", 4096, 8, 0, ZS_CHAIN_FIXED_BASE, 0},
        {"chain_policy", 4096, 8, 0, 273, 0}, {"read_mode", 4096, 8, 0, 0, 3},
        {"read_mode", 4096, 8, 0, 0, 0x80000000u}, {"read_mode", 4096, 8, 0, 0, 99},
    };
    for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
        cfg = good;
        cfg.page_size = bad[k].page;
        cfg.max_pages_per_zspage = bad[k].chain;
        cfg.size_class_delta = bad[k].delta;
        cfg.chain_policy = bad[k].policy;
        cfg.read_mode = bad[k].mode;
        EXPECT_NULL(zs_create_pool_with_config("bad", &cfg), EINVAL);
        CHECK(strstr(zs_last_error_message(), bad[k].field) != NULL, "message names %s: %s",
              bad[k].field, zs_last_error_message());
    }
    /* Backends: an unknown code; zsmalloc-only settings refused by the others, naming both. */
    cfg = good;
    cfg.backend = 3;
    EXPECT_NULL(zs_create_pool_with_config("bad", &cfg), EINVAL);
    CHECK(strstr(zs_last_error_message(), "backend") != NULL, "message names backend: %s",
          zs_last_error_message());
    cfg = good;
    cfg.backend = ZS_BACKEND_ZBLOCK;
    cfg.max_pages_per_zspage = 10;
    EXPECT_NULL(zs_create_pool_with_config("bad", &cfg), EINVAL);
    CHECK(strstr(zs_last_error_message(), "chain_size") && strstr(zs_last_error_message(), "zblock"),
          "message names the setting and the backend: %s", zs_last_error_message());
    cfg = good;
    cfg.backend = ZS_BACKEND_MALLOC;
    cfg.read_mode = ZS_READ_MAP;
    EXPECT_NULL(zs_create_pool_with_config("bad", &cfg), EINVAL);
    CHECK(strstr(zs_last_error_message(), "read_mode") && strstr(zs_last_error_message(), "malloc"),
          "message names the setting and the backend: %s", zs_last_error_message());
    cfg = good;
    cfg.backend = ZS_BACKEND_ZBLOCK;
    cfg.page_size = 8192;
    EXPECT_NULL(zs_create_pool_with_config("bad", &cfg), EINVAL);
    CHECK(strstr(zs_last_error_message(), "8192") != NULL, "zblock refuses 8K pages: %s",
          zs_last_error_message());

    EXPECT_NULL(zs_create_pool_with_config("bad", NULL), EINVAL);
    EXPECT_NULL(zs_create_pool_with_config(NULL, &good), EINVAL);
    EXPECT_NULL(zs_create_pool(NULL), EINVAL);

    cfg = good;
    cfg.chain_policy = ZS_CHAIN_FIXED_BASE + 4;
    struct zs_pool *fixed = zs_create_pool_with_config("fixed-4", &cfg);
    CHECK(fixed != NULL, "fixed-4 policy accepted");
    if (fixed) {
        struct zs_class_stats cs;
        EXPECT_OK(zs_class_stats(fixed, 100, &cs));
        CHECK(cs.pages_per_zspage == 4 || cs.huge, "fixed-4 gives 4 pages per zspage");
        pool_works(fixed, "a fixed-4 pool");
        zs_destroy_pool(fixed);
    }

    /* The environment: a bad value names the variable, gives no pool, changes no config. */
    static const char *const env[][2] = {
        {"ZSMALLOC_PAGE_SIZE", "5000"},     {"ZSMALLOC_PAGE_SIZE", "lots"},
        {"ZSMALLOC_CHAIN_SIZE", "17"},      {"ZSMALLOC_CLASS_DELTA", "12"},
        {"ZSMALLOC_CHAIN_POLICY", "greedy"}, {"ZSMALLOC_READ_MODE", "mmap"},
        {"ZSMALLOC_BACKING", "shm"},        {"ZSMALLOC_MEM_LIMIT_PAGES", "-1"},
        {"ZSMALLOC_BACKEND", "bogus"},
    };
    for (size_t k = 0; k < sizeof(env) / sizeof(env[0]); k++) {
        setenv(env[k][0], env[k][1], 1);
        cfg = good;
        cfg.page_size = 12345;
        EXPECT_ERR(zs_pool_config_from_env(&cfg), EINVAL);
        CHECK(cfg.page_size == 12345, "config unchanged on a bad %s", env[k][0]);
        CHECK(strstr(zs_last_error_message(), env[k][0]) != NULL, "message names %s: %s",
              env[k][0], zs_last_error_message());
        EXPECT_NULL(zs_create_pool("env"), EINVAL);
        CHECK(strstr(zs_last_error_message(), env[k][0]) != NULL, "message names %s", env[k][0]);
        unsetenv(env[k][0]);
    }
    EXPECT_ERR(zs_pool_config_from_env(NULL), EINVAL);
    setenv("ZSMALLOC_PAGE_SIZE", "16384", 1);
    setenv("ZSMALLOC_CHAIN_POLICY", "heuristic", 1);
    EXPECT_OK(zs_pool_config_from_env(&cfg));
    CHECK(cfg.page_size == 16384 && cfg.chain_policy == ZS_CHAIN_HEURISTIC, "env read");
    struct zs_pool *p16 = zs_create_pool("16k");
    CHECK(p16 && zs_lookup_class_index(p16, 16384) == 256, "16K pool from the environment");
    zs_destroy_pool(p16);
    unsetenv("ZSMALLOC_PAGE_SIZE");
    unsetenv("ZSMALLOC_CHAIN_POLICY");
}

static void test_null_pool(struct zs_pool *pool)
{
    struct zs_handle h = {0};
    struct zs_sg sg[2];
    struct zs_pool_stats st;
    struct zs_class_stats cs;
    struct snap before = snap(pool);
    fill(100, 1);
    EXPECT_ERR(zs_store(NULL, &h, data, 100, 0), EINVAL);
    EXPECT_ERR(zs_malloc(NULL, &h, 100, 0), EINVAL);
    EXPECT_ERR(zs_obj_write(NULL, &h, data, 100), EINVAL);
    EXPECT_ERR(zs_free(NULL, &h), EINVAL);
    EXPECT_ERR(zs_handle_move(NULL, &h, &h), EINVAL);
    EXPECT_NULL(zs_obj_read_begin(NULL, &h, 100, local_copy), EINVAL);
    EXPECT_ERR(zs_obj_read_end(NULL, &h, 100, local_copy), EINVAL);
    EXPECT_ERR(zs_obj_read_sg_begin(NULL, &h, sg, 100), EINVAL);
    EXPECT_ERR(zs_obj_read_sg_end(NULL, &h), EINVAL);
    CHECK(zs_get_total_pages(NULL) == 0 && zs_last_error() == -EINVAL, "total pages of NULL");
    CHECK(zs_huge_class_size(NULL) == 0 && zs_last_error() == -EINVAL, "huge size of NULL");
    CHECK(zs_lookup_class_index(NULL, 100) == 0 && zs_last_error() == -EINVAL, "lookup NULL");
    CHECK(zs_compact(NULL) == 0 && zs_last_error() == -EINVAL, "compact NULL");
    EXPECT_ERR(zs_pool_stats(NULL, &st), EINVAL);
    EXPECT_ERR(zs_class_stats(NULL, 0, &cs), EINVAL);
    zs_destroy_pool(NULL);
    CHECK(zs_last_error() == 0, "zs_destroy_pool(NULL) is a no-op");
    CHECK(h.obj == 0 && same(before, snap(pool)), "nothing changed");
}

static void test_bad_pointers(struct zs_pool *pool)
{
    uint64_t storage[4] = {0, 0, 0, 0};
    struct zs_handle *misaligned = (struct zs_handle *)((char *)storage + 1);
    struct zs_handle h = {0}, to = {0};
    struct zs_sg sg[2];
    struct snap before = snap(pool);
    fill(100, 2);

    EXPECT_ERR(zs_store(pool, NULL, data, 100, 0), EINVAL);
    EXPECT_ERR(zs_malloc(pool, NULL, 100, 0), EINVAL);
    EXPECT_ERR(zs_obj_write(pool, NULL, data, 100), EINVAL);
    EXPECT_ERR(zs_free(pool, NULL), EINVAL);
    EXPECT_ERR(zs_handle_move(pool, NULL, &to), EINVAL);
    EXPECT_NULL(zs_obj_read_begin(pool, NULL, 100, local_copy), EINVAL);
    EXPECT_ERR(zs_obj_read_end(pool, NULL, 100, local_copy), EINVAL);
    EXPECT_ERR(zs_obj_read_sg_begin(pool, NULL, sg, 100), EINVAL);
    EXPECT_ERR(zs_obj_read_sg_end(pool, NULL), EINVAL);

    EXPECT_ERR(zs_store(pool, misaligned, data, 100, 0), EINVAL);
    EXPECT_ERR(zs_malloc(pool, misaligned, 100, 0), EINVAL);
    EXPECT_ERR(zs_free(pool, misaligned), EINVAL);
    EXPECT_NULL(zs_obj_read_begin(pool, misaligned, 100, local_copy), EINVAL);
    EXPECT_ERR(zs_obj_read_sg_begin(pool, misaligned, sg, 100), EINVAL);
    CHECK(storage[0] == 0 && storage[1] == 0, "misaligned storage untouched");

    /* NULL buffers. */
    EXPECT_ERR(zs_store(pool, &h, NULL, 100, 0), EINVAL);
    EXPECT_OK(zs_store(pool, &h, data, 100, 0));
    EXPECT_ERR(zs_obj_write(pool, &h, NULL, 100), EINVAL);
    EXPECT_ERR(zs_obj_read_sg_begin(pool, &h, NULL, 100), EINVAL);
    EXPECT_ERR(zs_pool_stats(pool, NULL), EINVAL);
    EXPECT_ERR(zs_class_stats(pool, 0, NULL), EINVAL);
    EXPECT_ERR(zs_handle_move(pool, &h, NULL), EINVAL);
    EXPECT_ERR(zs_handle_move(pool, &h, misaligned), EINVAL);
    CHECK(verify(pool, &h, 100, 2), "object intact after bad pointers");
    EXPECT_OK(zs_free(pool, &h));
    CHECK(same(before, snap(pool)), "counters unchanged");
}

static void test_lengths(struct zs_pool *pool)
{
    struct zs_handle h = {0};
    struct snap before = snap(pool);
    fill(PAGE + 1, 3);
    EXPECT_ERR(zs_store(pool, &h, data, 0, 0), EINVAL);
    EXPECT_ERR(zs_store(pool, &h, data, PAGE + 1, 0), ENOSPC);
    EXPECT_ERR(zs_store(pool, &h, data, SIZE_MAX, 0), ENOSPC);
    EXPECT_ERR(zs_malloc(pool, &h, 0, 0), EINVAL);
    EXPECT_ERR(zs_malloc(pool, &h, PAGE + 1, 0), ENOSPC);
    EXPECT_ERR(zs_malloc(pool, &h, SIZE_MAX, 0), ENOSPC);
    CHECK(h.obj == 0 && same(before, snap(pool)), "nothing allocated by refused lengths");

    if (backend == ZS_BACKEND_ZBLOCK) {
        /* zblock's last slot size and anything above it: -ENOSPC, nothing changed. */
        EXPECT_ERR(zs_store(pool, &h, data, zs_huge_class_size(pool), 0), ENOSPC);
        EXPECT_ERR(zs_store(pool, &h, data, PAGE, 0), ENOSPC);
        EXPECT_ERR(zs_malloc(pool, &h, PAGE, 0), ENOSPC);
        CHECK(h.obj == 0 && same(before, snap(pool)), "nothing allocated by refused lengths");
    }
    /* The longest object the backend stores is fine (a huge class in zsmalloc). */
    EXPECT_OK(zs_store(pool, &h, data, top, 0));
    CHECK(verify(pool, &h, top, 3), "page-sized object");
    /* The handle is in use: -EEXIST, the object unchanged. */
    fill(PAGE, 99);
    EXPECT_ERR(zs_store(pool, &h, data, 50, 0), EEXIST);
    EXPECT_ERR(zs_malloc(pool, &h, 50, 0), EEXIST);
    CHECK(verify(pool, &h, top, 3), "object unchanged after -EEXIST");
    /* Wrong lengths on read and write. */
    EXPECT_NULL(zs_obj_read_begin(pool, &h, top - 1, local_copy), EINVAL);
    EXPECT_NULL(zs_obj_read_begin(pool, &h, top + 1, local_copy), EINVAL);
    EXPECT_NULL(zs_obj_read_begin(pool, &h, 0, local_copy), EINVAL);
    EXPECT_ERR(zs_obj_write(pool, &h, data, top - 1), EINVAL);
    EXPECT_ERR(zs_obj_write(pool, &h, data, top + 1), EINVAL);
    EXPECT_ERR(zs_obj_write(pool, &h, data, SIZE_MAX), EINVAL);
    EXPECT_ERR(zs_obj_read_end(pool, &h, top, local_copy), EINVAL); /* no section open */
    CHECK(verify(pool, &h, top, 3), "object unchanged after wrong lengths");
    EXPECT_OK(zs_free(pool, &h));

    /* malloc + write: the write must cover the object exactly. */
    EXPECT_OK(zs_malloc(pool, &h, 300, 0));
    fill(300, 4);
    EXPECT_ERR(zs_obj_write(pool, &h, data, 299), EINVAL);
    EXPECT_OK(zs_obj_write(pool, &h, data, 300));
    CHECK(verify(pool, &h, 300, 4), "malloc + write");
    EXPECT_OK(zs_free(pool, &h));
    CHECK(same(before, snap(pool)), "counters back");
}

/* Another pool of the backend under test, or of another backend (`cross`). */
static struct zs_pool *other_pool(int cross)
{
    struct zs_pool_config cfg;
    config_init(&cfg);
    if (cross)
        cfg.backend = backend == ZS_BACKEND_ZSMALLOC ? ZS_BACKEND_ZBLOCK : ZS_BACKEND_ZSMALLOC;
    return zs_create_pool_with_config(cross ? "other backend" : "other", &cfg);
}

static void test_foreign_garbage_stale(struct zs_pool *pool, int cross)
{
    struct zs_pool *other = other_pool(cross);
    struct zs_handle h = {0}, h2 = {0}, copy, g;
    struct zs_sg sg[2];
    fill(200, 5);
    EXPECT_OK(zs_store(pool, &h, data, 200, 0));
    struct snap before = snap(pool), before_other = snap(other);

    /* A handle of another pool. */
    EXPECT_ERR(zs_free(other, &h), EINVAL);
    EXPECT_NULL(zs_obj_read_begin(other, &h, 200, local_copy), EINVAL);
    EXPECT_ERR(zs_obj_read_sg_begin(other, &h, sg, 200), EINVAL);
    EXPECT_ERR(zs_obj_write(other, &h, data, 200), EINVAL);
    EXPECT_ERR(zs_handle_move(other, &h, &h2), EINVAL);
    CHECK(same(before, snap(pool)) && same(before_other, snap(other)), "both pools unchanged");
    CHECK(verify(pool, &h, 200, 5), "object intact after foreign use");
    if (cross) {
        EXPECT_OK(zs_free(pool, &h));
        CHECK(same(before_other, snap(other)), "the other backend's pool unchanged");
        zs_destroy_pool(other);
        return;
    }

    /* Garbage words. */
    static const uintptr_t garbage[] = {1, 0xffff, 0x10000, 0xdeadbeefcafef00dULL, UINTPTR_MAX,
                                        0x5a00000000000001ULL};
    for (size_t k = 0; k < sizeof(garbage) / sizeof(garbage[0]); k++) {
        g.obj = garbage[k];
        EXPECT_ERR(zs_free(pool, &g), EINVAL);
        EXPECT_NULL(zs_obj_read_begin(pool, &g, 200, local_copy), EINVAL);
        EXPECT_ERR(zs_obj_read_end(pool, &g, 200, local_copy), EINVAL);
        CHECK(g.obj == garbage[k], "garbage word left as it was");
    }
    /* Near misses of a live word: other header positions, another zspage slot. */
    static const uintptr_t flips[] = {1, 2, 1u << 16, (uintptr_t)1 << 32, (uintptr_t)1 << 56};
    for (size_t k = 0; k < sizeof(flips) / sizeof(flips[0]); k++) {
        g.obj = h.obj ^ flips[k];
        EXPECT_ERR(zs_free(pool, &g), EINVAL);
        EXPECT_NULL(zs_obj_read_begin(pool, &g, 200, local_copy), EINVAL);
    }
    /* A copy of a live handle is not its owner. */
    copy = h;
    EXPECT_ERR(zs_free(pool, &copy), EINVAL);
    EXPECT_NULL(zs_obj_read_begin(pool, &copy, 200, local_copy), EINVAL);
    EXPECT_ERR(zs_handle_move(pool, &copy, &h2), EINVAL);
    CHECK(same(before, snap(pool)) && verify(pool, &h, 200, 5), "intact after garbage");

    /* Stale copy after free, double free, use after free. */
    EXPECT_OK(zs_free(pool, &h));
    CHECK(h.obj == 0, "zs_free empties the handle");
    EXPECT_OK(zs_free(pool, &h)); /* empty handle: no-op */
    EXPECT_ERR(zs_free(pool, &copy), EINVAL);
    EXPECT_NULL(zs_obj_read_begin(pool, &copy, 200, local_copy), EINVAL);
    EXPECT_ERR(zs_obj_write(pool, &copy, data, 200), EINVAL);
    EXPECT_NULL(zs_obj_read_begin(pool, &h, 200, local_copy), EINVAL); /* empty handle */
    /* The slot is reused by a new object: the stale copy still does not own it. */
    fill(200, 6);
    EXPECT_OK(zs_store(pool, &h2, data, 200, 0));
    EXPECT_ERR(zs_free(pool, &copy), EINVAL);
    EXPECT_NULL(zs_obj_read_begin(pool, &copy, 200, local_copy), EINVAL);
    CHECK(verify(pool, &h2, 200, 6), "new object intact after stale use");
    EXPECT_OK(zs_free(pool, &h2));
    pool_works(pool, "foreign, garbage and stale handles");
    pool_works(other, "being the foreign pool");
    zs_destroy_pool(other);
}

static void test_reads(struct zs_pool *pool)
{
    struct zs_handle hs[8], moved = {0}, full = {0};
    struct zs_sg sg[2];
    size_t len = 3000, spanning = 8;
    memset(hs, 0, sizeof(hs));
    /* Class 3008 on 4K pages chains 3 pages for 4 objects: objects 1 and 2 span. */
    for (size_t k = 0; k < 8; k++) {
        fill(len, 20 + (unsigned)k);
        EXPECT_OK(zs_store(pool, &hs[k], data, len, 0));
    }
    for (size_t k = 0; k < 8 && spanning == 8; k++) {
        const unsigned char *p = zs_obj_read_begin(pool, &hs[k], len, local_copy);
        if (p == local_copy + ZS_HANDLE_SIZE)
            spanning = k;
        zs_obj_read_end(pool, &hs[k], len, (void *)p);
    }
    const void *p;
    if (backend == ZS_BACKEND_ZSMALLOC) {
        CHECK(spanning < 8, "found a spanning object");
        size_t in_place = spanning == 0 ? 1 : 0;

        /* NULL local_copy: in place works, a spanning object is refused and left unpinned. */
        p = zs_obj_read_begin(pool, &hs[in_place], len, NULL);
        CHECK(p != NULL, "in-place read without local_copy");
        EXPECT_OK(zs_obj_read_end(pool, &hs[in_place], len, (void *)p));
        EXPECT_NULL(zs_obj_read_begin(pool, &hs[spanning], len, NULL), EINVAL);
        EXPECT_OK(zs_free(pool, &hs[spanning])); /* not left pinned */
        fill(len, 20 + (unsigned)spanning);
        EXPECT_OK(zs_store(pool, &hs[spanning], data, len, 0));
    } else {
        /* Every read in place: nothing spans, a NULL local_copy always serves. */
        CHECK(spanning == 8, "no object read through local_copy");
        for (size_t k = 0; k < 8; k++) {
            p = zs_obj_read_begin(pool, &hs[k], len, NULL);
            CHECK(p != NULL, "read without local_copy");
            EXPECT_OK(zs_obj_read_end(pool, &hs[k], len, (void *)p));
        }
    }

    /* Busy: no free or move while a section is open; end with the wrong length refused. */
    p = zs_obj_read_begin(pool, &hs[3], len, local_copy);
    CHECK(p != NULL, "read begin");
    EXPECT_ERR(zs_free(pool, &hs[3]), EBUSY);
    EXPECT_ERR(zs_handle_move(pool, &hs[3], &moved), EBUSY);
    EXPECT_ERR(zs_obj_read_end(pool, &hs[3], len + 1, (void *)p), EINVAL);
    EXPECT_OK(zs_obj_read_end(pool, &hs[3], len, (void *)p));
    EXPECT_ERR(zs_obj_read_end(pool, &hs[3], len, (void *)p), EINVAL); /* already ended */

    /* Scatter-gather: 1 or 2 segments, data in place, section pinned until its end. */
    int spanning_segments = 0;
    for (size_t k = 0; k < 8; k++) {
        int n = zs_obj_read_sg_begin(pool, &hs[k], sg, len);
        CHECK(n == 1 || n == 2, "sg segment count %d", n);
        if (n < 1)
            continue;
        spanning_segments += n == 2;
        size_t total = 0;
        int ok = 1;
        for (int s = 0; s < n; s++) {
            for (size_t j = 0; j < sg[s].len; j++, total++)
                ok &= ((unsigned char *)sg[s].addr)[j] == (unsigned char)(20 + k + total * 7);
        }
        CHECK(ok && total == len && (n == 2 || sg[1].addr == NULL), "sg data of object %zu", k);
        EXPECT_ERR(zs_free(pool, &hs[k]), EBUSY);
        EXPECT_OK(zs_obj_read_sg_end(pool, &hs[k]));
        EXPECT_ERR(zs_obj_read_sg_end(pool, &hs[k]), EINVAL);
    }
    if (backend == ZS_BACKEND_ZSMALLOC)
        CHECK(spanning_segments > 0, "some object has two segments");
    else
        CHECK(spanning_segments == 0, "one segment for every object");
    EXPECT_ERR(zs_obj_read_sg_begin(pool, &hs[0], sg, len - 1), EINVAL);

    /* Handle moves. */
    fill(10, 1);
    EXPECT_OK(zs_store(pool, &full, data, 10, 0));
    EXPECT_ERR(zs_handle_move(pool, &hs[0], &full), EEXIST);
    EXPECT_ERR(zs_handle_move(pool, &moved, &hs[1]), EEXIST);
    EXPECT_OK(zs_handle_move(pool, &hs[0], &hs[0])); /* to itself: no-op */
    EXPECT_OK(zs_handle_move(pool, &hs[0], &moved));
    CHECK(hs[0].obj == 0 && moved.obj != 0, "move empties the source");
    CHECK(verify(pool, &moved, len, 20), "moved object readable through the new handle");
    EXPECT_NULL(zs_obj_read_begin(pool, &hs[0], len, local_copy), EINVAL);
    EXPECT_OK(zs_handle_move(pool, &moved, &hs[0]));

    for (size_t k = 0; k < 8; k++)
        EXPECT_OK(zs_free(pool, &hs[k]));
    EXPECT_OK(zs_free(pool, &full));
    pool_works(pool, "read-section misuse");
}

/* zblock's and malloc's answers to the class queries (docs/DESIGN.md, Backends). */
static void test_other_queries(struct zs_pool *pool)
{
    struct zs_class_stats cs;
    unsigned types = 0;
    while (zs_class_stats(pool, types, &cs) == 0)
        types++;
    CHECK(zs_last_error() == -EINVAL, "the row walk ends on -EINVAL");
    if (backend == ZS_BACKEND_ZBLOCK) {
        CHECK(zs_huge_class_size(pool) == 4080, "smallest refused length %zu",
              zs_huge_class_size(pool));
        CHECK(types == 37, "37 block types on 4K pages, got %u", types);
        EXPECT_OK(zs_class_stats(pool, 0, &cs));
        CHECK(cs.size == 144 && cs.objs_per_zspage == 28 && cs.pages_per_zspage == 1,
              "type 0: 28 slots of 144 bytes in one page (got %u x %u, %u pages)",
              cs.objs_per_zspage, cs.size, cs.pages_per_zspage);
        CHECK(zs_lookup_class_index(pool, 143) == 0 && zs_lookup_class_index(pool, 144) == 1,
              "lookup: a length equal to a slot size goes to the next type");
        CHECK(zs_lookup_class_index(pool, 4080) == types, "a refused length: the row count");
    } else {
        CHECK(zs_huge_class_size(pool) == PAGE, "malloc: huge size is the page");
        CHECK(types == 0, "malloc has no class rows, got %u", types);
    }
    CHECK(zs_compact(pool) == 0 && zs_last_error() == 0, "nothing to compact");
}

static void test_queries(struct zs_pool *pool)
{
    struct zs_class_stats cs;
    if (backend != ZS_BACKEND_ZSMALLOC) {
        test_other_queries(pool);
        return;
    }
    CHECK(zs_huge_class_size(pool) == 3632 - 7, "huge class size %zu", zs_huge_class_size(pool));
    CHECK(zs_lookup_class_index(pool, 32) == 0 && zs_lookup_class_index(pool, 4096) == 254,
          "lookup");
    CHECK(zs_lookup_class_index(pool, 1u << 30) == 254, "lookup clamps");
    EXPECT_OK(zs_class_stats(pool, 254, &cs));
    CHECK(cs.size == 4096 && cs.huge, "last class is huge");
    EXPECT_ERR(zs_class_stats(pool, 255, &cs), EINVAL);
    EXPECT_ERR(zs_class_stats(pool, 0xffffffffu, &cs), EINVAL);
    unsigned classes = 0, merged_ok = 1, i;
    for (i = 0; zs_class_stats(pool, i, &cs) == 0; i = cs.last_index + 1) {
        classes++;
        merged_ok &= cs.first_index == i && cs.index == cs.last_index;
    }
    CHECK(i == 255 && classes > 50 && merged_ok, "class walk: %u classes", classes);
    CHECK(zs_last_error() == -EINVAL, "walk ends on -EINVAL");
    CHECK(zs_version() == ZS_ABI_VERSION, "version");
    CHECK(zs_strerror(-EINVAL) && zs_strerror(EINVAL) && zs_strerror(0) && zs_strerror(12345) &&
              zs_strerror(-2147483647 - 1),
          "strerror never NULL");
    zs_free(pool, NULL);
    CHECK(zs_last_error() == -EINVAL && *zs_last_error_message() != '\0', "error recorded");
    zs_get_total_pages(pool);
    CHECK(zs_last_error() == 0 && *zs_last_error_message() == '\0', "success clears");
}

/* Any backend: objects of 1000 bytes under a 2-page limit are stored until -ENOMEM, which
 * changes nothing; all of them read back, and the pool empties. */
static void test_mem_limit_fill(void)
{
    struct zs_pool_config cfg;
    struct zs_handle h[64];
    memset(h, 0, sizeof(h));
    config_init(&cfg);
    cfg.mem_limit_pages = 2;
    struct zs_pool *pool = zs_create_pool_with_config("limited", &cfg);
    CHECK(pool != NULL, "limited pool");
    if (!pool)
        return;
    fill(1000, 9);
    size_t n = 0;
    int err = 0;
    while (n < 64 && (err = zs_store(pool, &h[n], data, 1000, 0)) == 0)
        n++;
    struct snap before = snap(pool);
    CHECK(n > 0 && err == -ENOMEM, "stored %zu objects, then %d", n, err);
    EXPECT_ERR(zs_store(pool, &h[n < 64 ? n : 63], data, 1000, 0), n < 64 ? ENOMEM : EEXIST);
    CHECK(same(before, snap(pool)) && before.pages <= 2, "nothing changed by -ENOMEM");
    int ok = 1;
    for (size_t k = 0; k < n; k++)
        ok &= verify(pool, &h[k], 1000, 9) && zs_free(pool, &h[k]) == 0;
    CHECK(ok && zs_get_total_pages(pool) == 0, "objects intact; limited pool empty");
    zs_destroy_pool(pool);
}

static void test_mem_limit(void)
{
    struct zs_pool_config cfg;
    struct zs_handle h[3];
    if (backend != ZS_BACKEND_ZSMALLOC) {
        test_mem_limit_fill();
        return;
    }
    memset(h, 0, sizeof(h));
    config_init(&cfg);
    cfg.mem_limit_pages = 2;
    struct zs_pool *pool = zs_create_pool_with_config("limited", &cfg);
    fill(PAGE, 7);
    EXPECT_OK(zs_store(pool, &h[0], data, PAGE, 0));
    EXPECT_OK(zs_store(pool, &h[1], data, PAGE, 0));
    struct snap before = snap(pool);
    EXPECT_ERR(zs_store(pool, &h[2], data, PAGE, 0), ENOMEM);
    EXPECT_ERR(zs_malloc(pool, &h[2], 100, 0), ENOMEM);
    CHECK(h[2].obj == 0 && same(before, snap(pool)), "nothing changed by -ENOMEM");
    CHECK(verify(pool, &h[0], PAGE, 7) && verify(pool, &h[1], PAGE, 7), "objects intact");
    EXPECT_OK(zs_free(pool, &h[0]));
    EXPECT_OK(zs_store(pool, &h[2], data, PAGE, 0));
    EXPECT_OK(zs_free(pool, &h[1]));
    EXPECT_OK(zs_free(pool, &h[2]));
    CHECK(zs_get_total_pages(pool) == 0, "limited pool empty");
    zs_destroy_pool(pool);
}

static void test_compat(struct zs_pool *pool)
{
    struct zs_pool_config cfg;
    config_init(&cfg);
    struct zs_pool *other = zs_create_pool_with_config("other", &cfg);
    struct snap before = snap(pool);
    fill(500, 8);
    unsigned long h = zs_compat_malloc(pool, 500, 0, -1);
    CHECK(h != 0 && h < (unsigned long)-4095, "compat malloc");
    EXPECT_OK(zs_compat_obj_write(pool, h, data, 500));
    const unsigned char *p = zs_compat_obj_read_begin(pool, h, (size_t)-1, local_copy);
    CHECK(p && p[499] == (unsigned char)(8 + 499 * 7), "compat read, stored length");
    EXPECT_OK(zs_compat_obj_read_end(pool, h, (size_t)-1, (void *)p));
    CHECK(verify(pool, zs_compat_handle(pool, h), 500, 8), "compat handle via the new API");

    CHECK(zs_compat_malloc(pool, 0, 0, -1) == (unsigned long)-EINVAL, "compat malloc(0)");
    CHECK(zs_compat_malloc(pool, PAGE + 1, 0, -1) == (unsigned long)-ENOSPC, "too large");
    CHECK(zs_compat_malloc(NULL, 10, 0, -1) == (unsigned long)-EINVAL, "NULL pool");
    static const unsigned long bad[] = {1, 8, 0xdeadbeefUL, (unsigned long)-4096};
    for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
        EXPECT_ERR(zs_compat_free(pool, bad[k]), EINVAL);
        EXPECT_ERR(zs_compat_obj_write(pool, bad[k], data, 500), EINVAL);
        EXPECT_NULL(zs_compat_obj_read_begin(pool, bad[k], 500, local_copy), EINVAL);
        EXPECT_NULL(zs_compat_handle(pool, bad[k]), EINVAL);
    }
    EXPECT_ERR(zs_compat_free(pool, h + 1), EINVAL);
    EXPECT_ERR(zs_compat_free(other, h), EINVAL); /* another pool's handle */
    EXPECT_NULL(zs_compat_obj_read_begin(other, h, 500, local_copy), EINVAL);
    EXPECT_OK(zs_compat_free(pool, 0));                  /* the kernel ignores NULL */
    EXPECT_OK(zs_compat_free(pool, (unsigned long)-12)); /* and error values */
    EXPECT_NULL(zs_compat_obj_read_begin(pool, h, 499, local_copy), EINVAL);
    EXPECT_OK(zs_compat_free(pool, h));
    EXPECT_ERR(zs_compat_free(pool, h), EINVAL); /* double free */
    EXPECT_NULL(zs_compat_obj_read_begin(pool, h, 500, local_copy), EINVAL);
    CHECK(same(before, snap(pool)), "compat: counters back");
    pool_works(pool, "compat misuse");
    zs_destroy_pool(other);
}

/* Struct sizes: below the first version's refused with nothing written; a longer struct (a
 * caller built against a later header) gets the fields this library does not know zeroed, and
 * as an input must leave them zero. */
static void test_struct_sizes(struct zs_pool *pool)
{
    union {
        struct zs_pool_config cfg;
        struct zs_pool_stats st;
        struct zs_class_stats cs;
        unsigned char bytes[512];
    } u;
    unsigned char pattern[sizeof(u)];
    memset(pattern, 0xa5, sizeof(pattern));

    memset(&u, 0xa5, sizeof(u));
    EXPECT_ERR(zs_pool_config_init_sized(&u.cfg, ZS_POOL_CONFIG_SIZE_VER1 - 1), EINVAL);
    EXPECT_ERR(zs_pool_config_from_env_sized(&u.cfg, 0), EINVAL);
    EXPECT_ERR(zs_pool_stats_sized(pool, &u.st, ZS_POOL_STATS_SIZE_VER1 - 8), EINVAL);
    EXPECT_ERR(zs_class_stats_sized(pool, 0, &u.cs, 16), EINVAL);
    EXPECT_ERR(zs_pool_stats_sized(pool, &u.st, (size_t)-1), EINVAL);
    CHECK(memcmp(&u, pattern, sizeof(u)) == 0, "refused sizes write nothing");
    EXPECT_NULL(zs_create_pool_with_config_sized("short", &u.cfg, 8), EINVAL);

    size_t longer = sizeof(struct zs_pool_config) + 64;
    EXPECT_OK(zs_pool_config_init_sized(&u.cfg, longer));
    size_t zeros = 0;
    for (size_t i = sizeof(struct zs_pool_config); i < longer; i++)
        zeros += u.bytes[i] == 0;
    CHECK(zeros == 64 && u.bytes[longer] == 0xa5, "unknown config fields zeroed, no byte past");
    struct zs_pool *p = zs_create_pool_with_config_sized("longer", &u.cfg, longer);
    CHECK(p != NULL, "a longer config with zero unknown fields is accepted");
    zs_destroy_pool(p);
    u.bytes[sizeof(struct zs_pool_config) + 3] = 1;
    EXPECT_NULL(zs_create_pool_with_config_sized("longer", &u.cfg, longer), EINVAL);

    memset(&u, 0xa5, sizeof(u));
    longer = sizeof(struct zs_class_stats) + 40;
    if (backend != ZS_BACKEND_MALLOC) { /* malloc has no class rows */
        EXPECT_OK(zs_class_stats_sized(pool, 0, &u.cs, longer));
        CHECK(u.bytes[longer - 1] == 0 && u.bytes[longer] == 0xa5, "class stats: tail zeroed only");
    }
    EXPECT_OK(zs_pool_stats_sized(pool, &u.st, ZS_POOL_STATS_SIZE_VER1));
}

int main(int argc, char **argv)
{
    /* Indexed by ZS_BACKEND_*. */
    static const char *const names[] = {"zsmalloc", "zblock", "malloc"};
    if (argc == 2) {
        backend = 3;
        for (uint32_t k = 0; k < 3; k++)
            if (strcmp(argv[1], names[k]) == 0)
                backend = k;
    }
    if (argc > 2 || backend > ZS_BACKEND_MALLOC) {
        fprintf(stderr, "usage: %s [zsmalloc|zblock|malloc]\n", argv[0]);
        return 2;
    }
    test_config();
    struct zs_pool_config cfg;
    config_init(&cfg);
    struct zs_pool *pool = zs_create_pool_with_config("bad_input", &cfg);
    if (!pool) {
        fprintf(stderr, "bad_input: no pool: %s\n", zs_last_error_message());
        return 1;
    }
    if (backend == ZS_BACKEND_ZBLOCK)
        top = zs_huge_class_size(pool) - 8; /* the last slot size is refused: 8 below it */
    pool_works(pool, "creation");
    test_null_pool(pool);
    pool_works(pool, "NULL pools");
    test_bad_pointers(pool);
    pool_works(pool, "bad pointers");
    test_lengths(pool);
    pool_works(pool, "bad lengths");
    test_foreign_garbage_stale(pool, 0);
    test_foreign_garbage_stale(pool, 1);
    test_reads(pool);
    test_queries(pool);
    test_mem_limit();
    test_compat(pool);
    test_struct_sizes(pool);
    pool_works(pool, "struct sizes");
    CHECK(zs_get_total_pages(pool) == 0, "pool empty at the end");
    zs_destroy_pool(pool);
    printf("bad_input (%s): %d passed, %d failed\n", names[backend], passed, failed);
    return failed != 0;
}
