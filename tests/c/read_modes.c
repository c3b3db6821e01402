// SPDX-License-Identifier: GPL-2.0-or-later OR MIT
/*
 * read_modes: one workload in every read mode (ZS_READ_COPY, ZS_READ_MAP, ZS_READ_CONTIGUOUS)
 * and backing (ZS_BACKING_ANONYMOUS, ZS_BACKING_MEMFD). Checked: every byte read back, through
 * zs_obj_read_begin and scatter-gather; identical placement (every class's fullness groups,
 * objects and pages), page counts, reads and spanning reads, per class too, in every mode;
 * bytes copied only in copy mode; local_copy may be NULL in map and contiguous; contiguous
 * scatter-gather reads are one segment; a map section ended from another thread releases its
 * slot (the ring accepts 64 more sections afterwards).
 *
 *   read_modes [N]     N objects (default 20000); prints "read_modes: P passed, F failed"
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zsmalloc.h"
#include "check.h"

#define PAGE 4096
#define MAX_CLASSES 256


static unsigned char pattern(size_t i, size_t j)
{
    return (unsigned char)(i * 131 + j * 7 + (j >> 8));
}

/* What must be identical in every mode. */
struct outcome {
    struct zs_pool_stats st;
    unsigned int nclasses;
    struct zs_class_stats cs[MAX_CLASSES];
};

struct end_arg {
    struct zs_pool *pool;
    struct zs_handle *h;
    size_t len;
    const void *mem;
    int ret;
};

static void *end_elsewhere(void *p)
{
    struct end_arg *a = p;
    a->ret = zs_obj_read_end(a->pool, a->h, a->len, (void *)a->mem);
    return NULL;
}

static void run(uint32_t mode, uint32_t backing, size_t n, struct outcome *out)
{
    static const char *const names[] = {"copy", "map", "contiguous"};
    struct zs_pool_config cfg;
    zs_pool_config_init(&cfg);
    cfg.read_mode = mode;
    cfg.backing = backing;
    struct zs_pool *pool = zs_create_pool_with_config(names[mode], &cfg);
    CHECK(pool != NULL, "pool in mode %s, backing %u", names[mode], backing);
    if (!pool)
        exit(1);
    struct zs_handle *h = calloc(n, sizeof(*h));
    size_t *len = calloc(n, sizeof(*len));
    unsigned char *buf = malloc(PAGE), *local_copy = malloc(PAGE);
    if (!h || !len || !buf || !local_copy)
        exit(1);
    uint64_t x = 88172645463325252ULL;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        len[i] = (x % 8 == 0) ? 1 + x % PAGE : 200 + x % 3200;
        for (size_t j = 0; j < len[i]; j++)
            buf[j] = pattern(i, j);
        if (zs_store(pool, &h[i], buf, len[i], 0) != 0) {
            CHECK(0, "store %zu", i);
            exit(1);
        }
    }
    for (size_t i = 0; i < n; i += 3)
        zs_free(pool, &h[i]);
    zs_compact(pool);

    /* Pointer sections: local_copy only where the mode copies. */
    unsigned long long bad = 0, via_local = 0;
    for (size_t i = 1; i < n; i++) {
        if (i % 3 == 0)
            continue;
        unsigned char *lc = mode == ZS_READ_COPY ? local_copy : NULL;
        const unsigned char *p = zs_obj_read_begin(pool, &h[i], len[i], lc);
        if (!p) {
            bad++;
            continue;
        }
        via_local += lc && p == lc + ZS_HANDLE_SIZE;
        for (size_t j = 0; j < len[i]; j++)
            bad += p[j] != pattern(i, j);
        bad += zs_obj_read_end(pool, &h[i], len[i], (void *)p) != 0;
    }
    CHECK(bad == 0, "%s: every byte through zs_obj_read_begin (%llu bad)", names[mode], bad);
    /* Scatter-gather. */
    unsigned long long two = 0;
    for (size_t i = 1; i < n; i++) {
        if (i % 3 == 0)
            continue;
        struct zs_sg sg[2];
        int segs = zs_obj_read_sg_begin(pool, &h[i], sg, len[i]);
        if (segs < 1 || segs > 2) {
            bad++;
            continue;
        }
        two += segs == 2;
        size_t at = 0;
        for (int s = 0; s < segs; s++)
            for (size_t j = 0; j < sg[s].len; j++, at++)
                bad += ((unsigned char *)sg[s].addr)[j] != pattern(i, at);
        bad += at != len[i];
        bad += zs_obj_read_sg_end(pool, &h[i]) != 0;
    }
    CHECK(bad == 0, "%s: every byte through scatter-gather", names[mode]);
    if (mode == ZS_READ_CONTIGUOUS)
        CHECK(two == 0, "contiguous: one segment always (%llu had two)", two);
    else
        CHECK(two > 0, "%s: objects split across pages give two segments", names[mode]);

    CHECK(zs_pool_stats(pool, &out->st) == 0, "stats");
    if (mode == ZS_READ_COPY)
        CHECK(out->st.read_copy_bytes > 0 && via_local > 0, "copy: spanning objects copied");
    else
        CHECK(out->st.read_copy_bytes == 0 && via_local == 0, "%s: nothing copied (%llu bytes)",
              names[mode], (unsigned long long)out->st.read_copy_bytes);
    out->nclasses = 0;
    unsigned long long class_reads = 0, class_spanning = 0, class_copied = 0;
    for (unsigned int i = 0; out->nclasses < MAX_CLASSES &&
                             zs_class_stats(pool, i, &out->cs[out->nclasses]) == 0;
         i = out->cs[out->nclasses++].last_index + 1) {
        class_reads += out->cs[out->nclasses].reads;
        class_spanning += out->cs[out->nclasses].reads_spanning;
        class_copied += out->cs[out->nclasses].read_copy_bytes;
    }
    CHECK(class_reads == out->st.reads && class_spanning == out->st.reads_spanning &&
              class_copied == out->st.read_copy_bytes,
          "%s: class read counters add up to the pool's", names[mode]);
    /* After the figures were taken: the map slots' ring. */
    if (mode == ZS_READ_MAP) {
        /* Hold 64 mapped sections, end one from another thread, then one more fits. */
        size_t held[65], k = 0;
        const void *mem[65];
        struct zs_sg sg[2];
        for (size_t i = 1; i < n && k < 65; i++) {
            if (i % 3 == 0)
                continue;
            int segs = zs_obj_read_sg_begin(pool, &h[i], sg, len[i]);
            zs_obj_read_sg_end(pool, &h[i]);
            if (segs != 2)
                continue;
            mem[k] = zs_obj_read_begin(pool, &h[i], len[i], NULL);
            if (k < 64)
                CHECK(mem[k] != NULL, "map: section %zu of the ring", k);
            else
                CHECK(mem[k] == NULL && zs_last_error() == -EAGAIN, "map: the 65th is -EAGAIN");
            held[k++] = i;
        }
        pthread_t t;
        struct end_arg a = {pool, &h[held[0]], len[held[0]], mem[0], -1};
        pthread_create(&t, NULL, end_elsewhere, &a);
        pthread_join(t, NULL);
        CHECK(a.ret == 0, "map: a section ended from another thread");
        mem[64] = zs_obj_read_begin(pool, &h[held[64]], len[held[64]], NULL);
        CHECK(mem[64] != NULL, "map: its slot is free again");
        for (size_t j = 1; j < 65; j++)
            CHECK(zs_obj_read_end(pool, &h[held[j]], len[held[j]], (void *)mem[j]) == 0,
                  "map: end %zu", j);
    }

    for (size_t i = 0; i < n; i++)
        zs_free(pool, &h[i]);
    CHECK(zs_get_total_pages(pool) == 0, "%s: pages return to 0", names[mode]);
    zs_destroy_pool(pool);
    free(h);
    free(len);
    free(buf);
    free(local_copy);
}

int main(int argc, char **argv)
{
    size_t n = argc > 1 ? strtoul(argv[1], NULL, 0) : 20000;
    static struct outcome base, got;
    static const char *const names[] = {"copy", "map", "contiguous"};
    static const uint32_t runs[][2] = {
        {ZS_READ_COPY, ZS_BACKING_MEMFD},       {ZS_READ_MAP, ZS_BACKING_MEMFD},
        {ZS_READ_CONTIGUOUS, ZS_BACKING_ANONYMOUS}, {ZS_READ_CONTIGUOUS, ZS_BACKING_MEMFD},
    };
    run(ZS_READ_COPY, ZS_BACKING_ANONYMOUS, n, &base);
    for (size_t r = 0; r < sizeof(runs) / sizeof(runs[0]); r++) {
        uint32_t mode = runs[r][0];
        run(mode, runs[r][1], n, &got);
        CHECK(got.st.pages_allocated == base.st.pages_allocated &&
                  got.st.pages_peak == base.st.pages_peak &&
                  got.st.pages_compacted == base.st.pages_compacted &&
                  got.st.objs_moved == base.st.objs_moved &&
                  got.st.writes_spanning == base.st.writes_spanning,
              "%s (backing %u): the same pages and moves as copy", names[mode], runs[r][1]);
        CHECK(got.st.reads == base.st.reads && got.st.reads_spanning == base.st.reads_spanning,
              "%s: reads %llu, spanning %llu (copy: %llu, %llu)", names[mode],
              (unsigned long long)got.st.reads, (unsigned long long)got.st.reads_spanning,
              (unsigned long long)base.st.reads, (unsigned long long)base.st.reads_spanning);
        int same = got.nclasses == base.nclasses;
        for (unsigned int c = 0; same && c < base.nclasses; c++) {
            const struct zs_class_stats *a = &base.cs[c], *b = &got.cs[c];
            same = a->index == b->index && a->obj_allocated == b->obj_allocated &&
                   a->obj_used == b->obj_used && a->pages_used == b->pages_used &&
                   memcmp(a->fullness, b->fullness, sizeof(a->fullness)) == 0 &&
                   a->reads == b->reads && a->reads_spanning == b->reads_spanning;
        }
        CHECK(same, "%s (backing %u): identical placement in every class", names[mode],
              runs[r][1]);
        printf("read_modes: %-10s backing %u: pages %llu, reads %llu, spanning %llu, copied %llu\n",
               names[mode], runs[r][1], (unsigned long long)got.st.pages_peak,
               (unsigned long long)got.st.reads, (unsigned long long)got.st.reads_spanning,
               (unsigned long long)got.st.read_copy_bytes);
    }
    printf("read_modes: copy       backing 0: pages %llu, reads %llu, spanning %llu, copied %llu\n",
           (unsigned long long)base.st.pages_peak, (unsigned long long)base.st.reads,
           (unsigned long long)base.st.reads_spanning, (unsigned long long)base.st.read_copy_bytes);
    printf("read_modes: %d passed, %d failed\n", passed, failed);
    return failed != 0;
}
