// SPDX-License-Identifier: GPL-2.0-or-later OR MIT
/*
 * reliability: no call hangs, refusals change nothing, injected faults give -ENOMEM.
 *
 *   - many read sections of one object: nested in one thread (in place, copied, NULL local copy,
 *     scatter-gather, huge), 256 threads at a barrier on a page-sized object, 72 on a small one,
 *     sections ended by another thread; past the limit -EAGAIN, never a wait;
 *   - zs_handle_move(pool, &x, &x) validates x (empty, garbage, another pool's handle);
 *   - a refused read (local_copy NULL on an object crossing a page) counts nothing;
 *   - contiguous mode: nested sections of an object crossing a page, without a local copy, are
 *     in place (the address of its one scatter-gather segment) and copy nothing;
 *   - faults injected at the arena's reserve, commit and page allocation and at the memfd
 *     backing's growth (the library's hidden test hook zsmalloc_fault_inject, not in
 *     zsmalloc.h): -ENOMEM, nothing changed, the pool keeps working; at a map-mode window
 *     mapping: the read fails with -ENOMEM, the object stays intact, readable and freeable.
 *
 * An alarm kills the program if any case hangs, so a regression fails instead of hanging.
 *
 *   reliability        prints one line per failed check and "N passed, M failed"
 *   reliability env    prints the page size zs_pool_config_from_env() reads and how many of
 *                      three zs_create_pool() calls made a pool (scripts/test-c.sh checks that
 *                      a bad environment is reported once, an unknown ZSMALLOC_* by name)
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "zsmalloc.h"
#include "check.h"

#define PAGE 4096

/* The library's test hook (see zsmalloc-core's fault module): points 0 reserve, 1 commit,
 * 2 zspage pages, 3 memfd growth, 4 map window mapping; after `skip` calls the next `fail`
 * fail; returns the faults injected so far. */
int64_t zsmalloc_fault_inject(unsigned int point, unsigned int skip, unsigned int fail);
enum { FAULT_RESERVE = 0, FAULT_COMMIT = 1, FAULT_PAGES = 2, FAULT_MEMFD = 3, FAULT_MAP = 4 };


static unsigned char data[PAGE];

static struct zs_pool *new_pool(void)
{
    struct zs_pool *pool = zs_create_pool("reliability");
    if (!pool) {
        fprintf(stderr, "cannot create a pool: %s\n", zs_last_error_message());
        exit(2);
    }
    return pool;
}

static struct zs_pool_stats stats_of(struct zs_pool *pool)
{
    struct zs_pool_stats st;
    memset(&st, 0, sizeof(st));
    zs_pool_stats(pool, &st);
    return st;
}

/* Nested sections of one object in one thread: `n` begins, then `n` ends. */
static void nested(struct zs_pool *pool, size_t len, int n, int null_copy, int sg)
{
    static unsigned char copy[PAGE + 8];
    struct zs_handle h = {0};
    memset(data, 0x5a, len);
    CHECK(zs_store(pool, &h, data, len, 0) == 0, "store %zu", len);
    int begun = 0;
    for (int i = 0; i < n; i++) {
        if (sg) {
            struct zs_sg seg[2];
            int k = zs_obj_read_sg_begin(pool, &h, seg, len);
            if (k < 1 || ((unsigned char *)seg[0].addr)[0] != 0x5a)
                break;
        } else {
            const unsigned char *p = zs_obj_read_begin(pool, &h, len, null_copy ? NULL : copy);
            if (!p || p[len - 1] != 0x5a)
                break;
        }
        begun++;
    }
    CHECK(begun == n, "len %zu sg %d null %d: %d of %d nested sections", len, sg, null_copy, begun,
          n);
    CHECK(zs_free(pool, &h) == -EBUSY, "free while read");
    int ended = 0;
    for (int i = 0; i < begun; i++)
        ended += (sg ? zs_obj_read_sg_end(pool, &h) : zs_obj_read_end(pool, &h, len, NULL)) == 0;
    CHECK(ended == begun, "%d of %d ended", ended, begun);
    CHECK(zs_obj_read_end(pool, &h, len, NULL) == -EINVAL, "no section left to end");
    CHECK(zs_free(pool, &h) == 0, "free after the ends");
}

struct holder {
    struct zs_pool *pool;
    struct zs_handle *h;
    size_t len;
    pthread_barrier_t *barrier;
    int ok;
};

static void *hold(void *arg)
{
    struct holder *t = arg;
    unsigned char copy[PAGE + 8];
    const unsigned char *p = zs_obj_read_begin(t->pool, t->h, t->len, copy);
    pthread_barrier_wait(t->barrier);
    t->ok = p && p[0] == 0x33;
    pthread_barrier_wait(t->barrier);
    if (p)
        t->ok = t->ok && zs_obj_read_end(t->pool, t->h, t->len, (void *)p) == 0;
    return NULL;
}

/* `threads` threads each hold a section of one object of `len` bytes at a barrier. */
static void at_a_barrier(int threads, size_t len)
{
    struct zs_pool *pool = new_pool();
    struct zs_handle h = {0};
    memset(data, 0x33, len);
    CHECK(zs_store(pool, &h, data, len, 0) == 0, "store");
    pthread_barrier_t barrier;
    pthread_barrier_init(&barrier, NULL, (unsigned)threads + 1);
    pthread_t *tid = calloc((size_t)threads, sizeof(*tid));
    struct holder *t = calloc((size_t)threads, sizeof(*t));
    for (int i = 0; i < threads; i++) {
        t[i] = (struct holder){pool, &h, len, &barrier, 0};
        if (pthread_create(&tid[i], NULL, hold, &t[i]) != 0) {
            fprintf(stderr, "pthread_create failed\n");
            exit(2);
        }
    }
    pthread_barrier_wait(&barrier);
    CHECK(zs_free(pool, &h) == -EBUSY, "free while %d threads read", threads);
    pthread_barrier_wait(&barrier);
    int ok = 0;
    for (int i = 0; i < threads; i++) {
        pthread_join(tid[i], NULL);
        ok += t[i].ok;
    }
    CHECK(ok == threads, "%d of %d threads read and ended (len %zu)", ok, threads, len);
    CHECK(zs_free(pool, &h) == 0, "free after");
    pthread_barrier_destroy(&barrier);
    free(tid);
    free(t);
    zs_destroy_pool(pool);
}

struct ender {
    struct zs_pool *pool;
    struct zs_handle *h;
    size_t len;
    int n, ended;
};

static void *end_all(void *arg)
{
    struct ender *e = arg;
    for (int i = 0; i < e->n; i++)
        e->ended += zs_obj_read_end(e->pool, e->h, e->len, NULL) == 0;
    return NULL;
}

/* Sections begun in this thread, ended by another. */
static void ended_elsewhere(size_t len)
{
    static unsigned char copy[PAGE + 8];
    struct zs_pool *pool = new_pool();
    struct zs_handle h = {0};
    memset(data, 1, len);
    CHECK(zs_store(pool, &h, data, len, 0) == 0, "store");
    int begun = 0;
    for (int i = 0; i < 40; i++)
        begun += zs_obj_read_begin(pool, &h, len, copy) != NULL;
    struct ender e = {pool, &h, len, begun, 0};
    pthread_t t;
    pthread_create(&t, NULL, end_all, &e);
    pthread_join(t, NULL);
    CHECK(begun == 40 && e.ended == 40, "len %zu: %d begun, %d ended elsewhere", len, begun,
          e.ended);
    CHECK(zs_free(pool, &h) == 0, "free after");
    zs_destroy_pool(pool);
}

/* Past the limit a begin fails with -EAGAIN at once; one end makes room again. */
static void the_limit(void)
{
    static unsigned char copy[PAGE + 8];
    struct zs_pool *pool = new_pool();
    struct zs_handle h = {0};
    CHECK(zs_store(pool, &h, data, PAGE, 0) == 0, "store");
    long open = 0;
    while (open < (1L << 20) && zs_obj_read_begin(pool, &h, PAGE, copy))
        open++;
    CHECK(zs_last_error() == -EAGAIN, "limit: %d after %ld sections", zs_last_error(), open);
    CHECK(open >= 65535, "%ld sections of one object", open);
    CHECK(strstr(zs_strerror(-EAGAIN), "too many") != NULL, "strerror(EAGAIN)");
    struct zs_pool_stats before = stats_of(pool);
    CHECK(zs_obj_read_begin(pool, &h, PAGE, copy) == NULL, "still refused");
    CHECK(stats_of(pool).reads == before.reads, "a refused begin counts nothing");
    CHECK(zs_obj_read_end(pool, &h, PAGE, NULL) == 0, "end one");
    CHECK(zs_obj_read_begin(pool, &h, PAGE, copy) != NULL, "room for one again");
    long ended = 0;
    for (long i = 0; i < open; i++)
        ended += zs_obj_read_end(pool, &h, PAGE, NULL) == 0;
    CHECK(ended == open, "%ld of %ld ended", ended, open);
    CHECK(zs_free(pool, &h) == 0, "free after");
    zs_destroy_pool(pool);
}

/* zs_handle_move(pool, &x, &x): validated like any other move. */
static void move_onto_itself(void)
{
    struct zs_pool *pool = new_pool(), *other = new_pool();
    struct zs_handle x = {0};
    CHECK(zs_handle_move(pool, &x, &x) == -EINVAL && zs_last_error() == -EINVAL, "empty");
    x.obj = 0xdeadbee8;
    CHECK(zs_handle_move(pool, &x, &x) == -EINVAL, "garbage");
    x.obj = 0;
    CHECK(zs_store(other, &x, data, 100, 0) == 0, "store in the other pool");
    CHECK(zs_handle_move(pool, &x, &x) == -EINVAL, "another pool's handle");
    CHECK(zs_handle_move(other, &x, &x) == 0 && zs_last_error() == 0, "its own pool's handle");
    struct zs_handle copy = x;
    CHECK(zs_handle_move(other, &copy, &copy) == -EINVAL, "a copy owns nothing");
    CHECK(zs_free(other, &x) == 0, "free");
    zs_destroy_pool(pool);
    zs_destroy_pool(other);
}

/* A read refused because local_copy is NULL and the object crosses a page counts nothing. */
static void refused_read_counts_nothing(void)
{
    struct zs_pool *pool = new_pool();
    struct zs_handle h[2] = {{0}, {0}};
    for (int i = 0; i < 2; i++)
        CHECK(zs_store(pool, &h[i], data, 3000, 0) == 0, "store"); /* h[1] crosses a page */
    struct zs_pool_stats before = stats_of(pool);
    CHECK(zs_obj_read_begin(pool, &h[1], 3000, NULL) == NULL && zs_last_error() == -EINVAL,
          "NULL local copy on a spanning object");
    struct zs_pool_stats after = stats_of(pool);
    CHECK(after.reads == before.reads && after.reads_spanning == before.reads_spanning,
          "refused read counted: reads %llu -> %llu, spanning %llu -> %llu",
          (unsigned long long)before.reads, (unsigned long long)after.reads,
          (unsigned long long)before.reads_spanning, (unsigned long long)after.reads_spanning);
    CHECK(zs_free(pool, &h[1]) == 0, "nothing left registered");
    const void *p = zs_obj_read_begin(pool, &h[0], 3000, NULL);
    CHECK(p != NULL && stats_of(pool).reads == before.reads + 1, "an in-page read counts");
    zs_obj_read_end(pool, &h[0], 3000, (void *)p);
    CHECK(zs_free(pool, &h[0]) == 0, "free");
    zs_destroy_pool(pool);
}

/* Injected faults: the store that needs pages fails with -ENOMEM and changes nothing. */
static void faults(void)
{
    struct zs_pool *pool = new_pool();
    struct zs_handle h = {0}, k = {0};
    zsmalloc_fault_inject(FAULT_COMMIT, 0, 1);
    CHECK(zs_store(pool, &h, data, 100, 0) == -ENOMEM && h.obj == 0, "commit fault");
    CHECK(zs_get_total_pages(pool) == 0 && stats_of(pool).objs_inuse == 0, "nothing changed");
    CHECK(zs_store(pool, &h, data, 100, 0) == 0, "store after the fault");
    CHECK(zsmalloc_fault_inject(FAULT_COMMIT, 0, 0) == 1, "one commit fault injected");

    zsmalloc_fault_inject(FAULT_PAGES, 0, 1000);
    struct zs_pool_stats before = stats_of(pool);
    unsigned long pages = zs_get_total_pages(pool);
    CHECK(zs_store(pool, &k, data, 2000, 0) == -ENOMEM && k.obj == 0, "pages fault (store)");
    CHECK(zs_malloc(pool, &k, PAGE, 0) == -ENOMEM && k.obj == 0, "pages fault (malloc)");
    struct zs_pool_stats after = stats_of(pool);
    CHECK(zs_get_total_pages(pool) == pages && after.objs_inuse == before.objs_inuse &&
              after.bytes_stored == before.bytes_stored,
          "nothing changed");
    CHECK(zs_store(pool, &k, data, 100, 0) == 0, "room in an existing zspage: stored");
    CHECK(zs_free(pool, &k) == 0, "free");
    CHECK(zsmalloc_fault_inject(FAULT_PAGES, 0, 0) == 2, "two page faults injected");
    CHECK(zs_store(pool, &k, data, 2000, 0) == 0, "store after the fault");
    const unsigned char *p = zs_obj_read_begin(pool, &h, 100, NULL);
    CHECK(p && memcmp(p, data, 100) == 0, "earlier object intact");
    zs_obj_read_end(pool, &h, 100, (void *)p);
    zs_free(pool, &h);
    zs_free(pool, &k);
    zs_destroy_pool(pool);

    zsmalloc_fault_inject(FAULT_RESERVE, 0, 1);
    struct zs_pool *none = zs_create_pool("no-range");
    CHECK(none != NULL, "a pool without its range is still a pool");
    if (none) {
        CHECK(zs_store(none, &h, data, 10, 0) == -ENOMEM && h.obj == 0, "reserve fault");
        zs_destroy_pool(none);
    }
    CHECK(zsmalloc_fault_inject(9, 0, 1) == -EINVAL, "unknown point");
    zsmalloc_fault_inject(FAULT_RESERVE, 0, 0);
}

static struct zs_pool *pool_with(uint32_t read_mode, uint32_t backing)
{
    struct zs_pool_config cfg;
    zs_pool_config_init(&cfg);
    cfg.read_mode = read_mode;
    cfg.backing = backing;
    struct zs_pool *pool = zs_create_pool_with_config("reliability-memfd", &cfg);
    if (!pool) {
        fprintf(stderr, "cannot create a pool: %s\n", zs_last_error_message());
        exit(2);
    }
    return pool;
}

/* Contiguous mode: an object crossing a page is read in place, with no local copy, whether the
 * thread's announce slot is free or held by an outer section: every section of it returns the
 * address its one scatter-gather segment has; nothing is copied. */
static void contiguous_spanning(void)
{
    struct zs_pool *pool = pool_with(ZS_READ_CONTIGUOUS, ZS_BACKING_ANONYMOUS);
    struct zs_handle pad = {0}, h = {0};
    CHECK(zs_store(pool, &pad, data, 3000, 0) == 0 && zs_store(pool, &h, data, 3000, 0) == 0,
          "store"); /* the second 3000-byte object crosses a page */
    struct zs_pool_stats before = stats_of(pool);
    const unsigned char *p[4];
    int begun = 0;
    for (int i = 0; i < 4; i++) {
        p[i] = zs_obj_read_begin(pool, &h, 3000, NULL);
        begun += p[i] != NULL;
    }
    CHECK(begun == 4, "contiguous: %d of 4 nested sections without a local copy", begun);
    struct zs_sg sg[2];
    int n = zs_obj_read_sg_begin(pool, &h, sg, 3000);
    CHECK(n == 1 && sg[0].len == 3000, "contiguous: one segment (got %d)", n);
    for (int i = 0; i < begun; i++)
        CHECK(p[i] == sg[0].addr && memcmp(p[i], data, 3000) == 0, "section %d in place", i);
    zs_obj_read_sg_end(pool, &h);
    for (int i = begun - 1; i >= 0; i--)
        CHECK(zs_obj_read_end(pool, &h, 3000, (void *)p[i]) == 0, "end %d", i);
    struct zs_pool_stats after = stats_of(pool);
    CHECK(after.reads_spanning - before.reads_spanning == 5 && after.read_copy_bytes == 0,
          "5 spanning reads, 0 bytes copied (got %llu, %llu)",
          (unsigned long long)(after.reads_spanning - before.reads_spanning),
          (unsigned long long)after.read_copy_bytes);
    CHECK(zs_free(pool, &h) == 0 && zs_free(pool, &pad) == 0, "free");
    zs_destroy_pool(pool);
}

/* Faults at the memfd's growth (a store needing pages: -ENOMEM, nothing changed) and at a map
 * window's mapping (the read fails with -ENOMEM; the object stays intact and readable). */
static void memfd_and_map_faults(void)
{
    struct zs_pool *pool = pool_with(ZS_READ_MAP, ZS_BACKING_MEMFD);
    struct zs_handle h[3] = {{0}};
    int64_t grown = zsmalloc_fault_inject(FAULT_MEMFD, 0, 1);
    CHECK(zs_store(pool, &h[0], data, 3000, 0) == -ENOMEM && h[0].obj == 0, "memfd growth fault");
    CHECK(zs_get_total_pages(pool) == 0 && stats_of(pool).objs_inuse == 0, "nothing changed");
    CHECK(zsmalloc_fault_inject(FAULT_MEMFD, 0, 0) == grown + 1, "one memfd fault injected");
    for (int i = 0; i < 3; i++)
        CHECK(zs_store(pool, &h[i], data, 3000, 0) == 0, "store after the fault");
    /* Of three 3000-byte objects in a fresh pool, one crosses a page: find it. */
    int span = -1;
    for (int i = 0; i < 3; i++) {
        struct zs_sg sg[2];
        int n = zs_obj_read_sg_begin(pool, &h[i], sg, 3000);
        CHECK(n == 1 || n == 2, "sg begin");
        zs_obj_read_sg_end(pool, &h[i]);
        if (n == 2)
            span = i;
    }
    CHECK(span >= 0, "an object crosses a page");
    if (span >= 0) {
        struct zs_pool_stats before = stats_of(pool);
        int64_t mapped = zsmalloc_fault_inject(FAULT_MAP, 0, 1);
        const unsigned char *p = zs_obj_read_begin(pool, &h[span], 3000, NULL);
        CHECK(p == NULL && zs_last_error() == -ENOMEM, "map fault: the read fails with -ENOMEM");
        CHECK(zsmalloc_fault_inject(FAULT_MAP, 0, 0) == mapped + 1, "one map fault injected");
        CHECK(stats_of(pool).reads == before.reads, "a failed read counts nothing");
        p = zs_obj_read_begin(pool, &h[span], 3000, NULL);
        CHECK(p && memcmp(p, data, 3000) == 0, "the object is intact and maps");
        if (p)
            CHECK(zs_obj_read_end(pool, &h[span], 3000, (void *)p) == 0, "end");
    }
    for (int i = 0; i < 3; i++)
        CHECK(zs_free(pool, &h[i]) == 0, "free");
    zs_destroy_pool(pool);
}

static int env_mode(void)
{
    struct zs_pool_config cfg;
    int r = zs_pool_config_from_env(&cfg);
    int made = 0;
    for (int i = 0; i < 3; i++) {
        struct zs_pool *p = zs_create_pool("env");
        made += p != NULL;
        zs_destroy_pool(p);
    }
    printf("page_size %u (%d), pools %d\n", r == 0 ? cfg.page_size : 0, r, made);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "env") == 0)
        return env_mode();
    alarm(120); /* a hang is a failure */
    for (size_t i = 0; i < PAGE; i++)
        data[i] = (unsigned char)(i * 7 + 1);
    struct zs_pool *pool = new_pool();
    struct zs_handle pad[1] = {{0}};
    CHECK(zs_store(pool, &pad[0], data, 3000, 0) == 0, "pad"); /* next 3000-byte object spans */
    nested(pool, 100, 8, 0, 0);
    nested(pool, 100, 8, 1, 0);
    nested(pool, 3000, 8, 0, 0);
    nested(pool, 3000, 8, 0, 1);
    nested(pool, PAGE, 8, 0, 0);
    nested(pool, PAGE, 8, 1, 0);
    nested(pool, PAGE, 8, 0, 1);
    nested(pool, 100, 10000, 0, 0);
    nested(pool, PAGE, 10000, 0, 0);
    zs_free(pool, &pad[0]);
    zs_destroy_pool(pool);
    at_a_barrier(256, PAGE);
    at_a_barrier(72, 100);
    at_a_barrier(8, PAGE);
    ended_elsewhere(100);
    ended_elsewhere(PAGE);
    the_limit();
    move_onto_itself();
    refused_read_counts_nothing();
    faults();
    memfd_and_map_faults();
    contiguous_spanning();
    printf("reliability: %d passed, %d failed\n", passed, failed);
    return failed != 0;
}
