//! zram's same-filled rule, checked against the running kernel: crafted pages (8-byte words
//! that are not byte patterns, byte patterns, zero pages, ordinary pages) and real files are
//! written to a private device, and `zsmalloc run pages` must count exactly the kernel's
//! `same_pages`. Skipped, with the reason printed, without root or zram control.

mod kernel_support;

use kernel_support::*;

/// 16 pages of each kind, in an order that mixes them: a random 8-byte word repeated, one
/// byte repeated, `0x008f008f…`, the zero page, and pages that differ in their last word only
/// or are ordinary data.
fn crafted_pages(page: usize) -> (Vec<u8>, u64) {
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut out = Vec::new();
    let mut same = 0;
    for i in 0..96 {
        let mut p = vec![0u8; page];
        match i % 6 {
            0 => {
                let w = next() | 1;
                p.chunks_mut(8).for_each(|c| c.copy_from_slice(&w.to_ne_bytes()));
                same += 1;
            }
            1 => {
                p.fill((next() % 255) as u8 + 1);
                same += 1;
            }
            2 => {
                p.chunks_mut(2).for_each(|c| c.copy_from_slice(&[0x00, 0x8f]));
                same += 1;
            }
            3 => same += 1,
            4 => {
                // A repeated word but the last: zram tests the last word first.
                let w = next();
                p.chunks_mut(8).for_each(|c| c.copy_from_slice(&w.to_ne_bytes()));
                p[page - 1] ^= 0x5a;
            }
            _ => p.iter_mut().enumerate().for_each(|(j, b)| *b = (next() as u8) & (j % 7) as u8),
        }
        out.extend_from_slice(&p);
    }
    (out, same)
}

/// The same-filled pages of `paths` as the kernel counted them (`kernel check`'s fill phase)
/// and as `run pages` counts them.
fn counts(paths: &[&str]) -> (u64, u64) {
    let mut args = vec!["kernel", "check"];
    args.extend(paths);
    args.extend(["--free-share", "0", "--format", "json"]);
    let kernel = json(&args);
    assert_eq!(kernel["agree"], true, "{kernel:#}");
    let mut args = vec!["run", "--no-time", "--format", "json", "pages"];
    args.extend(paths);
    let lab = json(&args);
    (kernel["stored"]["same_filled"].as_u64().unwrap(), lab["same_pages"].as_u64().unwrap())
}

#[test]
fn run_pages_counts_the_kernels_same_pages_on_crafted_pages() {
    let Some(_g) = kernel_or_skip("run_pages_counts_the_kernels_same_pages_on_crafted_pages")
    else {
        return;
    };
    let page = zsmalloc_lab::kernel::host::page_size();
    let (bytes, expected) = crafted_pages(page);
    let path = scratch("crafted.bin");
    std::fs::write(&path, bytes).unwrap();
    let (kernel, lab) = counts(&[path.to_str().unwrap()]);
    std::fs::remove_file(&path).unwrap();
    assert_eq!(kernel, expected, "the kernel keeps every repeated word outside its pool");
    assert_eq!(lab, kernel);
}

#[test]
fn run_pages_counts_the_kernels_same_pages_on_real_files() {
    let Some(_g) = kernel_or_skip("run_pages_counts_the_kernels_same_pages_on_real_files") else {
        return;
    };
    let files: Vec<&str> = ["/usr/bin/bash", "/usr/bin/python3.11", "/usr/bin/python3"]
        .into_iter()
        .filter(|f| std::path::Path::new(f).is_file())
        .take(2)
        .collect();
    assert!(!files.is_empty(), "no system binary to read");
    let (kernel, lab) = counts(&files);
    eprintln!("{files:?}: {kernel} same-filled pages");
    assert_eq!(lab, kernel);
}
