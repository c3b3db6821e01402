// SPDX-License-Identifier: GPL-2.0-or-later OR MIT
/*
 * zsmalloc_test_kernel: the kernel's zsmalloc_test module pattern written as kernel code, on
 * zsmalloc_compat.h: `unsigned long` handles from zs_malloc(pool, size, gfp, nid), zs_obj_write,
 * the 3-argument zs_obj_read_begin/_end of 6.16, pr_info lines, and its own ZS_HANDLE_SIZE as in
 * mm/zsmalloc.c. It must print what examples/zsmalloc_test (the struct zs_handle API) prints.
 *
 *   zsmalloc_test_kernel [LO HI STEP N]        (default: 32 4080 16 1337)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zsmalloc_compat.h"

#define ZS_HANDLE_SIZE (sizeof(unsigned long))
#define pr_info(...) printf(__VA_ARGS__)
#define pr_err(...) fprintf(stderr, __VA_ARGS__)

static unsigned char pattern(size_t i, size_t j)
{
    return (unsigned char)(i * 31 + j);
}

int main(int argc, char **argv)
{
    size_t lo = 32, hi = 4080, step = 16, n = 1337;
    if (argc == 5) {
        lo = strtoul(argv[1], NULL, 0);
        hi = strtoul(argv[2], NULL, 0);
        step = strtoul(argv[3], NULL, 0);
        n = strtoul(argv[4], NULL, 0);
    }
    if (lo == 0 || step == 0 || hi < lo)
        return 2;

    struct zs_pool_config cfg;
    struct zs_pool *pool = zs_create_pool("zsmalloc_test");
    if (!pool || zs_pool_config_from_env(&cfg) != 0) {
        pr_err("zsmalloc_test: no pool: %s\n", zs_last_error_message());
        return 1;
    }
    const size_t page = cfg.page_size;
    size_t count = ((hi - lo) / step + 1) * n;
    unsigned long *handles = calloc(count, sizeof(*handles));
    size_t *lens = calloc(count, sizeof(*lens));
    unsigned char *buf = malloc(page), *local_copy = malloc(page);
    if (!handles || !lens || !buf || !local_copy)
        return 1;

    unsigned long long total_size = 0;
    size_t i = 0;
    for (size_t size = lo; size <= hi; size += step) {
        for (size_t k = 0; k < n; k++, i++) {
            unsigned long handle = zs_malloc(pool, size, GFP_KERNEL, NUMA_NO_NODE);
            if (IS_ERR_VALUE(handle)) {
                pr_err("zsmalloc_test: zs_malloc: %s\n", zs_last_error_message());
                return 1;
            }
            for (size_t j = 0; j < size; j++)
                buf[j] = pattern(i, j);
            zs_obj_write(pool, handle, buf, size);
            handles[i] = handle;
            lens[i] = size;
            total_size += size;
        }
    }
    unsigned long pages = zs_get_total_pages(pool);
    unsigned long long permille = 1000ULL * total_size / ((unsigned long long)pages * page);
    pr_info("zsmalloc_test: num write objects: %zu\n", count);
    pr_info("zsmalloc_test: pool pages used %lu, total allocated size %llu\n", pages, total_size);
    pr_info("zsmalloc_test: pool memory utilization: %llu.%llu\n", permille / 10, permille % 10);

    unsigned long long spanning = 0, memcpy_size = 0;
    for (i = 0; i < count; i++) {
        unsigned char *obj = zs_obj_read_begin(pool, handles[i], local_copy);
        if (!obj) {
            pr_err("zsmalloc_test: zs_obj_read_begin: %s\n", zs_last_error_message());
            return 1;
        }
        if (obj == local_copy + ZS_HANDLE_SIZE) {
            spanning++;
            memcpy_size += lens[i];
        }
        for (size_t j = 0; j < lens[i]; j++)
            if (obj[j] != pattern(i, j))
                return 1;
        zs_obj_read_end(pool, handles[i], obj);
    }
    pr_info("zsmalloc_test: num read objects: %zu\n", count);
    pr_info("zsmalloc_test: spanning objects: %llu, total memcpy size: %llu\n", spanning,
            memcpy_size);

    for (i = 0; i < count; i++)
        zs_free(pool, handles[i]);
    int left = zs_get_total_pages(pool) != 0;
    zs_destroy_pool(pool);
    free(handles);
    free(lens);
    free(buf);
    free(local_copy);
    return left;
}
