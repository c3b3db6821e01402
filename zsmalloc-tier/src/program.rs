//! What the tier checks of a program before running it: that it can be found, and that the
//! loader will preload the tier into it (a static program has no loader; a setuid or setgid
//! one has `LD_PRELOAD` ignored), each refusal one line naming the program.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// Why a program cannot be run under the tier.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unfit {
    NotFound(String),
    /// A path that names a directory (a shell: 126, "is a directory").
    IsDirectory(String),
    /// A file found but not executable by this user (a shell: 126, "permission denied").
    NotExecutable(String),
    Static(String),
    SetId(String),
}

impl std::fmt::Display for Unfit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unfit::NotFound(p) => write!(f, "{p}: command not found"),
            Unfit::IsDirectory(p) => write!(f, "{p}: {}", os_reason(libc::EISDIR)),
            Unfit::NotExecutable(p) => write!(f, "{p}: {}", os_reason(libc::EACCES)),
            Unfit::Static(p) => write!(
                f,
                "{p} is statically linked: no loader runs in it to preload the tier; run a \
                 dynamically linked program"
            ),
            Unfit::SetId(p) => write!(
                f,
                "{p} is setuid or setgid: the loader ignores LD_PRELOAD for it; run a copy \
                 without the bit"
            ),
        }
    }
}

/// The error's wording as everywhere in the lab ("permission denied").
fn os_reason(errno: i32) -> String {
    zsmalloc_core::text_input::io_reason(&std::io::Error::from_raw_os_error(errno))
}

impl Unfit {
    /// The exit status a shell gives: 127 for a command not found, 126 for one found that
    /// cannot be executed; 2 for the tier's own refusals.
    pub fn exit_code(&self) -> i32 {
        match self {
            Unfit::NotFound(_) => 127,
            Unfit::IsDirectory(_) | Unfit::NotExecutable(_) => 126,
            Unfit::Static(_) | Unfit::SetId(_) => 2,
        }
    }
}

/// The file `name` runs, found as a shell finds it: itself when it names a path (a directory
/// or a file this user may not execute is refused as a shell refuses it), else the first
/// executable of that name in `PATH` (a file of that name found there that is not executable
/// is refused so only when no executable one is).
pub fn resolve(name: &OsStr) -> Result<PathBuf, Unfit> {
    let shown = name.to_string_lossy().into_owned();
    if name.is_empty() {
        return Err(Unfit::NotFound(shown));
    }
    if name.to_string_lossy().contains('/') {
        let p = PathBuf::from(name);
        return match p.metadata() {
            Err(_) => Err(Unfit::NotFound(shown)),
            Ok(m) if m.is_dir() => Err(Unfit::IsDirectory(shown)),
            Ok(_) if !may_execute(&p) => Err(Unfit::NotExecutable(shown)),
            Ok(_) => Ok(p),
        };
    }
    let path = std::env::var_os("PATH").unwrap_or_else(|| OsString::from("/usr/bin:/bin"));
    let mut refused = None;
    for p in std::env::split_paths(&path).map(|d| d.join(name)) {
        if !p.metadata().is_ok_and(|m| m.is_file()) {
            continue;
        }
        if may_execute(&p) {
            return Ok(p);
        }
        refused.get_or_insert(Unfit::NotExecutable(shown.clone()));
    }
    Err(refused.unwrap_or(Unfit::NotFound(shown)))
}

/// Whether this user may execute the file at `p` (access(2), as a shell asks: root needs an
/// execute bit on some class).
fn may_execute(p: &Path) -> bool {
    let Ok(c) = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()) else { return false };
    // SAFETY: access of a NUL-terminated path; it touches no memory of ours.
    unsafe { libc::access(c.as_ptr(), libc::X_OK) == 0 }
}

/// Refuses a program the loader would not preload into: static, setuid or setgid, or a
/// script whose interpreter is one of those.
pub fn check_preloadable(path: &Path) -> Result<(), Unfit> {
    check(path, 0)
}

fn check(path: &Path, depth: u32) -> Result<(), Unfit> {
    let shown = path.display().to_string();
    let meta = path.metadata().map_err(|_| Unfit::NotFound(shown.clone()))?;
    if meta.permissions().mode() & 0o6000 != 0 {
        return Err(Unfit::SetId(shown));
    }
    let mut head = Vec::new();
    File::open(path)
        .and_then(|f| f.take(4096).read_to_end(&mut head))
        .map_err(|_| Unfit::NotFound(shown.clone()))?;
    if let Some(line) = head.strip_prefix(b"#!") {
        let line = line.split(|&b| b == b'\n').next().unwrap_or_default();
        let text = String::from_utf8_lossy(line);
        let Some(interp) = text.split_whitespace().next() else { return Ok(()) };
        return if depth < 4 { check(Path::new(interp), depth + 1) } else { Ok(()) };
    }
    if has_interpreter(path, &head) == Some(false) {
        return Err(Unfit::Static(shown));
    }
    Ok(())
}

/// Whether an ELF file has a `PT_INTERP` program header (a loader), `None` when it is not an
/// ELF file this reads (the kernel decides what it is then).
fn has_interpreter(path: &Path, head: &[u8]) -> Option<bool> {
    if head.len() < 64 || &head[..4] != b"\x7fELF" || head[5] != 1 {
        return None;
    }
    let u16_at = |b: &[u8], at: usize| u16::from_le_bytes([b[at], b[at + 1]]) as usize;
    let u32_at = |b: &[u8], at: usize| u32::from_le_bytes(b[at..at + 4].try_into().unwrap());
    let (phoff, phentsize, phnum) = match head[4] {
        2 => {
            let off = u64::from_le_bytes(head[0x20..0x28].try_into().ok()?);
            (usize::try_from(off).ok()?, u16_at(head, 0x36), u16_at(head, 0x38))
        }
        1 => (u32_at(head, 0x1c) as usize, u16_at(head, 0x2a), u16_at(head, 0x2c)),
        _ => return None,
    };
    if phentsize < 4 {
        return None;
    }
    let mut table = vec![0u8; phentsize.checked_mul(phnum)?];
    let mut f = File::open(path).ok()?;
    std::io::Seek::seek(&mut f, std::io::SeekFrom::Start(phoff as u64)).ok()?;
    f.read_exact(&mut table).ok()?;
    const PT_INTERP: u32 = 3;
    Some(table.chunks(phentsize).any(|h| u32_at(h, 0) == PT_INTERP))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn programs_are_found_and_checked() {
        let sh = resolve(OsStr::new("sh")).expect("sh is in PATH");
        assert!(sh.is_absolute());
        assert_eq!(check_preloadable(&sh), Ok(()));
        let missing = resolve(OsStr::new("no-such-command-here")).unwrap_err();
        assert_eq!(missing.to_string(), "no-such-command-here: command not found");
        assert!(resolve(OsStr::new("./no/such")).is_err());
        assert!(resolve(OsStr::new("")).is_err());
        let dir = resolve(OsStr::new("/")).unwrap_err();
        assert_eq!((dir.to_string().as_str(), dir.exit_code()), ("/: is a directory", 126));
        let plain = std::env::temp_dir().join(format!("tier-plain-{}", std::process::id()));
        std::fs::write(&plain, "echo hi\n").expect("a file");
        let refused = resolve(plain.as_os_str()).unwrap_err();
        let _ = std::fs::remove_file(&plain);
        assert_eq!(refused.exit_code(), 126, "{refused}");
        assert!(refused.to_string().ends_with(": permission denied"), "{refused}");
    }
}
