// SPDX-License-Identifier: GPL-2.0-or-later OR MIT
/*
 * class_tables: explicit class tables through the C ABI (struct zs_pool_config's class_table
 * and class_count, and ZSMALLOC_CLASS_TABLE).
 *
 * Checked: mainline's table, read from a default pool's zs_class_stats and given back as an
 * explicit table (struct and file), places a workload of stores, frees and compactions exactly
 * as the default pool does (page counts after every call, every class's row after each phase);
 * zs_pool_config_from_env() points at the file's table; every bad table is refused with -EINVAL,
 * no pool, and a message naming the entry (`class_table[i]`) or the variable and the line;
 * callers of older struct versions keep working.
 *
 *   class_tables                 run the checks; prints "class_tables: P passed, F failed"
 *   class_tables export FILE     write the table of zs_create_pool()'s pool (the environment's
 *                                configuration) to FILE in the class-table file format
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "zsmalloc.h"
#include "check.h"

#define PAGE 4096
#define MAX_TABLE 512

/* A pool's created classes, ascending by size (merged indices share their class's row). */
static size_t table_of(struct zs_pool *pool, struct zs_class_spec *out, size_t cap)
{
    size_t n = 0;
    struct zs_class_stats cs;
    for (unsigned int i = 0; zs_class_stats(pool, i, &cs) == 0; i++) {
        if (cs.index != i || n == cap)
            continue;
        out[n].size = cs.size;
        out[n].chain = cs.pages_per_zspage;
        n++;
    }
    return n;
}

static int write_table(const char *path, uint32_t page, const struct zs_class_spec *t, size_t n)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fprintf(f, "# written by tests/c/class_tables.c\npage_size %u\n", page);
    for (size_t i = 0; i < n; i++)
        fprintf(f, "%u %u\n", t[i].size, t[i].chain);
    return fclose(f);
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

/* Every figure of two class rows that must agree (indices and merge facts aside: an explicit
 * table numbers its classes by position and merges nothing). */
static int same_row(const struct zs_class_stats *a, const struct zs_class_stats *b)
{
    return a->size == b->size && a->pages_per_zspage == b->pages_per_zspage &&
           a->objs_per_zspage == b->objs_per_zspage && a->huge == b->huge &&
           !memcmp(a->fullness, b->fullness, sizeof(a->fullness)) &&
           a->obj_allocated == b->obj_allocated && a->obj_used == b->obj_used &&
           a->pages_used == b->pages_used && a->freeable == b->freeable &&
           a->bytes_stored == b->bytes_stored && a->reads == b->reads &&
           a->reads_spanning == b->reads_spanning;
}

/* The created classes' rows of both pools agree one by one, and so do the pool counters. */
static void compare(struct zs_pool *a, struct zs_pool *b, const char *when)
{
    struct zs_pool_stats sa, sb;
    CHECK(zs_pool_stats(a, &sa) == 0 && zs_pool_stats(b, &sb) == 0 && !memcmp(&sa, &sb, sizeof(sa)),
          "pool stats after %s", when);
    struct zs_class_stats ca, cb;
    unsigned int j = 0, rows = 0, differ = 0;
    for (unsigned int i = 0; zs_class_stats(a, i, &ca) == 0; i++) {
        if (ca.index != i)
            continue;
        if (zs_class_stats(b, j++, &cb) != 0 || !same_row(&ca, &cb))
            differ++;
        rows++;
    }
    CHECK(differ == 0 && zs_class_stats(b, j, &cb) == -EINVAL, "%u of %u class rows differ after %s",
          differ, rows, when);
}

static unsigned long lcg(unsigned long *s)
{
    *s = *s * 6364136223846793005UL + 1442695040888963407UL;
    return *s >> 33;
}

/* The same calls on both pools: kernel-test stores, reads, frees of a third, a compaction, a
 * random refill, and the rest freed. Page counts must agree after every call. */
static void same_workload(struct zs_pool *a, struct zs_pool *b, const char *what)
{
    enum { PER_SIZE = 40, SIZES = (4080 - 32) / 16 + 1, N = PER_SIZE * SIZES };
    struct zs_handle *ha = calloc(N, sizeof(*ha)), *hb = calloc(N, sizeof(*hb));
    unsigned char *src = malloc(PAGE), *copy = malloc(PAGE);
    size_t *len = calloc(N, sizeof(*len));
    unsigned long seed = 42, pages_differ = 0, failed_calls = 0;
    char when[128];
    for (size_t j = 0; j < PAGE; j++)
        src[j] = (unsigned char)(j * 7 + 3);
    for (size_t i = 0; i < N; i++) {
        len[i] = 32 + (i / PER_SIZE) * 16;
        failed_calls += zs_store(a, &ha[i], src, len[i], 0) != 0;
        failed_calls += zs_store(b, &hb[i], src, len[i], 0) != 0;
        pages_differ += zs_get_total_pages(a) != zs_get_total_pages(b);
    }
    for (size_t i = 0; i < N; i++) {
        void *pa = zs_obj_read_begin(a, &ha[i], len[i], copy);
        failed_calls += !pa || memcmp(pa, src, len[i]) != 0;
        zs_obj_read_end(a, &ha[i], len[i], pa);
        void *pb = zs_obj_read_begin(b, &hb[i], len[i], copy);
        failed_calls += !pb || memcmp(pb, src, len[i]) != 0;
        zs_obj_read_end(b, &hb[i], len[i], pb);
    }
    snprintf(when, sizeof(when), "%s: the stores and reads", what);
    compare(a, b, when);
    for (size_t i = 0; i < N; i += 3) {
        failed_calls += zs_free(a, &ha[i]) != 0;
        failed_calls += zs_free(b, &hb[i]) != 0;
        pages_differ += zs_get_total_pages(a) != zs_get_total_pages(b);
    }
    unsigned long ca = zs_compact(a), cb = zs_compact(b);
    CHECK(ca == cb && ca > 0, "%s: compaction freed %lu and %lu pages", what, ca, cb);
    snprintf(when, sizeof(when), "%s: frees and a compaction", what);
    compare(a, b, when);
    for (size_t i = 0; i < N; i += 3) {
        len[i] = 1 + lcg(&seed) % PAGE;
        failed_calls += zs_store(a, &ha[i], src, len[i], 0) != 0;
        failed_calls += zs_store(b, &hb[i], src, len[i], 0) != 0;
        pages_differ += zs_get_total_pages(a) != zs_get_total_pages(b);
    }
    snprintf(when, sizeof(when), "%s: the refill", what);
    compare(a, b, when);
    for (size_t i = 0; i < N; i++) {
        failed_calls += zs_free(a, &ha[i]) != 0;
        failed_calls += zs_free(b, &hb[i]) != 0;
    }
    CHECK(pages_differ == 0 && failed_calls == 0, "%s: page counts differed %lu times, %lu calls failed",
          what, pages_differ, failed_calls);
    free(ha), free(hb), free(src), free(copy), free(len);
}

/* Creating a pool with `t` refuses it: NULL, -EINVAL, a message containing `want`. */
static void refused(const struct zs_class_spec *t, size_t n, uint32_t page, const char *want)
{
    struct zs_pool_config cfg;
    zs_pool_config_init(&cfg);
    cfg.page_size = page;
    cfg.class_table = t;
    cfg.class_count = n;
    struct zs_pool *pool = zs_create_pool_with_config("bad", &cfg);
    CHECK(!pool && zs_last_error() == -EINVAL && strstr(zs_last_error_message(), want),
          "expected a refusal containing \"%s\"", want);
    zs_destroy_pool(pool);
}

static void bad_tables(void)
{
    static const struct {
        struct zs_class_spec t[3];
        size_t n;
        const char *want;
    } cases[] = {
        {{{48, 1}, {32, 1}, {PAGE, 1}}, 3, "class_table[1] (size 32, chain 1): size 32 is below the previous"},
        {{{32, 1}, {32, 2}, {PAGE, 1}}, 3, "class_table[1] (size 32, chain 2): duplicate size 32"},
        {{{32, 1}, {44, 1}, {PAGE, 1}}, 3, "class_table[1] (size 44, chain 1): size 44 is not a multiple of 8"},
        {{{16, 1}, {PAGE, 1}}, 2, "class_table[0] (size 16, chain 1): size 16 is below the smallest"},
        {{{32, 1}, {PAGE + 8, 1}}, 2, "class_table[1] (size 4104, chain 1): size 4104 is above the page"},
        {{{32, 0}, {PAGE, 1}}, 2, "class_table[0] (size 32, chain 0): chain 0 is outside 1..=16"},
        {{{32, 17}, {PAGE, 1}}, 2, "class_table[0] (size 32, chain 17): chain 17 is outside 1..=16"},
        {{{32, 1}, {2048, 1}}, 2, "class_table[1] (size 2048, chain 1): no class stores a whole page"},
        {{{32, 1}, {PAGE, 2}}, 2, "class_table[1] (size 4096, chain 2): the page-sized class must have chain 1"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        refused(cases[i].t, cases[i].n, PAGE, cases[i].want);
    /* A table for another page size: its largest class is not the pool's page. */
    static const struct zs_class_spec small[] = {{32, 1}, {PAGE, 1}};
    refused(small, 2, 16384, "class_table[1] (size 4096, chain 1): no class stores a whole page");
    /* One class per multiple of 8 from 32 to the page is the most; one more is refused. */
    static struct zs_class_spec many[510];
    for (size_t i = 0; i < 510; i++)
        many[i] = (struct zs_class_spec){(uint32_t)(32 + 8 * i), 1};
    refused(many, 510, PAGE, "too many classes (class_count 510): a table up to 4096 bytes has room for at most 509");
    /* A count far beyond the array is refused before any entry is read (ASan would see it). */
    refused(small, SIZE_MAX / 8, PAGE, "too many classes");
    refused(NULL, 3, PAGE, "class_table is NULL but class_count is 3");
    refused(small, 0, PAGE, "class_count is 0 but class_table is not NULL");
    struct zs_pool_config cfg;
    zs_pool_config_init(&cfg);
    cfg.class_table = small;
    cfg.class_count = 2;
    cfg.max_pages_per_zspage = 4;
    struct zs_pool *pool = zs_create_pool_with_config("bad", &cfg);
    CHECK(!pool && strstr(zs_last_error_message(), "chain_size 4 means nothing with a class table"),
          "a table with a chain size set");
    /* A caller of ABI version 4 has no table fields: they are not read, and its pool is the
     * computed one (here chain 4, which the table would have refused). */
    pool = zs_create_pool_with_config_sized("v4", &cfg, ZS_POOL_CONFIG_SIZE_VER4);
    struct zs_class_stats cs;
    CHECK(pool && zs_class_stats(pool, 2, &cs) == 0 && cs.size != PAGE,
          "a version-4 struct makes mainline's pool, its table fields unread");
    zs_destroy_pool(pool);
}

/* Bad table files through ZSMALLOC_CLASS_TABLE: no pool, the variable and the line named. */
static void bad_files(const char *dir)
{
    static const struct {
        const char *text, *want;
    } cases[] = {
        {"page_size 4096\n48 1\n32 1\n4096 1\n", "line 3 (`32 1`): size 32 is below the previous"},
        {"page_size 4096\n32 1\n32 1\n4096 1\n", "line 3 (`32 1`): duplicate size 32"},
        {"page_size 4096\n32 1\n44 1\n4096 1\n", "line 3 (`44 1`): size 44 is not a multiple of 8"},
        {"page_size 4096\n24 1\n4096 1\n", "line 2 (`24 1`): size 24 is below"},
        {"page_size 4096\n32 1\n8192 1\n", "line 3 (`8192 1`): size 8192 is above the page"},
        {"page_size 4096\n32 0\n4096 1\n", "line 2 (`32 0`): chain 0 is outside"},
        {"page_size 4096\n# chains\n32 17\n4096 1\n", "line 3 (`32 17`): chain 17 is outside"},
        {"page_size 4096\n32 1\n2048 1\n", "line 3 (`2048 1`): no class stores a whole page"},
        {"page_size 4096\n32 1\n1024 1\n20", "line 4 (`20`): a class line is `size chain`"},
        {"page_size 4096\n", "line 1: the table has no classes after its header"},
        {"", "the file is empty"},
    };
    char path[512];
    snprintf(path, sizeof(path), "%s/bad.table", dir);
    setenv("ZSMALLOC_CLASS_TABLE", path, 1);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        write_text(path, cases[i].text);
        struct zs_pool *pool = zs_create_pool("bad-file");
        const char *msg = zs_last_error_message();
        CHECK(!pool && zs_last_error() == -EINVAL && strstr(msg, "ZSMALLOC_CLASS_TABLE") &&
                  strstr(msg, path) && strstr(msg, cases[i].want),
              "file %zu: expected \"%s\"", i, cases[i].want);
        zs_destroy_pool(pool);
    }
    /* Too many classes: 510 on a 4K page; the first one beyond the limit is on line 511. */
    FILE *f = fopen(path, "w");
    fprintf(f, "page_size 4096\n");
    for (int i = 0; i < 510; i++)
        fprintf(f, "%d 1\n", 32 + 8 * i);
    fclose(f);
    struct zs_pool *pool = zs_create_pool("bad-file");
    CHECK(!pool && strstr(zs_last_error_message(), "line 511") &&
              strstr(zs_last_error_message(), "at most 509"),
          "too many classes in a file");
    /* The file's page size against ZSMALLOC_PAGE_SIZE. */
    write_text(path, "page_size 16K\n32 1\n16384 1\n");
    setenv("ZSMALLOC_PAGE_SIZE", "4096", 1);
    pool = zs_create_pool("bad-file");
    CHECK(!pool && strstr(zs_last_error_message(), "the table is for 16384-byte pages, the pool's are 4096"),
          "page size differing from the pool's");
    unsetenv("ZSMALLOC_PAGE_SIZE");
    pool = zs_create_pool("page-from-file");
    struct zs_class_stats cs;
    CHECK(pool && zs_class_stats(pool, 1, &cs) == 0 && cs.size == 16384,
          "without ZSMALLOC_PAGE_SIZE the file's page size is the pool's");
    zs_destroy_pool(pool);
    unsetenv("ZSMALLOC_CLASS_TABLE");
    unlink(path);
}

/* A table file with the multi-page band (third field: the order): the pool takes the band's size
 * from the file, stores an object of several pages in the band's class, and refuses a
 * ZSMALLOC_MULTI_PAGE_SIZE that differs. */
static void band_file(const char *dir)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/band.table", dir);
    write_text(path, "page_size 4096\n32 1 0\n4096 1 0\n6144 3 2\n16384 1 2\n");
    setenv("ZSMALLOC_CLASS_TABLE", path, 1);
    struct zs_pool *pool = zs_create_pool("band-file");
    CHECK(pool != NULL, "a band table file: %s", pool ? "" : zs_last_error_message());
    if (pool) {
        struct zs_class_stats cs;
        CHECK(zs_lookup_class_index(pool, 5000) == 2 && zs_class_stats(pool, 2, &cs) == 0 &&
                  cs.size == 6144 && cs.order == 2 && cs.objs_per_zspage == 8,
              "a length above the page goes to the band's class, order 2");
        CHECK(zs_huge_class_size_band(pool, 1) == 6144 - 7, "the band's huge class size");
        static unsigned char obj[6000];
        memset(obj, 0x5a, sizeof(obj));
        struct zs_handle h = {0};
        CHECK(zs_store(pool, &h, obj, sizeof(obj), 0) == 0 && zs_get_total_pages(pool) == 12,
              "an object of 6000 bytes in three order-2 units");
        unsigned char local[16384 + 8];
        void *p = zs_obj_read_begin(pool, &h, sizeof(obj), local);
        CHECK(p && memcmp(p, obj, sizeof(obj)) == 0, "read back byte-exact");
        zs_obj_read_end(pool, &h, sizeof(obj), p);
        zs_free(pool, &h);
        zs_destroy_pool(pool);
    }
    setenv("ZSMALLOC_MULTI_PAGE_SIZE", "32K", 1);
    pool = zs_create_pool("band-file");
    CHECK(!pool && strstr(zs_last_error_message(), "must agree"),
          "ZSMALLOC_MULTI_PAGE_SIZE differing from the file's band");
    zs_destroy_pool(pool);
    unsetenv("ZSMALLOC_MULTI_PAGE_SIZE");
    unsetenv("ZSMALLOC_CLASS_TABLE");
    unlink(path);
}

static int export_env_table(const char *path)
{
    struct zs_pool *pool = zs_create_pool("export");
    if (!pool)
        return 1;
    static struct zs_class_spec t[MAX_TABLE];
    size_t n = table_of(pool, t, MAX_TABLE);
    uint32_t page = 0;
    for (size_t i = 0; i < n; i++)
        page = t[i].size > page ? t[i].size : page;
    zs_destroy_pool(pool);
    return write_table(path, page, t, n) != 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "export"))
        return export_env_table(argv[2]);
    char dir[] = "/tmp/zs-class-tables-XXXXXX";
    if (!mkdtemp(dir))
        return 2;

    /* Mainline's table (chain 10, as the RFC's run), from a default pool's class rows. */
    struct zs_pool_config cfg;
    zs_pool_config_init(&cfg);
    cfg.max_pages_per_zspage = 10;
    struct zs_pool *mainline = zs_create_pool_with_config("mainline", &cfg);
    static struct zs_class_spec t[MAX_TABLE];
    size_t n = table_of(mainline, t, MAX_TABLE);
    CHECK(n > 0 && t[n - 1].size == PAGE && t[n - 1].chain == 1, "mainline's table ends with the page");

    struct zs_pool_config explicit_cfg;
    zs_pool_config_init(&explicit_cfg);
    explicit_cfg.class_table = t;
    explicit_cfg.class_count = n;
    struct zs_pool *loaded = zs_create_pool_with_config("explicit", &explicit_cfg);
    CHECK(loaded != NULL, "mainline's table given explicitly");
    if (!loaded)
        return 1;
    CHECK(zs_huge_class_size(loaded) == zs_huge_class_size(mainline), "huge_class_size %zu vs %zu",
          zs_huge_class_size(loaded), zs_huge_class_size(mainline));
    unsigned int differ = 0;
    for (unsigned int size = 1; size <= PAGE + 64; size++) {
        struct zs_class_stats a, b;
        zs_class_stats(mainline, zs_lookup_class_index(mainline, size), &a);
        zs_class_stats(loaded, zs_lookup_class_index(loaded, size), &b);
        differ += a.size != b.size;
    }
    CHECK(differ == 0, "%u sizes go to a class of another size", differ);
    same_workload(mainline, loaded, "struct table");
    zs_destroy_pool(loaded);

    /* The same table as a file, for unmodified programs. */
    char path[512];
    snprintf(path, sizeof(path), "%s/mainline-chain10.table", dir);
    CHECK(write_table(path, PAGE, t, n) == 0, "writing %s", path);
    setenv("ZSMALLOC_CLASS_TABLE", path, 1);
    struct zs_pool *from_env = zs_create_pool("env");
    CHECK(from_env != NULL, "ZSMALLOC_CLASS_TABLE=%s", path);
    if (from_env) {
        struct zs_pool *fresh = zs_create_pool_with_config("mainline", &cfg);
        same_workload(fresh, from_env, "ZSMALLOC_CLASS_TABLE");
        zs_destroy_pool(fresh);
        zs_destroy_pool(from_env);
    }
    struct zs_pool_config env_cfg;
    CHECK(zs_pool_config_from_env(&env_cfg) == 0 && env_cfg.class_count == n &&
              !memcmp(env_cfg.class_table, t, n * sizeof(*t)),
          "zs_pool_config_from_env points at the file's table");
    struct zs_pool *again = zs_create_pool_with_config("env-config", &env_cfg);
    CHECK(again && zs_huge_class_size(again) == zs_huge_class_size(mainline), "a pool from that config");
    zs_destroy_pool(again);
    struct zs_pool_config old;
    CHECK(zs_pool_config_from_env_sized(&old, ZS_POOL_CONFIG_SIZE_VER4) == -EINVAL &&
              strstr(zs_last_error_message(), "no room for the class table"),
          "a version-4 struct cannot carry the environment's table: refused, not dropped");
    unsetenv("ZSMALLOC_CLASS_TABLE");
    unlink(path);
    zs_destroy_pool(mainline);

    bad_tables();
    bad_files(dir);
    band_file(dir);
    rmdir(dir);
    printf("class_tables: %d passed, %d failed\n", passed, failed);
    return failed != 0;
}
