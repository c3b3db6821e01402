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
    Static(String),
    SetId(String),
}

impl std::fmt::Display for Unfit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unfit::NotFound(p) => write!(f, "{p}: command not found"),
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

/// The file `name` runs: itself when it names a path, else the first executable of that
/// name in `PATH`.
pub fn resolve(name: &OsStr) -> Result<PathBuf, Unfit> {
    let shown = || Unfit::NotFound(name.to_string_lossy().into_owned());
    let executable =
        |p: &Path| p.metadata().is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0);
    if name.is_empty() {
        return Err(shown());
    }
    if Path::new(name).components().count() > 1 || name.to_string_lossy().contains('/') {
        let p = PathBuf::from(name);
        return if executable(&p) { Ok(p) } else { Err(shown()) };
    }
    let path = std::env::var_os("PATH").unwrap_or_else(|| OsString::from("/usr/bin:/bin"));
    std::env::split_paths(&path).map(|d| d.join(name)).find(|p| executable(p)).ok_or_else(shown)
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
    }
}
