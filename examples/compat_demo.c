// SPDX-License-Identifier: GPL-2.0-or-later OR MIT
/*
 * compat_demo: mainline-style zsmalloc code (unsigned long handles) compiled against
 * zsmalloc_compat.h with no other edits than the include. The functions below are written the
 * way zram and zswap call zsmalloc; like mm/zsmalloc.c, this file defines ZS_HANDLE_SIZE
 * itself (the compat header leaves it to ported code).
 */
#include <stdio.h>
#include <string.h>

#include "zsmalloc_compat.h"

#define PAGE_SIZE 4096
#define ZS_HANDLE_SIZE (sizeof(unsigned long))

struct entry {
    unsigned long handle;
    size_t length;
};

/* zswap_compress()-like: allocate, write, remember the handle. */
static int store_entry(struct zs_pool *pool, struct entry *e, const void *buf, size_t len)
{
    unsigned long handle = zs_malloc(pool, len, GFP_NOWAIT | __GFP_NORETRY | __GFP_HIGHMEM |
                                                     __GFP_MOVABLE, NUMA_NO_NODE);
    if (IS_ERR_VALUE(handle))
        return (int)(long)handle;
    zs_obj_write(pool, handle, (void *)buf, len);
    e->handle = handle;
    e->length = len;
    return 0;
}

static unsigned long spanning;

/* zswap_decompress()-like, 6.19+ form (with mem_len). */
static int load_entry(struct zs_pool *pool, struct entry *e, void *dst, void *local_copy)
{
    void *obj = zs_obj_read_begin(pool, e->handle, e->length, local_copy);
    if (!obj)
        return -1;
    if (obj == (unsigned char *)local_copy + ZS_HANDLE_SIZE)
        spanning++; /* copied out of two pages, the kernel's way */
    memcpy(dst, obj, e->length);
    zs_obj_read_end(pool, e->handle, e->length, obj);
    return 0;
}

/* The 6.16 form (no mem_len). */
static int load_entry_old(struct zs_pool *pool, struct entry *e, void *dst, void *local_copy)
{
    void *obj = zs_obj_read_begin(pool, e->handle, local_copy);
    if (!obj)
        return -1;
    memcpy(dst, obj, e->length);
    zs_obj_read_end(pool, e->handle, obj);
    return 0;
}

int main(void)
{
    static unsigned char buf[PAGE_SIZE], out[PAGE_SIZE], local_copy[PAGE_SIZE];
    static struct entry entries[512];
    struct zs_pool *pool = zs_create_pool("compat_demo");
    if (!pool) {
        fprintf(stderr, "compat_demo: %s\n", zs_last_error_message());
        return 1;
    }
    int bad = 0;
    for (unsigned i = 0; i < 512; i++) {
        size_t len = 1 + (i * 997) % PAGE_SIZE;
        memset(buf, (int)i, len);
        if (store_entry(pool, &entries[i], buf, len) != 0)
            bad++;
    }
    for (unsigned i = 0; i < 512; i++) {
        size_t len = entries[i].length;
        memset(out, 0, sizeof(out));
        int r = (i & 1) ? load_entry(pool, &entries[i], out, local_copy)
                        : load_entry_old(pool, &entries[i], out, local_copy);
        memset(buf, (int)i, len);
        if (r != 0 || memcmp(out, buf, len) != 0)
            bad++;
    }
    unsigned long pages = zs_get_total_pages(pool);
    unsigned long h = zs_malloc(pool, 0, GFP_KERNEL, NUMA_NO_NODE);
    if (!IS_ERR_VALUE(h))
        bad++; /* a zero-length object must be refused */
    for (unsigned i = 0; i < 512; i++)
        zs_free(pool, entries[i].handle);
    if (zs_get_total_pages(pool) != 0)
        bad++;
    printf("compat_demo: 512 objects in %lu pages, %lu spanning reads, %d errors\n", pages,
           spanning, bad);
    zs_destroy_pool(pool);
    return bad != 0;
}
