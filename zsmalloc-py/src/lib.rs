//! Python binding over zsmalloc-core (see issue: Python package).
