//! Helpers of the `zsmalloc` command's tests: run the binary as a user runs it.

#![allow(dead_code)] // each test file uses some of them

use std::path::PathBuf;
use std::process::{Command, Output};

use serde_json::Value;

/// Runs the binary with `args` (the ZSMALLOC_* environment does not reach the lab, but a chain
/// size, a backend or a class table in the test's environment is removed all the same).
pub fn zsmalloc(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_zsmalloc"))
        .args(args)
        .env_remove("ZSMALLOC_CHAIN_SIZE")
        .env_remove("ZSMALLOC_BACKEND")
        .env_remove("ZSMALLOC_CLASS_TABLE")
        .output()
        .expect("run the zsmalloc binary")
}

/// Runs and expects success; returns stdout.
pub fn ok(args: &[&str]) -> String {
    let out = zsmalloc(args);
    assert!(
        out.status.success(),
        "zsmalloc {args:?} failed ({:?}): {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8 output")
}

pub fn json(args: &[&str]) -> Value {
    let text = ok(args);
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("bad JSON from {args:?}: {e}\n{text}"))
}

/// A fresh scratch path for this test process.
pub fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("zsmalloc-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

pub fn s(p: &std::path::Path) -> &str {
    p.to_str().unwrap()
}

/// Exits 2 with one line on stderr, `zsmalloc: ...`, and nothing on stdout; returns the line.
pub fn usage_error(args: &[&str]) -> String {
    let out = zsmalloc(args);
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert!(!err.contains("panicked"), "{args:?}: {err}");
    assert_eq!(err.lines().count(), 1, "{args:?}: one line, got: {err}");
    assert!(err.starts_with("zsmalloc: "), "{args:?}: {err}");
    assert!(out.stdout.is_empty(), "{args:?}: nothing on stdout");
    err
}

/// The texts of an SVG written by `--plot`, unescaped, in drawing order (plotters writes each on its own
/// `<text ...>text</text>` element).
pub fn svg_texts(svg: &str) -> Vec<String> {
    svg.split("<text")
        .skip(1)
        .filter_map(|t| {
            let body = &t[t.find('>')? + 1..];
            let text = body[..body.find("</text>")?].trim();
            let entities = [("&apos;", "'"), ("&quot;", "\""), ("&lt;", "<"), ("&gt;", ">")];
            let text = entities.iter().fold(text.to_string(), |t, (e, c)| t.replace(e, c));
            Some(text.replace("&amp;", "&"))
        })
        .collect()
}
