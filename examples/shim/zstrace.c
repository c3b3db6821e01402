// SPDX-License-Identifier: GPL-2.0-or-later OR MIT
/*
 * libzstrace.so: an LD_PRELOAD shim recording the zsmalloc operations of an unmodified program.
 *
 *   ZSTRACE_FILE=trace.txt LD_PRELOAD=build/examples/libzstrace.so ./program ...
 *
 * It interposes zs_store, zs_malloc, zs_obj_write, zs_free, zs_obj_read_begin,
 * zs_obj_read_sg_begin, zs_handle_move and zs_compact, calls the real function (dlsym(RTLD_NEXT))
 * and, when it succeeded, appends one line to ZSTRACE_FILE in the lab's trace format
 * (docs/LAB.md, "Trace format"):
 *
 *   store <id> <len>      read <id> <len>      free <id>          compact
 *   malloc <id> <len>     write <id> <len>     read_sg <id> <len> move <from> <to>
 *
 * <id> is the address of the struct zs_handle (0x-hexadecimal): it names an object for as long
 * as that handle holds it. Without ZSTRACE_FILE the shim only forwards. Lines of concurrent
 * threads are written whole, in the order the calls returned. One pool per traced program.
 * Replay with examples/replay (or `zsmalloc replay`) to get the same pages and spanning figures.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "zsmalloc.h"

static struct {
    int (*store)(struct zs_pool *, struct zs_handle *, const void *, size_t, gfp_t);
    int (*malloc_)(struct zs_pool *, struct zs_handle *, size_t, gfp_t);
    int (*write)(struct zs_pool *, struct zs_handle *, const void *, size_t);
    int (*free_)(struct zs_pool *, struct zs_handle *);
    void *(*read_begin)(struct zs_pool *, struct zs_handle *, size_t, void *);
    int (*read_sg_begin)(struct zs_pool *, struct zs_handle *, struct zs_sg *, size_t);
    int (*handle_move)(struct zs_pool *, struct zs_handle *, struct zs_handle *);
    unsigned long (*compact)(struct zs_pool *);
} real;

static FILE *trace;
static pthread_mutex_t trace_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void *must_resolve(const char *name)
{
    void *f = dlsym(RTLD_NEXT, name);
    if (!f) {
        fprintf(stderr, "libzstrace: cannot find the real %s: %s\n", name, dlerror());
        abort();
    }
    return f;
}

static void init(void)
{
    *(void **)&real.store = must_resolve("zs_store");
    *(void **)&real.malloc_ = must_resolve("zs_malloc");
    *(void **)&real.write = must_resolve("zs_obj_write");
    *(void **)&real.free_ = must_resolve("zs_free");
    *(void **)&real.read_begin = must_resolve("zs_obj_read_begin");
    *(void **)&real.read_sg_begin = must_resolve("zs_obj_read_sg_begin");
    *(void **)&real.handle_move = must_resolve("zs_handle_move");
    *(void **)&real.compact = must_resolve("zs_compact");
    const char *path = getenv("ZSTRACE_FILE");
    if (path && *path) {
        trace = fopen(path, "w");
        if (!trace) {
            perror(path);
            abort();
        }
        setvbuf(trace, NULL, _IOFBF, 1 << 16);
        fprintf(trace, "# zsmalloc trace v1: store <id> <len> | read <id> <len> | free <id> | "
                       "compact\n# recorded by libzstrace\n");
    }
}

__attribute__((destructor)) static void finish(void)
{
    pthread_mutex_lock(&trace_lock);
    if (trace) {
        fclose(trace);
        trace = NULL;
    }
    pthread_mutex_unlock(&trace_lock);
}

#define RESOLVE() pthread_once(&once, init)

static void record(const char *op, const void *id, size_t len, int with_len)
{
    pthread_mutex_lock(&trace_lock);
    if (trace) {
        if (with_len)
            fprintf(trace, "%s 0x%" PRIxPTR " %zu\n", op, (uintptr_t)id, len);
        else
            fprintf(trace, "%s 0x%" PRIxPTR "\n", op, (uintptr_t)id);
    }
    pthread_mutex_unlock(&trace_lock);
}

int zs_store(struct zs_pool *pool, struct zs_handle *handle, const void *src, size_t len,
             gfp_t gfp)
{
    RESOLVE();
    int ret = real.store(pool, handle, src, len, gfp);
    if (ret == 0)
        record("store", handle, len, 1);
    return ret;
}

int zs_malloc(struct zs_pool *pool, struct zs_handle *handle, size_t size, gfp_t gfp)
{
    RESOLVE();
    int ret = real.malloc_(pool, handle, size, gfp);
    if (ret == 0)
        record("malloc", handle, size, 1);
    return ret;
}

int zs_obj_write(struct zs_pool *pool, struct zs_handle *handle, const void *src, size_t len)
{
    RESOLVE();
    int ret = real.write(pool, handle, src, len);
    if (ret == 0)
        record("write", handle, len, 1);
    return ret;
}

int zs_free(struct zs_pool *pool, struct zs_handle *handle)
{
    RESOLVE();
    /* Freeing an empty handle is a no-op: not worth a line. */
    uintptr_t word = handle && ((uintptr_t)handle % 8) == 0
                         ? __atomic_load_n(&handle->obj, __ATOMIC_RELAXED)
                         : 0;
    int ret = real.free_(pool, handle);
    if (ret == 0 && word != 0)
        record("free", handle, 0, 0);
    return ret;
}

void *zs_obj_read_begin(struct zs_pool *pool, struct zs_handle *handle, size_t mem_len,
                        void *local_copy)
{
    RESOLVE();
    void *ret = real.read_begin(pool, handle, mem_len, local_copy);
    if (ret)
        record("read", handle, mem_len, 1);
    return ret;
}

int zs_obj_read_sg_begin(struct zs_pool *pool, struct zs_handle *handle, struct zs_sg sg[2],
                         size_t mem_len)
{
    RESOLVE();
    int ret = real.read_sg_begin(pool, handle, sg, mem_len);
    if (ret > 0)
        record("read_sg", handle, mem_len, 1);
    return ret;
}

int zs_handle_move(struct zs_pool *pool, struct zs_handle *from, struct zs_handle *to)
{
    RESOLVE();
    int ret = real.handle_move(pool, from, to);
    if (ret == 0 && from != to) {
        pthread_mutex_lock(&trace_lock);
        if (trace)
            fprintf(trace, "move 0x%" PRIxPTR " 0x%" PRIxPTR "\n", (uintptr_t)from, (uintptr_t)to);
        pthread_mutex_unlock(&trace_lock);
    }
    return ret;
}

unsigned long zs_compact(struct zs_pool *pool)
{
    RESOLVE();
    unsigned long ret = real.compact(pool);
    if (pool) {
        pthread_mutex_lock(&trace_lock);
        if (trace)
            fputs("compact\n", trace);
        pthread_mutex_unlock(&trace_lock);
    }
    return ret;
}
