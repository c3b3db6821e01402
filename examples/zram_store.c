// SPDX-License-Identifier: GPL-2.0-or-later OR MIT
/*
 * zram_store: a zram-like page store on libzsmalloc.
 *
 *   zram_store FILE...
 *
 * The files are split into pages (the pool's configured page size; the last page of a file is
 * zero-padded). As zram does, same-filled pages are not stored (counted): a page that repeats one
 * 8-byte word, compared as zram's page_same_filled() does (first word against the last, then every
 * word; the lab's `run pages` uses the same rule). The rest are compressed
 * with lz4; a page whose compressed size reaches zs_huge_class_size() is stored raw (a "huge"
 * page). Every page is then read back, decompressed and verified, and a zram mm_stat line is
 * printed, followed by utilization and read figures.
 *
 * A length the pool's backend does not store (zblock refuses lengths from its last slot size up,
 * so the raw pages of incompressible data) is counted as refused and left out, as a zram write
 * that fails: the page stays where it was. The count is printed when it is not zero.
 *
 * The last line, "figures: ...", is what a replay of a zstrace trace of this run reproduces
 * (examples/replay, or `zsmalloc replay`).
 */
#include <errno.h>
#include <lz4.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zsmalloc.h"

enum { SLOT_EMPTY, SLOT_SAME, SLOT_COMPRESSED, SLOT_HUGE, SLOT_REFUSED };

/* zram's per-page slot: the handle lives inside it (struct zs_handle embedded, 8-aligned). */
struct slot {
    struct zs_handle handle;
    uint64_t same_value; /* for same-filled pages */
    uint32_t len;        /* stored length */
    uint32_t kind;
};

static void die(const char *what)
{
    fprintf(stderr, "zram_store: %s: %s\n", what, zs_last_error_message());
    exit(1);
}

static int same_filled(const unsigned char *page, size_t page_size, uint64_t *value)
{
    uint64_t first, last;
    memcpy(&first, page, sizeof(first));
    memcpy(&last, page + page_size - sizeof(last), sizeof(last));
    if (last != first)
        return 0;
    for (size_t off = sizeof(first); off < page_size; off += sizeof(first)) {
        uint64_t w;
        memcpy(&w, page + off, sizeof(w));
        if (w != first)
            return 0;
    }
    *value = first;
    return 1;
}

/* Reads all files into one zero-padded buffer of whole pages. */
static unsigned char *load(int nfiles, char **files, size_t page_size, size_t *npages)
{
    unsigned char *buf = NULL;
    size_t used = 0;
    for (int f = 0; f < nfiles; f++) {
        FILE *fp = fopen(files[f], "rb");
        if (!fp) {
            perror(files[f]);
            exit(1);
        }
        for (;;) {
            unsigned char *nb = realloc(buf, used + page_size);
            if (!nb) {
                fprintf(stderr, "zram_store: out of memory\n");
                exit(1);
            }
            buf = nb;
            size_t got = fread(buf + used, 1, page_size, fp);
            if (got == 0)
                break;
            memset(buf + used + got, 0, page_size - got);
            used += page_size;
            if (got < page_size)
                break;
        }
        fclose(fp);
    }
    *npages = used / page_size;
    return buf;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s FILE...\n", argv[0]);
        return 2;
    }
    struct zs_pool_config cfg;
    if (zs_pool_config_from_env(&cfg) != 0)
        die("configuration");
    const size_t page_size = cfg.page_size;
    struct zs_pool *pool = zs_create_pool("zram_store");
    if (!pool)
        die("zs_create_pool");
    const size_t huge_class_size = zs_huge_class_size(pool);

    size_t npages;
    unsigned char *data = load(argc - 1, argv + 1, page_size, &npages);
    /* The slot table is allocated once: handles must not move while they hold objects. */
    struct slot *slots = calloc(npages ? npages : 1, sizeof(*slots));
    int bound = LZ4_compressBound((int)page_size);
    char *comp = malloc((size_t)bound);
    unsigned char *out = malloc(page_size);
    unsigned char *local_copy = malloc(page_size);
    if (!slots || !comp || !out || !local_copy) {
        fprintf(stderr, "zram_store: out of memory\n");
        return 1;
    }

    uint64_t same_pages = 0, huge_pages = 0, compr_data_size = 0, refused = 0;
    for (size_t i = 0; i < npages; i++) {
        const unsigned char *page = data + i * page_size;
        struct slot *s = &slots[i];
        if (same_filled(page, page_size, &s->same_value)) {
            s->kind = SLOT_SAME;
            same_pages++;
            continue;
        }
        int clen = LZ4_compress_default((const char *)page, comp, (int)page_size, bound);
        const void *src = comp;
        if (clen <= 0 || (size_t)clen >= huge_class_size) {
            /* Incompressible: zram stores the page as is. */
            s->kind = SLOT_HUGE;
            s->len = (uint32_t)page_size;
            src = page;
            huge_pages++;
        } else {
            s->kind = SLOT_COMPRESSED;
            s->len = (uint32_t)clen;
        }
        int err = zs_store(pool, &s->handle, src, s->len, 0);
        if (err == -ENOSPC) {
            if (s->kind == SLOT_HUGE)
                huge_pages--;
            s->kind = SLOT_REFUSED;
            refused++;
            continue;
        }
        if (err != 0)
            die("zs_store");
        compr_data_size += s->len;
    }
    unsigned long pages_after_store = zs_get_total_pages(pool);

    /* Read every page back, decompress, verify. */
    size_t verified = 0;
    for (size_t i = 0; i < npages; i++) {
        const unsigned char *page = data + i * page_size;
        struct slot *s = &slots[i];
        if (s->kind == SLOT_REFUSED)
            continue;
        if (s->kind == SLOT_SAME) {
            for (size_t off = 0; off < page_size; off += sizeof(s->same_value))
                memcpy(out + off, &s->same_value, sizeof(s->same_value));
        } else {
            const char *src = zs_obj_read_begin(pool, &s->handle, s->len, local_copy);
            if (!src)
                die("zs_obj_read_begin");
            if (s->kind == SLOT_HUGE) {
                memcpy(out, src, page_size);
            } else if (LZ4_decompress_safe(src, (char *)out, (int)s->len, (int)page_size) !=
                       (int)page_size) {
                fprintf(stderr, "zram_store: page %zu does not decompress\n", i);
                return 1;
            }
            if (zs_obj_read_end(pool, &s->handle, s->len, (void *)src) != 0)
                die("zs_obj_read_end");
        }
        if (memcmp(out, page, page_size) != 0) {
            fprintf(stderr, "zram_store: page %zu differs after read back\n", i);
            return 1;
        }
        verified++;
    }
    zs_compact(pool);

    struct zs_pool_stats st;
    if (zs_pool_stats(pool, &st) != 0)
        die("zs_pool_stats");
    /* mm_stat: orig_data_size compr_data_size mem_used_total mem_limit mem_used_max same_pages
     * pages_compacted huge_pages huge_pages_since */
    printf("zram_store: %d file(s), %zu pages of %zu bytes: %llu same-filled, %llu huge, %llu "
           "compressed\n",
           argc - 1, npages, page_size, (unsigned long long)same_pages,
           (unsigned long long)huge_pages,
           (unsigned long long)(npages - same_pages - huge_pages - refused));
    if (refused)
        printf("zram_store: %llu pages refused by the pool (length it does not store): not "
               "stored, not verified\n",
               (unsigned long long)refused);
    printf("mm_stat: %8llu %8llu %8llu %8llu %8llu %8llu %8llu %8llu %8llu\n",
           (unsigned long long)npages * page_size, (unsigned long long)compr_data_size,
           (unsigned long long)st.pages_allocated * page_size,
           (unsigned long long)cfg.mem_limit_pages * page_size,
           (unsigned long long)st.pages_peak * page_size, (unsigned long long)same_pages,
           (unsigned long long)st.pages_compacted, (unsigned long long)huge_pages,
           (unsigned long long)huge_pages);
    unsigned long long permille =
        pages_after_store ? 1000ULL * st.bytes_stored / (pages_after_store * page_size) : 0;
    printf("zram_store: pool pages %lu, utilization %llu.%llu%%, compression ratio %.2f\n",
           pages_after_store, permille / 10, permille % 10,
           compr_data_size ? (double)(npages * page_size) / (double)compr_data_size : 0.0);
    printf("zram_store: verified %zu pages; reads %llu, spanning reads %llu, copied %llu bytes\n",
           verified, (unsigned long long)st.reads, (unsigned long long)st.reads_spanning,
           (unsigned long long)st.read_copy_bytes);
    for (size_t i = 0; i < npages; i++) {
        if (slots[i].kind != SLOT_SAME && slots[i].kind != SLOT_REFUSED &&
            zs_free(pool, &slots[i].handle) != 0)
            die("zs_free");
    }
    if (zs_pool_stats(pool, &st) != 0)
        die("zs_pool_stats");
    if (st.pages_allocated != 0 || st.objs_inuse != 0) {
        fprintf(stderr, "zram_store: pages left after freeing everything\n");
        return 1;
    }
    /* What a replay of this run's trace must reproduce (after its last operation). */
    printf("figures: stores %llu pages_peak %llu reads %llu reads_spanning %llu read_copy_bytes "
           "%llu writes_spanning %llu pages_compacted %llu\n",
           (unsigned long long)(npages - same_pages - refused), (unsigned long long)st.pages_peak,
           (unsigned long long)st.reads, (unsigned long long)st.reads_spanning,
           (unsigned long long)st.read_copy_bytes, (unsigned long long)st.writes_spanning,
           (unsigned long long)st.pages_compacted);
    zs_destroy_pool(pool);
    free(slots);
    free(comp);
    free(out);
    free(local_copy);
    free(data);
    return 0;
}
