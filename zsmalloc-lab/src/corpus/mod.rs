//! A corpus of real programs' traces: each trace is a program's pool operations recorded under
//! `zsmalloc tier --record`, and the directory's [`manifest`] says how to make it again.
//!
//! - [`program_list`]: the programs (the default list, or a user's file);
//! - [`inputs`]: their inputs, generated deterministically (`zsmalloc corpus input`);
//! - [`recorder`]: the recording (`zsmalloc corpus record`), with [`settings`] (budgets, folio
//!   and page sizes), [`bounded`] (a run to its end or its deadline), [`trace_file`] (the
//!   binary trace and its checksum), [`machine`] (the manifest's machine) and [`record_report`]
//!   (the traces recorded, as table, JSON or CSV);
//! - [`study`]: the corpus questions of docs/STUDY.md §8 on every trace.

pub mod bounded;
pub mod inputs;
pub mod machine;
pub mod manifest;
pub mod program_list;
pub mod record_report;
pub mod recorder;
pub mod settings;
pub mod study;
pub mod trace_file;
