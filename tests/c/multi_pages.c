// SPDX-License-Identifier: GPL-2.0-or-later OR MIT
/*
 * multi_pages: objects of several pages (docs/C_API.md, Objects of several pages) in a program
 * that knows nothing of them: the pool is zs_create_pool()'s, so ZSMALLOC_MULTI_PAGE_SIZE=16K
 * gives it the multi-page band. Stores objects of every length up to M (16K by default), reads
 * them back byte-exact, checks the page count against a model of the RFC's class table written
 * here from its formulas (sizes, orders, chains, objects per zspage, merges, the lookup of a
 * length), frees half, compacts, reads the rest again, frees everything.
 *
 *   ZSMALLOC_MULTI_PAGE_SIZE=16K multi_pages [M]
 *   prints "multi_pages: P passed, F failed, R refused" (R: stores the pool refused; 0 when
 *   the pool's band is M's)
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zsmalloc.h"
#include "check.h"

#define PAGE 4096u
#define CHAIN 8u
#define HDR 8u
#define MAX_INDEX 2048

/* The model's class table: per class index, size, order, chain and objects per zspage. */
static unsigned n0, n, d1, order_k;
static unsigned size_of[MAX_INDEX], order_of[MAX_INDEX], chain_of[MAX_INDEX], objs_of[MAX_INDEX];

static void model(unsigned multi)
{
    n0 = (PAGE - 32 + 15) / 16 + 1;
    d1 = multi >> 8;
    n = n0 + (multi - PAGE + d1 - 1) / d1 + 1;
    for (order_k = 0; (PAGE << order_k) < multi; order_k++)
        ;
    for (unsigned i = 0; i < n; i++) {
        unsigned size = i < n0 ? 32 + i * 16 : PAGE + (i - n0) * d1;
        if (i < n0 && size > PAGE)
            size = PAGE;
        unsigned order = size > PAGE ? order_k : 0, unit = PAGE << order, chain = 1;
        if (size & (size - 1)) {
            unsigned best = UINT32_MAX;
            for (unsigned c = 1; c <= CHAIN; c++)
                if ((c * unit) % size < best) {
                    best = (c * unit) % size;
                    chain = c;
                }
        }
        size_of[i] = size;
        order_of[i] = order;
        chain_of[i] = chain;
        objs_of[i] = chain * unit / size;
    }
}

/* The created class serving index i: mainline's merge, within a band. */
static unsigned serving(unsigned i)
{
    while (i + 1 < n && (i + 1 < n0) == (i < n0) && chain_of[i + 1] == chain_of[i] &&
           objs_of[i + 1] == objs_of[i])
        i++;
    return i;
}

static unsigned index_of(size_t len)
{
    size_t s = len + HDR;
    if (s > PAGE + HDR) {
        size_t i = n0 + (s - PAGE + d1 - 1) / d1;
        return (unsigned)(i < n - 1 ? i : n - 1);
    }
    if (s <= 32)
        return 0;
    size_t i = (s - 32 + 15) / 16;
    return (unsigned)(i < n0 - 1 ? i : n0 - 1);
}

static unsigned char pattern(size_t i, size_t j)
{
    return (unsigned char)(i * 131 + j * 7 + (j >> 9));
}

static size_t length(size_t i, size_t multi)
{
    switch (i % 5) {
    case 0: return 1 + (i * 37) % 4096;
    case 1: return 4090 + i % 16;
    case 2: return multi - i % 9;
    default: return 4097 + (i * 7919) % (multi - 4096);
    }
}

int main(int argc, char **argv)
{
    size_t multi = argc > 1 ? strtoul(argv[1], NULL, 0) : 16384, count = 4000, refused = 0;
    struct zs_pool *pool = zs_create_pool("multi_pages");
    if (!pool) {
        fprintf(stderr, "multi_pages: no pool: %s\n", zs_last_error_message());
        return 1;
    }
    model((unsigned)multi);
    struct zs_handle *h = calloc(count, sizeof(*h));
    size_t *lens = calloc(count, sizeof(*lens));
    unsigned char *buf = malloc(multi), *local = malloc(multi + ZS_HANDLE_SIZE);
    static unsigned long per_class[MAX_INDEX];
    for (size_t i = 0; i < count; i++) {
        lens[i] = length(i, multi);
        for (size_t j = 0; j < lens[i]; j++)
            buf[j] = pattern(i, j);
        int rc = zs_store(pool, &h[i], buf, lens[i], 0);
        if (rc == -ENOSPC) {
            refused++;
            lens[i] = 0;
            continue;
        }
        CHECK(rc == 0, "store %zu bytes", lens[i]);
        per_class[serving(index_of(lens[i]))]++;
    }
    /* The class table, row by row, and the page count the model gives. */
    unsigned long pages = 0;
    for (unsigned i = 0; i < n && !refused; i++) {
        struct zs_class_stats cs;
        CHECK(zs_class_stats(pool, i, &cs) == 0, "class %u", i);
        unsigned s = serving(i);
        CHECK(cs.index == s && cs.size == size_of[s] && cs.order == order_of[s] &&
                  cs.pages_per_zspage == chain_of[s] && cs.objs_per_zspage == objs_of[s],
              "class %u: index %u size %u order %u chain %u objs %u, model %u %u %u %u %u", i,
              cs.index, cs.size, cs.order, cs.pages_per_zspage, cs.objs_per_zspage, s, size_of[s],
              order_of[s], chain_of[s], objs_of[s]);
        if (i == s)
            pages += (per_class[s] + objs_of[s] - 1) / objs_of[s] * (chain_of[s] << order_of[s]);
    }
    if (!refused)
        CHECK(zs_get_total_pages(pool) == pages, "pages %lu, model %lu",
              zs_get_total_pages(pool), pages);
    for (int round = 0; round < 2; round++) {
        for (size_t i = 0; i < count; i++) {
            if (!lens[i])
                continue;
            const unsigned char *p = zs_obj_read_begin(pool, &h[i], lens[i], local);
            CHECK(p != NULL, "read %zu bytes", lens[i]);
            int same = p != NULL;
            for (size_t j = 0; same && j < lens[i]; j++)
                same = p[j] == pattern(i, j);
            CHECK(same, "object %zu (%zu bytes) read back", i, lens[i]);
            if (p)
                CHECK(zs_obj_read_end(pool, &h[i], lens[i], (void *)p) == 0, "read end");
        }
        if (round == 0) {
            for (size_t i = 1; i < count; i += 2)
                if (lens[i]) {
                    CHECK(zs_free(pool, &h[i]) == 0, "free");
                    lens[i] = 0;
                }
            zs_compact(pool);
            struct zs_pool_stats st;
            CHECK(zs_pool_stats(pool, &st) == 0, "stats");
            CHECK(st.objs_moved > 0 && st.bytes_moved > 0, "compaction moved %llu objects",
                  (unsigned long long)st.objs_moved);
        }
    }
    for (size_t i = 0; i < count; i++)
        if (lens[i])
            CHECK(zs_free(pool, &h[i]) == 0, "free");
    CHECK(zs_get_total_pages(pool) == 0, "pages left: %lu", zs_get_total_pages(pool));
    zs_destroy_pool(pool);
    free(h);
    free(lens);
    free(buf);
    free(local);
    printf("multi_pages: %d passed, %d failed, %zu refused\n", passed, failed, refused);
    return failed ? 1 : 0;
}
