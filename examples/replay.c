// SPDX-License-Identifier: GPL-2.0-or-later OR MIT
/*
 * replay: replays a zsmalloc trace (the lab's format, as libzstrace.so records it) on a pool
 * configured by the ZSMALLOC_* environment, and prints the figures a live run prints.
 *
 *   replay TRACE
 *
 * Lines: store|malloc|write|read|read_sg <id> <len>, free <id>, move <from> <to>, compact;
 * '#' comments and blank lines are ignored. Ids are decimal or 0x-hexadecimal. Stored bytes are
 * a pattern of the id, verified on every read. Any refused operation is reported and makes the
 * exit status 1. (The lab's `zsmalloc replay` reads the same format.)
 */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zsmalloc.h"

/* A replayed handle: handle words never move, so slots live in fixed chunks. */
struct slot {
    struct zs_handle handle;
    uint64_t id;
    size_t len;
    uint64_t seed; /* id whose pattern the object holds */
    int written;   /* 0 after malloc until write */
};

#define CHUNK 4096
static struct slot **chunks;
static size_t nslots, nchunks;

/* Open-addressing map id -> slot number + 1 (0 = free). */
static uint32_t *table;
static size_t table_size;

static uint64_t hash(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return x;
}

static struct slot *slot_at(size_t n)
{
    return &chunks[n / CHUNK][n % CHUNK];
}

static void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n, size);
    if (!p) {
        fprintf(stderr, "replay: out of memory\n");
        exit(1);
    }
    return p;
}

static void grow_table(void)
{
    size_t old_size = table_size;
    uint32_t *old = table;
    table_size = table_size ? table_size * 2 : 1024;
    table = xcalloc(table_size, sizeof(*table));
    for (size_t i = 0; i < old_size; i++) {
        if (!old[i])
            continue;
        size_t j = hash(slot_at(old[i] - 1)->id) & (table_size - 1);
        while (table[j])
            j = (j + 1) & (table_size - 1);
        table[j] = old[i];
    }
    free(old);
}

/* The slot of `id`, created (empty) if new. */
static struct slot *lookup(uint64_t id)
{
    if (2 * (nslots + 1) > table_size)
        grow_table();
    size_t j = hash(id) & (table_size - 1);
    while (table[j]) {
        struct slot *s = slot_at(table[j] - 1);
        if (s->id == id)
            return s;
        j = (j + 1) & (table_size - 1);
    }
    if (nslots % CHUNK == 0) {
        chunks = realloc(chunks, (nchunks + 1) * sizeof(*chunks));
        if (!chunks) {
            fprintf(stderr, "replay: out of memory\n");
            exit(1);
        }
        chunks[nchunks++] = xcalloc(CHUNK, sizeof(struct slot));
    }
    struct slot *s = slot_at(nslots);
    s->id = id;
    table[j] = (uint32_t)++nslots;
    return s;
}

static unsigned char pattern(uint64_t id, size_t j)
{
    return (unsigned char)(id * 2654435761u + j * 13);
}

static int parse_u64(const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 0);
    if (errno || end == s || *end)
        return -1;
    *out = v;
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s TRACE\n", argv[0]);
        return 2;
    }
    FILE *in = fopen(argv[1], "r");
    if (!in) {
        perror(argv[1]);
        return 1;
    }
    struct zs_pool_config cfg;
    if (zs_pool_config_from_env(&cfg) != 0) {
        fprintf(stderr, "replay: %s\n", zs_last_error_message());
        return 1;
    }
    struct zs_pool *pool = zs_create_pool("replay");
    if (!pool)
        return 1;
    const size_t page = cfg.page_size;
    unsigned char *buf = xcalloc(page, 1), *local_copy = xcalloc(page, 1);

    char line[512];
    unsigned long long lineno = 0, ops = 0, stores = 0, errors = 0;
    while (fgets(line, sizeof(line), in)) {
        lineno++;
        char op[16], a[64], b[64];
        int n = sscanf(line, "%15s %63s %63s", op, a, b);
        if (n <= 0 || op[0] == '#')
            continue;
        uint64_t id = 0, arg = 0;
        int bad = (n >= 2 && parse_u64(a, &id)) || (n == 3 && parse_u64(b, &arg));
        int with_len = !strcmp(op, "store") || !strcmp(op, "malloc") || !strcmp(op, "write") ||
                       !strcmp(op, "read") || !strcmp(op, "read_sg") || !strcmp(op, "move");
        int want = with_len ? 3 : !strcmp(op, "free") ? 2 : !strcmp(op, "compact") ? 1 : -1;
        if (bad || n != want || (with_len && strcmp(op, "move") && (arg == 0 || arg > page))) {
            fprintf(stderr, "replay: %s:%llu: bad line: %s", argv[1], lineno, line);
            return 1;
        }
        ops++;
        int ret = 0;
        if (!strcmp(op, "compact")) {
            zs_compact(pool);
            continue;
        }
        struct slot *s = lookup(id);
        size_t len = (size_t)arg;
        if (!strcmp(op, "store") || !strcmp(op, "write")) {
            for (size_t j = 0; j < len; j++)
                buf[j] = pattern(id, j);
            ret = op[0] == 's' ? zs_store(pool, &s->handle, buf, len, 0)
                               : zs_obj_write(pool, &s->handle, buf, len);
            if (ret == 0) {
                s->len = len;
                s->seed = id;
                s->written = 1;
                stores += op[0] == 's';
            }
        } else if (!strcmp(op, "malloc")) {
            ret = zs_malloc(pool, &s->handle, len, 0);
            if (ret == 0) {
                s->len = len;
                s->written = 0;
            }
        } else if (!strcmp(op, "read")) {
            const unsigned char *p = zs_obj_read_begin(pool, &s->handle, len, local_copy);
            if (!p) {
                ret = zs_last_error();
            } else {
                for (size_t j = 0; s->written && j < len; j++) {
                    if (p[j] != pattern(s->seed, j)) {
                        fprintf(stderr, "replay: %s:%llu: object %s differs\n", argv[1], lineno,
                                a);
                        errors++;
                        break;
                    }
                }
                ret = zs_obj_read_end(pool, &s->handle, len, (void *)p);
            }
        } else if (!strcmp(op, "read_sg")) {
            struct zs_sg sg[2];
            ret = zs_obj_read_sg_begin(pool, &s->handle, sg, len);
            if (ret > 0)
                ret = zs_obj_read_sg_end(pool, &s->handle);
        } else if (!strcmp(op, "free")) {
            ret = zs_free(pool, &s->handle);
        } else if (!strcmp(op, "move")) {
            struct slot *to = lookup(arg);
            ret = zs_handle_move(pool, &s->handle, &to->handle);
            if (ret == 0) {
                to->len = s->len;
                to->seed = s->seed;
                to->written = s->written;
            }
        }
        if (ret < 0) {
            errors++;
            if (errors <= 10)
                fprintf(stderr, "replay: %s:%llu: %s refused: %s\n", argv[1], lineno, op,
                        zs_last_error_message());
        }
    }
    fclose(in);

    struct zs_pool_stats st;
    zs_pool_stats(pool, &st);
    printf("replay: %llu operations, %llu refused; pages now %llu, objects now %llu\n", ops,
           errors, (unsigned long long)st.pages_allocated, (unsigned long long)st.objs_inuse);
    printf("figures: stores %llu pages_peak %llu reads %llu reads_spanning %llu read_copy_bytes "
           "%llu writes_spanning %llu pages_compacted %llu\n",
           stores, (unsigned long long)st.pages_peak, (unsigned long long)st.reads,
           (unsigned long long)st.reads_spanning, (unsigned long long)st.read_copy_bytes,
           (unsigned long long)st.writes_spanning, (unsigned long long)st.pages_compacted);

    for (size_t i = 0; i < nslots; i++)
        zs_free(pool, &slot_at(i)->handle);
    zs_destroy_pool(pool);
    for (size_t c = 0; c < nchunks; c++)
        free(chunks[c]);
    free(chunks);
    free(table);
    free(buf);
    free(local_copy);
    return errors != 0;
}
