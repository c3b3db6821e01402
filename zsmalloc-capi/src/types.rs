//! Scalar types and constants of the C ABI.

/// `size_t` (lengths and sizes in the C ABI).
pub use libc::size_t;

/// The kernel's allocation flags type; accepted and ignored. The header declares it itself,
/// guarded so that kernel-compat code can bring its own.
pub type gfp_t = std::ffi::c_uint;

/// Version of the C ABI (`zs_version()` returns the library's). It grows by one whenever the
/// ABI grows: a function is added, or a struct gains fields at its end. A program built against
/// version V runs with any library of version V or later.
/// 2: the `_sized` entry points, which take the caller's `sizeof` of the struct they read or
/// write.
/// 3: the read modes `ZS_READ_MAP` and `ZS_READ_CONTIGUOUS`; `struct zs_pool_config` gains
/// `backing`, `struct zs_class_stats` the per-class read counters.
/// 4: the backends `ZS_BACKEND_ZBLOCK` and `ZS_BACKEND_MALLOC`; `struct zs_pool_config` gains
/// `backend` (after `reserved`, the padding of version 3's struct).
/// 5: explicit class tables: `struct zs_class_spec`; `struct zs_pool_config` gains
/// `class_table` and `class_count` (after `reserved2`, the padding of version 4's struct);
/// `ZSMALLOC_CLASS_TABLE`.
/// 6: objects of several pages: `struct zs_pool_config` gains `multi_page_size` (and
/// `reserved3`), `struct zs_class_stats` the class's `order`, `struct zs_pool_stats`
/// `bytes_moved`; `zs_huge_class_size_band()`; `ZSMALLOC_MULTI_PAGE_SIZE`.
/// 7: placement only: `struct zs_pool_config`'s `reserved3` becomes `placement_only` (0, a
/// version-6 caller's value, keeps every byte); `-EOPNOTSUPP` for reads of bytes of such a pool;
/// `ZSMALLOC_PLACEMENT_ONLY`.
pub const ZS_ABI_VERSION: u32 = 7;

/// Bytes of the in-object header; a spanning read returns `local_copy + ZS_HANDLE_SIZE`.
/// (The header defines it by hand, guarded, so that ported kernel code can define its own.)
pub const ZS_HANDLE_SIZE: u32 = 8;
const _: () = assert!(ZS_HANDLE_SIZE as usize == zsmalloc_core::HANDLE_SIZE);
