//! What another user runs, copied where that user can reach it: a checkout under a directory
//! only its owner may enter (root's home, a `mktemp -d`) holds the command, the tier's library
//! and the test program out of `nobody`'s reach. The copies go into a fresh directory under
//! /tmp, open to all for reading and executing, which is removed when the copy is dropped; the
//! reports are written in a directory of it that anyone may write.

use std::ffi::OsStr;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use super::{tempfile, Run};

pub struct Reachable {
    pub dir: PathBuf,
    pub zsmalloc: PathBuf,
    /// The test program's copy.
    pub program: PathBuf,
    reports: PathBuf,
}

impl Reachable {
    /// The command, its library and `program` copied into a fresh directory under /tmp; an
    /// error (for the test to print as its reason to skip) when that cannot be made or `uid`
    /// cannot run the copy there.
    pub fn copy_for(uid: u32, program: &Path) -> Result<Reachable, String> {
        let exe = Path::new(env!("CARGO_BIN_EXE_zsmalloc"));
        let library = exe.with_file_name(zsmalloc_tier::launch::LIBRARY);
        let name = tempfile("reachable");
        let dir = Path::new("/tmp").join(name.file_name().expect("a file name"));
        let open = |p: &Path, mode| {
            std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode))
                .map_err(|e| format!("chmod {}: {e}", p.display()))
        };
        std::fs::create_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let kit = Reachable {
            zsmalloc: dir.join("zsmalloc"),
            program: dir.join(program.file_name().expect("the program's name")),
            reports: dir.join("reports"),
            dir,
        };
        open(&kit.dir, 0o755)?;
        for (from, to) in [
            (exe, kit.zsmalloc.clone()),
            (library.as_path(), kit.dir.join(zsmalloc_tier::launch::LIBRARY)),
            (program, kit.program.clone()),
        ] {
            std::fs::copy(from, &to).map_err(|e| format!("copy {}: {e}", from.display()))?;
            open(&to, 0o755)?;
        }
        std::fs::create_dir(&kit.reports).map_err(|e| format!("{e}"))?;
        open(&kit.reports, 0o777)?;
        // The user may reach it: /tmp itself could be closed to it.
        let (code, _, err) = super::zsmalloc_from(
            &kit.zsmalloc,
            Some(&kit.dir),
            Some(uid),
            &[OsStr::new("--version")],
            |_| {},
        );
        if code != 0 {
            return Err(format!("user {uid} cannot run {}: {err}", kit.zsmalloc.display()));
        }
        Ok(kit)
    }

    /// `zsmalloc tier ARGS` from the copy as user `uid`, in its directory, with `--report`
    /// added (in the directory anyone may write).
    pub fn tier(&self, uid: u32, args: &[&str]) -> Run {
        let report = self.reports.join(tempfile("report.json").file_name().expect("a name"));
        let mut all: Vec<&OsStr> = vec!["tier".as_ref(), "--report".as_ref(), report.as_ref()];
        all.extend(args.iter().map(OsStr::new));
        let (code, stdout, stderr) =
            super::zsmalloc_from(&self.zsmalloc, Some(&self.dir), Some(uid), &all, |_| {});
        let report = std::fs::read_to_string(&report)
            .ok()
            .map(|t| serde_json::from_str(&t).expect("JSON report"));
        Run { code, stdout, stderr, report }
    }
}

impl Drop for Reachable {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
