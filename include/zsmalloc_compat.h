/* SPDX-License-Identifier: GPL-2.0-or-later OR MIT */
/*
 * zsmalloc_compat.h - mainline's older zsmalloc API over libzsmalloc (hand-written).
 *
 * Kernel code written against `unsigned long` handles compiles nearly unchanged:
 *
 *     unsigned long handle = zs_malloc(pool, len, GFP_NOIO | __GFP_NOWARN, NUMA_NO_NODE);
 *     if (IS_ERR_VALUE(handle))
 *             return PTR_ERR((void *)handle);
 *     zs_obj_write(pool, handle, buf, len);
 *     src = zs_obj_read_begin(pool, handle, len, local_copy);     (or the 3-argument form)
 *     zs_obj_read_end(pool, handle, len, src);                    (or the 3-argument form)
 *     zs_free(pool, handle);
 *
 * Handles come from a slot table owned by the pool (the kernel's handle cache) and are released
 * with the pool. Every handle passed back is looked up in that table first, so garbage values,
 * handles of another pool and double frees are refused (zs_last_error() == -EINVAL) rather than
 * dereferenced. zs_malloc returns (unsigned long)-errno on failure, as the kernel does.
 *
 * After this header, zs_malloc, zs_free, zs_obj_write, zs_obj_read_begin and zs_obj_read_end
 * are macros for the compat entry points. The new API stays reachable by parenthesising the
 * name, e.g. `(zs_free)(pool, &h)`, and zs_compat_handle() gives the struct zs_handle * of a
 * compat handle (e.g. for zs_obj_read_sg_begin). All other zs_* functions are unchanged.
 * Not provided: zs_map_object()/zs_unmap_object() (removed from mainline in 6.16).
 */
#ifndef ZSMALLOC_COMPAT_H
#define ZSMALLOC_COMPAT_H

#include <stddef.h>

#include "zsmalloc.h"

/*
 * The kernel defines ZS_HANDLE_SIZE in mm/zsmalloc.c, not in <linux/zsmalloc.h>: ported code
 * defines its own, so this header takes back the one zsmalloc.h gave.
 */
#ifdef ZS_HANDLE_SIZE_FROM_ZSMALLOC_H
#undef ZS_HANDLE_SIZE
#undef ZS_HANDLE_SIZE_FROM_ZSMALLOC_H
#endif

/* Allocation flags: accepted and ignored (values as in recent kernels, for printing only). */
#ifndef __GFP_HIGHMEM
#define __GFP_HIGHMEM 0x02u
#endif
#ifndef __GFP_MOVABLE
#define __GFP_MOVABLE 0x08u
#endif
#ifndef __GFP_HIGH
#define __GFP_HIGH 0x20u
#endif
#ifndef __GFP_IO
#define __GFP_IO 0x40u
#endif
#ifndef __GFP_FS
#define __GFP_FS 0x80u
#endif
#ifndef __GFP_DIRECT_RECLAIM
#define __GFP_DIRECT_RECLAIM 0x400u
#endif
#ifndef __GFP_KSWAPD_RECLAIM
#define __GFP_KSWAPD_RECLAIM 0x800u
#endif
#ifndef __GFP_RECLAIM
#define __GFP_RECLAIM (__GFP_DIRECT_RECLAIM | __GFP_KSWAPD_RECLAIM)
#endif
#ifndef __GFP_NOWARN
#define __GFP_NOWARN 0x2000u
#endif
#ifndef __GFP_NORETRY
#define __GFP_NORETRY 0x10000u
#endif
#ifndef __GFP_NOMEMALLOC
#define __GFP_NOMEMALLOC 0x80000u
#endif
#ifndef GFP_ATOMIC
#define GFP_ATOMIC (__GFP_HIGH | __GFP_KSWAPD_RECLAIM)
#endif
#ifndef GFP_NOWAIT
#define GFP_NOWAIT (__GFP_KSWAPD_RECLAIM)
#endif
#ifndef GFP_NOIO
#define GFP_NOIO (__GFP_RECLAIM)
#endif
#ifndef GFP_NOFS
#define GFP_NOFS (__GFP_RECLAIM | __GFP_IO)
#endif
#ifndef GFP_KERNEL
#define GFP_KERNEL (__GFP_RECLAIM | __GFP_IO | __GFP_FS)
#endif
#ifndef NUMA_NO_NODE
#define NUMA_NO_NODE (-1)
#endif

/* Error values in handles, as <linux/err.h>. */
#ifndef MAX_ERRNO
#define MAX_ERRNO 4095
#endif
#ifndef IS_ERR_VALUE
#define IS_ERR_VALUE(x) ((unsigned long)(x) >= (unsigned long)-MAX_ERRNO)
#endif

/* mem_len meaning "the stored length" (what the 3-argument read forms pass). */
#define ZS_COMPAT_LEN_UNKNOWN ((size_t)-1)

#define zs_malloc(pool, size, gfp, nid) zs_compat_malloc((pool), (size), (gfp), (nid))
#define zs_free(pool, handle) zs_compat_free((pool), (handle))
#define zs_obj_write(pool, handle, handle_mem, mem_len)                                            \
    zs_compat_obj_write((pool), (handle), (handle_mem), (mem_len))

/* zs_obj_read_begin/_end take 3 arguments (6.16) or 4 (with mem_len, 6.19+): pick by count. */
#define ZS_COMPAT_NARG_(_1, _2, _3, _4, N, ...) N
#define ZS_COMPAT_CAT2_(a, b) a##b
#define ZS_COMPAT_CAT_(a, b) ZS_COMPAT_CAT2_(a, b)
#define ZS_COMPAT_PICK_(name, ...) ZS_COMPAT_CAT_(name, ZS_COMPAT_NARG_(__VA_ARGS__, 4, 3, 2, 1, 0))

#define ZS_COMPAT_READ_BEGIN_3(pool, handle, local_copy)                                          \
    zs_compat_obj_read_begin((pool), (handle), ZS_COMPAT_LEN_UNKNOWN, (local_copy))
#define ZS_COMPAT_READ_BEGIN_4(pool, handle, mem_len, local_copy)                                 \
    zs_compat_obj_read_begin((pool), (handle), (mem_len), (local_copy))
#define zs_obj_read_begin(...) ZS_COMPAT_PICK_(ZS_COMPAT_READ_BEGIN_, __VA_ARGS__)(__VA_ARGS__)

#define ZS_COMPAT_READ_END_3(pool, handle, handle_mem)                                            \
    zs_compat_obj_read_end((pool), (handle), ZS_COMPAT_LEN_UNKNOWN, (handle_mem))
#define ZS_COMPAT_READ_END_4(pool, handle, mem_len, handle_mem)                                   \
    zs_compat_obj_read_end((pool), (handle), (mem_len), (handle_mem))
#define zs_obj_read_end(...) ZS_COMPAT_PICK_(ZS_COMPAT_READ_END_, __VA_ARGS__)(__VA_ARGS__)

#endif /* ZSMALLOC_COMPAT_H */
