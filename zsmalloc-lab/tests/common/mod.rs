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

/// This test process's scratch directory (removed when the process exits).
pub fn scratch_dir() -> PathBuf {
    std::env::temp_dir().join(format!("zsmalloc-cli-{}", std::process::id()))
}

/// A fresh scratch path for this test process. Its directory goes when the process exits,
/// whether the tests passed or not (the harness exits through `exit`, which runs `atexit`).
pub fn scratch(name: &str) -> PathBuf {
    static REMOVE_AT_EXIT: std::sync::Once = std::sync::Once::new();
    extern "C" fn remove_scratch() {
        let _ = std::fs::remove_dir_all(scratch_dir());
    }
    REMOVE_AT_EXIT.call_once(|| {
        // SAFETY: registers a function that takes nothing and unwinds nothing (errors ignored).
        unsafe { libc::atexit(remove_scratch) };
    });
    let dir = scratch_dir();
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

/// What a child cost: its exit code (-1: a signal), output, peak resident memory and CPU time
/// (user and system), from the kernel's accounting of that one process.
pub struct Measured {
    pub code: i32,
    pub stdout: Vec<u8>,
    pub stderr: String,
    pub peak_bytes: u64,
    pub cpu: std::time::Duration,
}

/// How long a measured child may run before it is taken as hung. Bounds on what a command costs
/// are asserted on its CPU time, which other processes' load does not change; wall time only
/// catches a hang, so this is generous.
pub const HANG: std::time::Duration = std::time::Duration::from_secs(300);

/// Runs `cmd` to its end (`stdin` written to it through a pipe) and measures it; panics when it
/// runs past [`HANG`].
pub fn measured(cmd: &mut Command, stdin: Option<&[u8]>) -> Measured {
    use std::io::{Read, Write};
    use std::process::Stdio;
    if stdin.is_some() {
        cmd.stdin(Stdio::piped());
    }
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    // Reaped by the wait4 below (which also gives its rusage), or waited for after a kill.
    #[allow(clippy::zombie_processes)]
    let mut child = cmd.spawn().expect("spawn");
    // Drained as the child writes, so that a full pipe never stops it.
    let drain = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut v = Vec::new();
            let _ = r.read_to_end(&mut v);
            v
        })
    };
    let out = drain(Box::new(child.stdout.take().unwrap()));
    let err = drain(Box::new(child.stderr.take().unwrap()));
    if let Some(bytes) = stdin {
        let mut pipe = child.stdin.take().unwrap();
        // The reader may refuse before reading everything: a broken pipe is expected then.
        let _ = pipe.write_all(bytes);
    }
    let pid = child.id() as libc::pid_t;
    let start = std::time::Instant::now();
    let (status, usage) = loop {
        let mut status = 0;
        // SAFETY: an all-zero rusage is a valid value for wait4 to overwrite.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: `pid` is this test's own child, not yet reaped; the pointers are to live locals.
        let r = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage) };
        if r == pid {
            break (status, usage);
        }
        assert!(r == 0, "wait4: {}", std::io::Error::last_os_error());
        if start.elapsed() > HANG {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{cmd:?} still running after {HANG:?}: hung");
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    };
    let tv = |t: libc::timeval| {
        std::time::Duration::from_secs(t.tv_sec as u64)
            + std::time::Duration::from_micros(t.tv_usec as u64)
    };
    Measured {
        code: if libc::WIFEXITED(status) { libc::WEXITSTATUS(status) } else { -1 },
        stdout: out.join().unwrap(),
        stderr: String::from_utf8_lossy(&err.join().unwrap()).into_owned(),
        peak_bytes: usage.ru_maxrss as u64 * 1024,
        cpu: tv(usage.ru_utime) + tv(usage.ru_stime),
    }
}
