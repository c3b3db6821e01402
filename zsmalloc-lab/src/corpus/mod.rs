//! A corpus of real programs' traces: each trace is a program's pool operations recorded under
//! `zsmalloc tier --record`, and the directory's [`manifest`] says how to make it again;
//! [`study`] answers the corpus questions of docs/STUDY.md §8 on every trace.

pub mod manifest;
pub mod study;
