// SPDX-License-Identifier: GPL-2.0-or-later OR MIT
/*
 * zsmalloc_test: the kernel's zsmalloc_test module pattern on libzsmalloc's C ABI.
 *
 *   zsmalloc_test [LO HI STEP N]        (default: 32 4080 16 1337; HI at most a page)
 *
 * For each size LO..=HI by STEP, N objects of that size are stored; then every object is read
 * back in store order and verified byte by byte. The pool comes from zs_create_pool(), so
 * ZSMALLOC_* variables configure it: with ZSMALLOC_CHAIN_SIZE=10 this prints the RFC's BASE
 * figures under ZSMALLOC_CHAIN_POLICY=classic and PATCHED under =heuristic.
 *
 * Spanning objects are counted according to the read mode (ZSMALLOC_READ_MODE):
 *  - copy (mainline): the kernel's way, from the pointer zs_obj_read_begin() returns: a spanning
 *    object is copied into local_copy and local_copy + ZS_HANDLE_SIZE comes back. The pool's own
 *    counters must agree with that count;
 *  - map and contiguous: every object is read in place (mapped, or adjacent pages), nothing is
 *    copied, so the pointer says nothing about spanning. The count printed is the pool's
 *    reads_spanning, which docs/C_API.md promises equals copy mode's; checked here: no read
 *    returned local_copy and no byte was copied.
 * A length the pool's backend does not store (-ENOSPC: zblock's top lengths) is counted, left
 * out of the figures and reported on a line of its own.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zsmalloc.h"

static void die(const char *what, int err)
{
    fprintf(stderr, "zsmalloc_test: %s: %s (%s)\n", what, zs_strerror(err),
            zs_last_error_message());
    exit(1);
}

static unsigned char pattern(size_t i, size_t j)
{
    return (unsigned char)(i * 31 + j);
}

#define USAGE "usage: zsmalloc_test [LO HI STEP N] (whole numbers, 0 < LO <= HI, STEP > 0, N > 0)"

/* A whole number, all of `arg`: strtoul alone takes "abc" as 0 and "-5" as a huge count. */
static size_t number(const char *name, const char *arg)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(arg, &end, 10);
    if (arg[0] < '0' || arg[0] > '9' || *end != '\0' || errno == ERANGE || v > SIZE_MAX) {
        fprintf(stderr, "zsmalloc_test: %s '%s' is not a whole number; " USAGE "\n", name, arg);
        exit(2);
    }
    return (size_t)v;
}

int main(int argc, char **argv)
{
    size_t lo = 32, hi = 4080, step = 16, n = 1337;
    if (argc == 5) {
        lo = number("LO", argv[1]);
        hi = number("HI", argv[2]);
        step = number("STEP", argv[3]);
        n = number("N", argv[4]);
    } else if (argc != 1) {
        fprintf(stderr, USAGE "\n");
        return 2;
    }
    const char *wrong = lo == 0 ? "LO is 0" : hi < lo ? "HI is below LO" : step == 0 ? "STEP is 0"
                        : n == 0 ? "N is 0" : NULL;
    if (wrong) {
        fprintf(stderr, "zsmalloc_test: %s; " USAGE "\n", wrong);
        return 2;
    }

    struct zs_pool_config cfg;
    if (zs_pool_config_from_env(&cfg) != 0)
        die("configuration", zs_last_error());
    const size_t page = cfg.page_size;
    /* Objects are written from a buffer of one page, the largest the pool stores. */
    if (hi > page) {
        fprintf(stderr, "zsmalloc_test: HI %zu is above the pool's page size %zu\n", hi, page);
        return 2;
    }
    size_t sizes = (hi - lo) / step + 1;
    if (n > SIZE_MAX / sizeof(struct zs_handle) / sizes) {
        fprintf(stderr, "zsmalloc_test: N %zu objects of each of %zu sizes are more than this "
                        "machine addresses\n", n, sizes);
        return 2;
    }
    struct zs_pool *pool = zs_create_pool("zsmalloc_test");
    if (!pool)
        die("zs_create_pool", zs_last_error());

    size_t count = sizes * n;
    struct zs_handle *handles = calloc(count, sizeof(*handles));
    size_t *lens = calloc(count, sizeof(*lens));
    unsigned char *buf = malloc(page);
    unsigned char *local_copy = malloc(page);
    if (!handles || !lens || !buf || !local_copy) {
        fprintf(stderr, "zsmalloc_test: out of memory for the table of %zu objects\n", count);
        return 1;
    }

    unsigned long long total_size = 0;
    size_t i = 0, refused = 0;
    for (size_t size = lo; size <= hi; size += step) {
        for (size_t k = 0; k < n; k++, i++) {
            for (size_t j = 0; j < size; j++)
                buf[j] = pattern(i, j);
            int err = zs_store(pool, &handles[i], buf, size, 0);
            if (err == -ENOSPC) {
                lens[i] = 0;
                refused++;
                continue;
            }
            if (err)
                die("zs_store", err);
            lens[i] = size;
            total_size += size;
        }
    }
    unsigned long pages = zs_get_total_pages(pool);
    unsigned long long permille =
        pages ? 1000ULL * total_size / ((unsigned long long)pages * page) : 0;
    printf("zsmalloc_test: num write objects: %zu\n", count);
    printf("zsmalloc_test: pool pages used %lu, total allocated size %llu\n", pages, total_size);
    printf("zsmalloc_test: pool memory utilization: %llu.%llu\n", permille / 10, permille % 10);
    if (refused)
        printf("zsmalloc_test: refused objects: %zu (-ENOSPC: lengths the pool does not store)\n",
               refused);

    unsigned long long spanning = 0, memcpy_size = 0;
    for (i = 0; i < count; i++) {
        if (lens[i] == 0)
            continue;
        const unsigned char *obj = zs_obj_read_begin(pool, &handles[i], lens[i], local_copy);
        if (!obj)
            die("zs_obj_read_begin", zs_last_error());
        if (obj == local_copy + ZS_HANDLE_SIZE) {
            if (cfg.read_mode != ZS_READ_COPY) {
                fprintf(stderr, "zsmalloc_test: object %zu copied in a read mode that copies "
                                "nothing\n", i);
                return 1;
            }
            spanning++;
            memcpy_size += lens[i];
        }
        for (size_t j = 0; j < lens[i]; j++) {
            if (obj[j] != pattern(i, j)) {
                fprintf(stderr, "zsmalloc_test: object %zu byte %zu differs\n", i, j);
                return 1;
            }
        }
        int err = zs_obj_read_end(pool, &handles[i], lens[i], (void *)obj);
        if (err)
            die("zs_obj_read_end", err);
    }
    struct zs_pool_stats st;
    if (zs_pool_stats(pool, &st) != 0)
        die("zs_pool_stats", zs_last_error());
    /* Nothing was copied (checked per read above): spanning is what the pool counted. */
    if (cfg.read_mode != ZS_READ_COPY)
        spanning = st.reads_spanning;
    printf("zsmalloc_test: num read objects: %zu\n", count - refused);
    printf("zsmalloc_test: spanning objects: %llu, total memcpy size: %llu\n", spanning,
           memcpy_size);

    /* The library's own counters must agree with what the reads showed. */
    if (st.reads_spanning != spanning || st.read_copy_bytes != memcpy_size ||
        st.bytes_stored != total_size || st.objs_inuse != count - refused) {
        fprintf(stderr, "zsmalloc_test: pool stats disagree (spanning %llu, copied %llu)\n",
                (unsigned long long)st.reads_spanning, (unsigned long long)st.read_copy_bytes);
        return 1;
    }

    for (i = 0; i < count; i++) {
        if (lens[i] == 0)
            continue;
        int err = zs_free(pool, &handles[i]);
        if (err)
            die("zs_free", err);
    }
    if (zs_get_total_pages(pool) != 0) {
        fprintf(stderr, "zsmalloc_test: %lu pages left after freeing everything\n",
                zs_get_total_pages(pool));
        return 1;
    }
    zs_destroy_pool(pool);
    free(handles);
    free(lens);
    free(buf);
    free(local_copy);
    return 0;
}
