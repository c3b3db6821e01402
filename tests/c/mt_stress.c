// SPDX-License-Identifier: GPL-2.0-or-later OR MIT
/*
 * mt_stress: concurrent stores, reads (copy and scatter-gather) and frees on one pool from
 * several pthreads, with a thread compacting all along. Every read is verified byte by byte.
 *
 *   mt_stress [THREADS [SLOTS_PER_THREAD [SECONDS [REQUIRE_MOVES [COMPACT]]]]]
 *                                                          (default: 4 4096 2 1 1)
 *
 * It reports how many objects compaction moved while read sections were active (the pool's
 * objs_moved counter over compaction calls that overlapped a read section) and how many times a
 * reader found its object at a new location since its previous visit (the handle word changed).
 * A store refused with -ENOSPC (a length the pool's backend does not store: zblock's top
 * lengths) is counted and reported apart. Exit status 1 if any read was wrong, if nothing moved
 * while readers were active (the run goes on past SECONDS until something has, up to a bound
 * of compactions; unless REQUIRE_MOVES is 0, e.g. under valgrind, which runs one thread at a
 * time), or if pages remain after everything is freed. COMPACT 0 runs no compaction (then REQUIRE_MOVES must be 0): the
 * operations per second are then the workers' alone, comparable across backends.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "zsmalloc.h"

/* Compactions after which a run that must see a move while reading gives up. */
#define MAX_COMPACTIONS 1000000ULL

struct rec {
    struct zs_handle handle; /* first: 8-aligned */
    uint32_t len;            /* 0: empty */
    uint32_t seed;
    uintptr_t last_word; /* handle word when this thread last touched the object */
};

struct worker {
    pthread_t thread;
    unsigned id;
    struct rec *recs;
    uint64_t rng;
    unsigned long long stores, reads, sg_reads, frees, relocations, bad, errors, refused;
};

static struct zs_pool *pool;
static size_t page, nslots;
static int stop;
static long active_readers;
static unsigned long long read_begins;

static uint64_t next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static unsigned char pattern(uint32_t seed, size_t j)
{
    return (unsigned char)(seed * 131u + j * 7u);
}

static size_t pick_len(uint64_t *rng)
{
    uint64_t r = next(rng);
    switch (r % 10) {
    case 0:
        return page; /* huge */
    case 1:
    case 2:
        return page / 2 + r / 10 % (page / 2 - 64);
    default:
        return 16 + r / 10 % (page / 2);
    }
}

static uintptr_t word_of(struct rec *r)
{
    return __atomic_load_n(&r->handle.obj, __ATOMIC_ACQUIRE);
}

static void do_read(struct worker *w, struct rec *r, unsigned char *local_copy, int sg)
{
    __atomic_add_fetch(&active_readers, 1, __ATOMIC_SEQ_CST);
    __atomic_add_fetch(&read_begins, 1, __ATOMIC_SEQ_CST);
    uintptr_t before = word_of(r);
    if (before != r->last_word) {
        w->relocations++; /* compaction moved it since our last visit */
        r->last_word = before;
    }
    int ok = 1;
    if (sg) {
        struct zs_sg seg[2];
        int n = zs_obj_read_sg_begin(pool, &r->handle, seg, r->len);
        if (n < 1) {
            w->errors++;
            goto out;
        }
        size_t at = 0;
        for (int s = 0; s < n; s++)
            for (size_t j = 0; j < seg[s].len; j++, at++)
                ok &= ((const unsigned char *)seg[s].addr)[j] == pattern(r->seed, at);
        ok &= at == r->len;
        if (zs_obj_read_sg_end(pool, &r->handle) != 0)
            w->errors++;
        w->sg_reads++;
    } else {
        const unsigned char *p = zs_obj_read_begin(pool, &r->handle, r->len, local_copy);
        if (!p) {
            w->errors++;
            goto out;
        }
        /* Verify twice: the object must hold still for the whole section. */
        for (int pass = 0; pass < 2; pass++)
            for (size_t j = 0; j < r->len; j++)
                ok &= p[j] == pattern(r->seed, j);
        if (zs_obj_read_end(pool, &r->handle, r->len, (void *)p) != 0)
            w->errors++;
        w->reads++;
    }
    if (!ok)
        w->bad++;
out:
    __atomic_sub_fetch(&active_readers, 1, __ATOMIC_SEQ_CST);
}

static void *work(void *arg)
{
    struct worker *w = arg;
    unsigned char *buf = malloc(page), *local_copy = malloc(page);
    if (!buf || !local_copy)
        abort();
    while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
        struct rec *r = &w->recs[next(&w->rng) % nslots];
        if (r->len == 0) {
            size_t len = pick_len(&w->rng);
            uint32_t seed = (uint32_t)next(&w->rng);
            for (size_t j = 0; j < len; j++)
                buf[j] = pattern(seed, j);
            int err = zs_store(pool, &r->handle, buf, len, 0);
            if (err == -ENOSPC) { /* a length the backend does not store (zblock) */
                w->refused++;
                continue;
            }
            if (err != 0) {
                w->errors++;
                continue;
            }
            r->len = (uint32_t)len;
            r->seed = seed;
            r->last_word = word_of(r);
            w->stores++;
            continue;
        }
        unsigned roll = (unsigned)(next(&w->rng) % 100);
        if (roll < 50) {
            do_read(w, r, local_copy, 0);
        } else if (roll < 65) {
            do_read(w, r, local_copy, 1);
        } else {
            if (zs_free(pool, &r->handle) != 0) {
                w->errors++;
                continue;
            }
            r->len = 0;
            w->frees++;
        }
    }
    free(buf);
    free(local_copy);
    return NULL;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    unsigned nthreads = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 0) : 4;
    nslots = argc > 2 ? strtoul(argv[2], NULL, 0) : 4096;
    double seconds = argc > 3 ? strtod(argv[3], NULL) : 2.0;
    int require_moves = argc > 4 ? atoi(argv[4]) : 1;
    int compact = argc > 5 ? atoi(argv[5]) : 1;
    if (nthreads == 0 || nslots == 0 || seconds <= 0 || (!compact && require_moves)) {
        fprintf(stderr,
                "usage: %s [THREADS [SLOTS_PER_THREAD [SECONDS [REQUIRE_MOVES [COMPACT]]]]]\n",
                argv[0]);
        return 2;
    }
    struct zs_pool_config cfg;
    if (zs_pool_config_from_env(&cfg) != 0 || !(pool = zs_create_pool("mt_stress"))) {
        fprintf(stderr, "mt_stress: %s\n", zs_last_error_message());
        return 1;
    }
    page = cfg.page_size;

    struct worker *ws = calloc(nthreads, sizeof(*ws));
    if (!ws)
        return 1;
    for (unsigned t = 0; t < nthreads; t++) {
        ws[t].id = t;
        ws[t].rng = 0x9e3779b97f4a7c15ULL * (t + 1);
        ws[t].recs = calloc(nslots, sizeof(struct rec));
        if (!ws[t].recs)
            return 1;
        if (pthread_create(&ws[t].thread, NULL, work, &ws[t]) != 0) {
            perror("pthread_create");
            return 1;
        }
    }

    /* The compaction thread is this one. */
    unsigned long long compactions = 0, moved_while_reading = 0, overlapping = 0;
    /* SECONDS is the least the workers run. With REQUIRE_MOVES the run goes on until compaction
     * has moved an object under a reader, so that a loaded machine makes it longer, not failed;
     * it gives up (and fails) only after MAX_COMPACTIONS compactions that moved nothing so. */
    double start = now(), end = start + seconds;
    while (now() < end ||
           (require_moves && moved_while_reading == 0 && compactions < MAX_COMPACTIONS)) {
        if (!compact) {
            struct timespec pause = {0, 10 * 1000 * 1000};
            nanosleep(&pause, NULL);
            continue;
        }
        struct zs_pool_stats s0, s1;
        zs_pool_stats(pool, &s0);
        long a0 = __atomic_load_n(&active_readers, __ATOMIC_SEQ_CST);
        unsigned long long b0 = __atomic_load_n(&read_begins, __ATOMIC_SEQ_CST);
        zs_compact(pool);
        long a1 = __atomic_load_n(&active_readers, __ATOMIC_SEQ_CST);
        unsigned long long b1 = __atomic_load_n(&read_begins, __ATOMIC_SEQ_CST);
        zs_pool_stats(pool, &s1);
        compactions++;
        if (a0 > 0 || a1 > 0 || b1 != b0) {
            overlapping++;
            moved_while_reading += s1.objs_moved - s0.objs_moved;
        }
    }
    __atomic_store_n(&stop, 1, __ATOMIC_RELAXED);

    unsigned long long stores = 0, reads = 0, sg_reads = 0, frees = 0, relocations = 0, bad = 0,
                       errors = 0, refused = 0;
    for (unsigned t = 0; t < nthreads; t++) {
        pthread_join(ws[t].thread, NULL);
        stores += ws[t].stores;
        reads += ws[t].reads;
        sg_reads += ws[t].sg_reads;
        frees += ws[t].frees;
        relocations += ws[t].relocations;
        bad += ws[t].bad;
        errors += ws[t].errors;
        refused += ws[t].refused;
    }
    double elapsed = now() - start;

    /* Final check of every live object, then free everything. */
    unsigned char *local_copy = malloc(page);
    unsigned long long live = 0;
    for (unsigned t = 0; t < nthreads; t++) {
        for (size_t k = 0; k < nslots; k++) {
            struct rec *r = &ws[t].recs[k];
            if (!r->len)
                continue;
            live++;
            do_read(&ws[t], r, local_copy, 0);
            if (zs_free(pool, &r->handle) != 0)
                errors++;
        }
        bad += ws[t].bad;
        free(ws[t].recs);
    }
    struct zs_pool_stats st;
    zs_pool_stats(pool, &st);
    printf("mt_stress: %u threads x %zu slots, %.1f s, page %zu\n", nthreads, nslots, elapsed,
           page);
    printf("mt_stress: stores %llu, reads %llu (+%llu scatter-gather), frees %llu, errors %llu\n",
           stores, reads, sg_reads, frees, errors);
    printf("mt_stress: %.0f operations per second (stores, reads and frees, every read verified)\n",
           (double)(stores + reads + sg_reads + frees) / elapsed);
    if (refused)
        printf("mt_stress: %llu stores refused with -ENOSPC (lengths the backend does not store)\n",
               refused);
    printf("mt_stress: compactions %llu (%llu overlapping reads), pages compacted %llu, "
           "objects moved %llu\n",
           compactions, overlapping, (unsigned long long)st.pages_compacted,
           (unsigned long long)st.objs_moved);
    printf("mt_stress: moved-while-reading %llu objects; relocations seen by readers %llu\n",
           moved_while_reading, relocations);
    printf("mt_stress: %llu live objects verified at the end; bad reads %llu; pages left %llu\n",
           live, bad, (unsigned long long)st.pages_allocated);
    zs_destroy_pool(pool);
    free(local_copy);
    free(ws);
    if (bad || errors || st.pages_allocated || (require_moves && moved_while_reading == 0)) {
        fprintf(stderr, "mt_stress: FAILED\n");
        return 1;
    }
    return 0;
}
