//! The programs a corpus is recorded from: a JSON array, one object per program (`name`,
//! `argv`, and optionally `what`, `input` and `needs`). The default list is
//! `default_programs.json`, compiled in; `--programs FILE` gives a user's own.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use zsmalloc_core::text_input::escape;

use crate::error::{LabError, LabResult};

/// The default list: interpreters, compilers, compressors, a database, version control, text
/// tools and two runtimes, with inputs small enough that the whole list records in minutes.
pub const DEFAULT: &str = include_str!("default_programs.json");

/// One program of the list.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Program {
    /// Its short name in the corpus: letters, digits, `.`, `_` and `-` (it names the traces).
    pub name: String,
    /// What it exercises, for people.
    #[serde(default)]
    pub what: String,
    /// A shell command (`sh -c`) that makes its input in the run's fresh directory, before each
    /// run and untiered; `zsmalloc` in it is the recording binary. Empty: none.
    #[serde(default)]
    pub input: String,
    /// The command run in that directory, and its arguments.
    pub argv: Vec<String>,
    /// Other commands the input needs (the program itself is `argv[0]`).
    #[serde(default)]
    pub needs: Vec<String>,
}

/// Parses a list; `origin` names it in messages.
pub fn parse(text: &str, origin: &str) -> LabResult<Vec<Program>> {
    let programs: Vec<Program> = serde_json::from_str(text).map_err(|e| {
        LabError::usage(format!("{origin}: not a program list ({e}); see docs/CORPUS.md"))
    })?;
    if programs.is_empty() {
        return Err(LabError::usage(format!("{origin}: the list names no program")));
    }
    for (i, p) in programs.iter().enumerate() {
        let ok = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-');
        if p.name.is_empty() || p.name.starts_with('.') || !p.name.chars().all(ok) {
            return Err(LabError::usage(format!(
                "{origin}: program {}: the name {:?} is not letters, digits, '.', '_' and '-' \
                 (not starting with '.')",
                i + 1,
                escape(&p.name)
            )));
        }
        if p.argv.first().is_none_or(|a| a.is_empty()) {
            return Err(LabError::usage(format!("{origin}: {}: argv names no command", p.name)));
        }
        if programs[..i].iter().any(|q| q.name == p.name) {
            return Err(LabError::usage(format!("{origin}: {} is named twice", p.name)));
        }
    }
    Ok(programs)
}

/// The list in `path`, or the default one.
pub fn load(path: Option<&Path>) -> LabResult<Vec<Program>> {
    match path {
        None => parse(DEFAULT, "the default program list"),
        Some(p) => {
            let text = std::fs::read_to_string(p).map_err(|e| LabError::io("read", p, &e))?;
            parse(&text, &escape(&p.display().to_string()))
        }
    }
}

/// `names` (a comma list) picked out of `programs`, in the list's order; a name the list does
/// not have is refused.
pub fn only(programs: Vec<Program>, names: &[String]) -> LabResult<Vec<Program>> {
    if let Some(n) = names.iter().find(|n| !programs.iter().any(|p| &&p.name == n)) {
        let all: Vec<&str> = programs.iter().map(|p| p.name.as_str()).collect();
        return Err(LabError::usage(format!(
            "--only: the list has no program {:?} (it has {})",
            escape(n),
            all.join(", ")
        )));
    }
    Ok(programs.into_iter().filter(|p| names.is_empty() || names.contains(&p.name)).collect())
}

impl Program {
    /// The first command it needs that this machine lacks (not on `PATH`, or an absolute path
    /// that is not there), if any.
    pub fn missing(&self) -> Option<&str> {
        let mut needed = self.argv.iter().take(1).chain(&self.needs);
        needed.find(|c| find_command(c).is_none()).map(String::as_str)
    }
}

/// `command` as the shell would find it: a path with a `/` as it is, else the first
/// executable of that name on `PATH`.
pub fn find_command(command: &str) -> Option<PathBuf> {
    let executable = |p: &Path| {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if command.contains('/') {
        // A relative path is the run directory's, which the input makes.
        let p = PathBuf::from(command);
        return (p.is_relative() || executable(&p)).then_some(p);
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|d| d.join(command)).find(|p| executable(p))
}
