//! Gives libzsmalloc.so its SONAME, `libzsmalloc.so.<ABI major>`, and makes that name resolve
//! beside the artifact, so that a program linked in the build tree (`-L target/release
//! -lzsmalloc -Wl,-rpath,...`) finds what its NEEDED entry names after a plain `cargo build`.
//! `make install` installs the library under its versioned name with the usual links.

use std::path::Path;

/// Changes only when the C ABI stops being backward compatible (never so far).
const SONAME_MAJOR: u32 = 0;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    if !matches!(os.as_str(), "linux" | "android" | "freebsd" | "netbsd" | "openbsd" | "dragonfly")
    {
        return;
    }
    let soname = format!("libzsmalloc.so.{SONAME_MAJOR}");
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,{soname}");

    // OUT_DIR is <artifact dir>/build/<package>-<hash>/out: the link goes in <artifact dir>,
    // pointing at the library cargo is about to link there.
    let Ok(out) = std::env::var("OUT_DIR") else { return };
    let out = Path::new(&out);
    let is_layout = out.file_name().is_some_and(|n| n == "out")
        && out
            .parent()
            .and_then(Path::parent)
            .and_then(Path::file_name)
            .is_some_and(|n| n == "build");
    let Some(dir) = out.ancestors().nth(3).filter(|_| is_layout) else {
        println!("cargo:warning=unexpected OUT_DIR layout: no {soname} link beside the library");
        return;
    };
    let link = dir.join(&soname);
    if std::fs::read_link(&link).is_ok_and(|t| t == Path::new("libzsmalloc.so")) {
        return;
    }
    let _ = std::fs::remove_file(&link);
    #[cfg(unix)]
    if let Err(e) = std::os::unix::fs::symlink("libzsmalloc.so", &link) {
        println!("cargo:warning=could not link {}: {e}", link.display());
    }
}
