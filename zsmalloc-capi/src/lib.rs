//! C ABI over zsmalloc-core (see issue: C ABI).
