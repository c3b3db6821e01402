/*
 * The C side of bench/speed.py: the operations the Python calls are compared with, on the same
 * objects, through the C ABI of the extension module Python has loaded (the same allocator
 * instance and build). speed.py compiles this file into a small shared library and hands it the
 * entry points it found with ctypes, so no ctypes call is inside a timed loop.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "zsmalloc.h"

/* The entry points, as ctypes found them in zsmalloc.library_path(). */
struct speed_api {
    __typeof__(zs_create_pool) *create_pool;
    __typeof__(zs_destroy_pool) *destroy_pool;
    __typeof__(zs_store) *store;
    __typeof__(zs_obj_read_begin) *read_begin;
    __typeof__(zs_obj_read_end) *read_end;
    __typeof__(zs_free) *free;
};

/* CPU time of the calling thread (user + system, page faults included), in nanoseconds. */
static long long thread_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int read_one(const struct speed_api *api, struct zs_pool *pool, struct zs_handle *h,
                    size_t len, void *local, unsigned char *dst)
{
    void *p = api->read_begin(pool, h, len, local);
    if (!p)
        return -EIO;
    memcpy(dst, p, len);
    return api->read_end(pool, h, len, p);
}

/*
 * Times `op` once on a fresh pool over the `n` objects `data` cut into `lengths`, and stores
 * thread-CPU nanoseconds per object in `*ns`. Returns 0 or a negative errno.
 *
 *   store       zs_store of each object, from slices of one buffer
 *   store_vecs  as store, from objects in separate heap buffers (as a list of bytes is)
 *   read        zs_obj_read_begin + copy + zs_obj_read_end into a new buffer each, all kept
 *   read_into   the same, back to back into one buffer
 *   free        zs_free of each object
 */
int speed_c(const struct speed_api *api, const unsigned char *data, const size_t *lengths,
            size_t n, const char *op, double *ns)
{
    int store_vecs = !strcmp(op, "store_vecs");
    int timed_store = !strcmp(op, "store") || store_vecs;
    int timed_read = !strcmp(op, "read"), timed_into = !strcmp(op, "read_into");
    int timed_free = !strcmp(op, "free");
    if (!(timed_store || timed_read || timed_into || timed_free))
        return -EINVAL;

    size_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += lengths[i];
    struct zs_handle *hs = calloc(n ? n : 1, sizeof(*hs));
    unsigned char **bufs = calloc(n ? n : 1, sizeof(*bufs));
    unsigned char *out = malloc(total ? total : 1);
    unsigned char local[4096 + ZS_HANDLE_SIZE];
    struct zs_pool *pool = api->create_pool("speed");
    int rc = (hs && bufs && out && pool) ? 0 : -ENOMEM;
    long long t = 0, elapsed = 0;

    if (!rc)
        memset(out, 1, total); /* touched before timing, as Python's reused buffer is */
    if (!rc && store_vecs) {
        const unsigned char *src = data;
        for (size_t i = 0; i < n && !rc; src += lengths[i], i++) {
            bufs[i] = malloc(lengths[i]);
            if (!bufs[i])
                rc = -ENOMEM;
            else
                memcpy(bufs[i], src, lengths[i]);
        }
    }

    if (timed_store)
        t = thread_ns();
    const unsigned char *src = data;
    for (size_t i = 0; i < n && !rc; src += lengths[i], i++)
        rc = api->store(pool, &hs[i], store_vecs ? bufs[i] : src, lengths[i], 0);
    if (timed_store)
        elapsed = thread_ns() - t;
    if (store_vecs)
        for (size_t i = 0; i < n; i++) {
            free(bufs[i]);
            bufs[i] = NULL;
        }

    if (!rc && timed_read) {
        t = thread_ns();
        for (size_t i = 0; i < n && !rc; i++) {
            bufs[i] = malloc(lengths[i]);
            rc = bufs[i] ? read_one(api, pool, &hs[i], lengths[i], local, bufs[i]) : -ENOMEM;
        }
        elapsed = thread_ns() - t;
    }
    if (!rc && timed_into) {
        t = thread_ns();
        unsigned char *dst = out;
        for (size_t i = 0; i < n && !rc; dst += lengths[i], i++)
            rc = read_one(api, pool, &hs[i], lengths[i], local, dst);
        elapsed = thread_ns() - t;
    }

    if (timed_free)
        t = thread_ns();
    for (size_t i = 0; hs && pool && i < n; i++) {
        int r = api->free(pool, &hs[i]);
        if (!rc)
            rc = r;
    }
    if (timed_free)
        elapsed = thread_ns() - t;

    for (size_t i = 0; bufs && i < n; i++)
        free(bufs[i]);
    if (pool)
        api->destroy_pool(pool);
    free(out);
    free(bufs);
    free(hs);
    *ns = n ? (double)elapsed / (double)n : 0.0;
    return rc;
}
