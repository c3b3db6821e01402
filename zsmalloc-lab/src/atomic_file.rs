//! Every output file the lab writes (traces, CSV, SVG, class tables, device records) goes
//! through [`AtomicFile`]: the bytes go to a temporary file beside the target, renamed onto it
//! by [`AtomicFile::commit`]. So the target is either its old self or the whole new file:
//!
//! - an error, a refusal or a panic drops the file uncommitted, and the temporary is removed;
//! - SIGINT, SIGTERM and SIGHUP unlink it too ([`crate::interrupt`]: every temporary is
//!   registered before it is created);
//! - an existing target is untouched until the new one is complete (its permissions carry
//!   over; a symbolic link is followed, and the file it names replaced).
//!
//! The temporary is `.<name>.<pid>.<n>.partial` in the target's directory (the same file
//! system, so the rename is atomic). A target that is not a regular file (`/dev/null`, a FIFO)
//! is written in place: there is nothing to replace. Only a SIGKILL can leave a temporary; its
//! name says whose it was.

use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::{LabError, LabResult};
use crate::interrupt::temps::{self, Kind, Registered};

/// Tells this process's temporaries apart (two outputs may share a name in one directory).
static NEXT: AtomicU64 = AtomicU64::new(0);

/// An output file being written (module documentation).
pub struct AtomicFile {
    /// The path as given, for messages.
    target: PathBuf,
    /// Where the file goes: the target, or the file its symbolic link names.
    dest: PathBuf,
    /// `None` once committed or dropped.
    out: Option<BufWriter<File>>,
    /// `None` when written in place.
    temp: Option<Temp>,
}

struct Temp {
    path: PathBuf,
    /// `None` for a temporary whose name is the caller's protocol (a device record's copy).
    registered: Option<Registered>,
}

impl AtomicFile {
    /// Starts writing `target`; errors name it as users wrote it.
    pub fn create(target: &Path) -> LabResult<AtomicFile> {
        AtomicFile::open(target).map_err(|e| LabError::io("write", target, &e))
    }

    /// [`AtomicFile::create`] with the OS error as it came.
    pub fn open(target: &Path) -> io::Result<AtomicFile> {
        let existing = match std::fs::metadata(target) {
            Ok(m) => Some(m),
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            Err(e) => return Err(e),
        };
        let dest = match &existing {
            Some(m) if m.is_dir() => return Err(io::Error::from_raw_os_error(libc::EISDIR)),
            Some(m) if !m.is_file() => return AtomicFile::in_place(target),
            Some(_) => {
                // Refused where writing in place would be (a read-only file); creates nothing.
                OpenOptions::new().append(true).open(target)?;
                let is_link = std::fs::symlink_metadata(target)?.file_type().is_symlink();
                if is_link {
                    std::fs::canonicalize(target)?
                } else {
                    target.to_path_buf()
                }
            }
            None => target.to_path_buf(),
        };
        let name = dest
            .file_name()
            .ok_or_else(|| io::Error::from_raw_os_error(libc::EISDIR))?
            .to_string_lossy()
            .into_owned();
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let temp = dest.with_file_name(format!(".{name}.{}.{n}.partial", std::process::id()));
        let (registered, file) = temps::register(&temp, Kind::File, || create_file(&temp))?;
        let f = AtomicFile::with_file(target, dest, file, temp, Some(registered));
        if let Some(m) = existing {
            let file = f.out.as_ref().map(BufWriter::get_ref);
            file.map(|file| file.set_permissions(m.permissions())).transpose()?;
        }
        Ok(f)
    }

    /// Writes `target` through `copy`, a temporary whose name the caller's protocol gives
    /// (a device record's `.new` copy, which a later start reads if a SIGKILL leaves it):
    /// removed when dropped uncommitted, but not registered for the signal handler.
    pub(crate) fn with_copy(target: &Path, copy: &Path) -> io::Result<AtomicFile> {
        let file = create_file(copy)?;
        Ok(AtomicFile::with_file(target, target.to_path_buf(), file, copy.to_path_buf(), None))
    }

    fn with_file(
        target: &Path,
        dest: PathBuf,
        file: File,
        temp: PathBuf,
        registered: Option<Registered>,
    ) -> AtomicFile {
        AtomicFile {
            target: target.to_path_buf(),
            dest,
            out: Some(BufWriter::with_capacity(1 << 16, file)),
            temp: Some(Temp { path: temp, registered }),
        }
    }

    fn in_place(target: &Path) -> io::Result<AtomicFile> {
        let file = OpenOptions::new().write(true).open(target)?;
        Ok(AtomicFile {
            target: target.to_path_buf(),
            dest: target.to_path_buf(),
            out: Some(BufWriter::with_capacity(1 << 16, file)),
            temp: None,
        })
    }

    /// The path as given.
    pub fn target(&self) -> &Path {
        &self.target
    }

    /// Where the bytes go until the commit: the temporary, or the target written in place.
    /// Another process may write them there (a program `tier --record` runs).
    pub fn writing_path(&self) -> &Path {
        self.temp.as_ref().map_or(&self.dest, |t| &t.path)
    }

    /// Puts the complete file at its target.
    pub fn commit(self) -> LabResult<()> {
        let target = self.target.clone();
        self.commit_io().map_err(|e| LabError::io("write", &target, &e))
    }

    /// [`AtomicFile::commit`] with the OS error as it came.
    pub fn commit_io(mut self) -> io::Result<()> {
        let out = self.out.as_mut().expect("an uncommitted file is open");
        out.flush()?;
        let Some(temp) = &self.temp else {
            self.out = None;
            return Ok(());
        };
        // On disk before it replaces anything: a crash after the rename shows the new file.
        out.get_ref().sync_all()?;
        self.out = None;
        std::fs::rename(&temp.path, &self.dest)?;
        if let Some(r) = self.temp.take().and_then(|t| t.registered) {
            r.release();
        }
        Ok(())
    }
}

fn create_file(path: &Path) -> io::Result<File> {
    OpenOptions::new().write(true).create(true).truncate(true).open(path)
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.out.as_mut().expect("an uncommitted file is open").write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out.as_mut().expect("an uncommitted file is open").flush()
    }
}

impl Drop for AtomicFile {
    /// Uncommitted: the temporary goes, the target stays as it was.
    fn drop(&mut self) {
        if let Some(out) = self.out.take() {
            // What is still buffered is not written anywhere.
            drop(out.into_parts());
        }
        if let Some(temp) = self.temp.take() {
            let _ = std::fs::remove_file(&temp.path);
            // Removed before the slot is freed (invariant 4 of `interrupt::temps`).
            if let Some(r) = temp.registered {
                r.release();
            }
        }
    }
}

/// Writes `bytes` as the file `target`, whole or not at all.
pub fn write(target: &Path, bytes: &[u8]) -> LabResult<()> {
    let mut f = AtomicFile::create(target)?;
    f.write_all(bytes).map_err(|e| LabError::io("write", target, &e))?;
    f.commit()
}

/// Whether `target` can be written, without creating it or changing it: a temporary is made
/// beside it and removed.
pub fn check(target: &Path) -> io::Result<()> {
    AtomicFile::open(target).map(drop)
}

/// A directory made for outputs (`folios --trace-dir`), with its missing parents, each
/// registered for the signal handler as a temporary is. Dropped without [`CreatedDir::keep`]
/// (an error, a refusal), the directories it made are removed again if they are empty; a
/// signal does the same. Directories that were there are never touched.
pub struct CreatedDir {
    /// Outermost first.
    made: Vec<(PathBuf, Registered)>,
}

impl CreatedDir {
    pub fn create(path: &Path) -> io::Result<CreatedDir> {
        let mut missing = Vec::new();
        let mut p = path;
        while !p.as_os_str().is_empty() && std::fs::symlink_metadata(p).is_err() {
            missing.push(p);
            let Some(parent) = p.parent() else { break };
            p = parent;
        }
        let mut dir = CreatedDir { made: Vec::new() };
        for p in missing.into_iter().rev() {
            match temps::register(p, Kind::Dir, || std::fs::create_dir(p)) {
                Ok((r, ())) => dir.made.push((p.to_path_buf(), r)),
                // Made meanwhile by someone else: theirs.
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists && p.is_dir() => {}
                Err(e) => return Err(e),
            }
        }
        if !path.is_dir() {
            return Err(io::Error::from_raw_os_error(libc::ENOTDIR));
        }
        Ok(dir)
    }

    /// The command succeeded: the directories stay.
    pub fn keep(mut self) {
        for (_, r) in self.made.drain(..) {
            r.release();
        }
    }
}

impl Drop for CreatedDir {
    fn drop(&mut self) {
        for (p, r) in self.made.drain(..).rev() {
            let _ = std::fs::remove_dir(&p);
            r.release();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::{FileTypeExt, PermissionsExt};

    use super::*;

    /// A test's directory, removed with everything in it when the test ends, passed or failed
    /// (the drop runs while a failing assertion unwinds).
    struct Scratch(PathBuf);

    impl std::ops::Deref for Scratch {
        type Target = Path;
        fn deref(&self) -> &Path {
            &self.0
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn dir(name: &str) -> Scratch {
        let d = std::env::temp_dir().join(format!("zsmalloc-atomic-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        Scratch(d)
    }

    #[test]
    fn a_test_directory_goes_when_the_test_ends() {
        let d = dir("scratch");
        std::fs::create_dir_all(d.join("a/b")).unwrap();
        std::fs::write(d.join("a/b/f"), "x").unwrap();
        let path = d.to_path_buf();
        drop(d);
        assert!(!path.exists(), "{} left behind", path.display());
    }

    fn names(d: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn the_target_appears_whole_at_commit_and_not_before() {
        let d = dir("commit");
        let t = d.join("out.txt");
        std::fs::write(&t, "old\n").unwrap();
        let mut f = AtomicFile::create(&t).unwrap();
        f.write_all(&vec![b'x'; 200_000]).unwrap();
        assert_eq!(std::fs::read_to_string(&t).unwrap(), "old\n", "untouched while writing");
        let partial = format!(".out.txt.{}.", std::process::id());
        let all = names(&d);
        assert!(all.iter().any(|n| n.starts_with(&partial) && n.ends_with(".partial")), "{all:?}");
        f.commit().unwrap();
        assert_eq!(std::fs::read(&t).unwrap(), vec![b'x'; 200_000]);
        assert_eq!(names(&d), ["out.txt"]);
    }

    #[test]
    fn an_uncommitted_file_leaves_the_target_as_it_was() {
        let d = dir("drop");
        let fresh = d.join("fresh");
        let mut f = AtomicFile::create(&fresh).unwrap();
        f.write_all(b"half").unwrap();
        drop(f);
        assert!(names(&d).is_empty(), "{:?}", names(&d));
        let old = d.join("old");
        std::fs::write(&old, "kept").unwrap();
        let mut f = AtomicFile::create(&old).unwrap();
        f.write_all(&vec![0; 100_000]).unwrap();
        drop(f);
        assert_eq!(std::fs::read_to_string(&old).unwrap(), "kept");
        assert_eq!(names(&d), ["old"]);
        check(&d.join("probe")).unwrap();
        assert_eq!(names(&d), ["old"], "a check creates nothing");
    }

    #[test]
    fn a_panic_while_writing_removes_the_temporary() {
        let d = dir("panic");
        let t = d.join("out");
        let caught = std::panic::catch_unwind(|| {
            let mut f = AtomicFile::create(&t).unwrap();
            f.write_all(b"some").unwrap();
            panic!("mid-write");
        });
        assert!(caught.is_err());
        assert!(names(&d).is_empty(), "{:?}", names(&d));
    }

    #[test]
    fn permissions_and_links_carry_over() {
        let d = dir("links");
        let real = d.join("real");
        std::fs::write(&real, "a").unwrap();
        std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o640)).unwrap();
        let link = d.join("link");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        write(&link, b"b").unwrap();
        assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
        assert_eq!(std::fs::read_to_string(&real).unwrap(), "b");
        let mode = std::fs::metadata(&real).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o640);
        assert_eq!(names(&d), ["link", "real"]);
    }

    #[test]
    fn directories_made_for_outputs_go_unless_kept() {
        let d = dir("dirs");
        let deep = d.join("a/b/c");
        let made = CreatedDir::create(&deep).unwrap();
        assert!(deep.is_dir());
        drop(made);
        assert!(names(&d).is_empty(), "{:?}", names(&d));
        let made = CreatedDir::create(&deep).unwrap();
        write(&deep.join("kept.trace"), b"x").unwrap();
        std::fs::create_dir(d.join("a/other")).unwrap();
        drop(made);
        assert!(deep.join("kept.trace").exists(), "a directory holding an output stays");
        CreatedDir::create(&d.join("x/y")).unwrap().keep();
        assert!(d.join("x/y").is_dir());
        std::fs::write(d.join("f"), "").unwrap();
        assert!(CreatedDir::create(&d.join("f")).is_err(), "a file is no directory");
        assert_eq!(std::fs::read(d.join("f")).unwrap(), b"");
    }

    #[test]
    fn a_device_is_written_in_place_and_a_directory_refused() {
        write(Path::new("/dev/null"), b"nothing").unwrap();
        assert!(std::fs::metadata("/dev/null").unwrap().file_type().is_char_device());
        let d = dir("isdir");
        let e = write(&d, b"x").unwrap_err().to_string();
        assert!(e.contains("directory"), "{e}");
        let e = write(&d.join("missing/out"), b"x").unwrap_err().to_string();
        assert!(e.contains("no such file or directory"), "{e}");
    }
}
