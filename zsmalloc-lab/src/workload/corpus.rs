//! The built-in synthetic corpus: seeded pages of the kinds swap and zram see — zero pages,
//! other same-filled pages, text, pointer-rich heap data, sparse pages and incompressible data.

use rand::{Rng, RngCore};
use rand_chacha::ChaCha8Rng;

/// The kinds of synthetic pages with their shares in percent.
pub const KINDS: [(&str, u32); 6] =
    [("zero", 11), ("same", 2), ("text", 30), ("heap", 27), ("sparse", 18), ("random", 12)];

const WORDS: [&str; 48] = [
    "the", "page", "zspage", "object", "class", "size", "chain", "memory", "compress", "swap",
    "kernel", "struct", "return", "static", "unsigned", "long", "int", "void", "const", "if",
    "else", "for", "while", "lock", "unlock", "spin", "mutex", "list", "head", "next", "prev",
    "free", "alloc", "pool", "handle", "zram", "zswap", "read", "write", "map", "unmap", "copy",
    "data", "buffer", "offset", "length", "error", "0x0",
];

/// Fills `buf` with the next synthetic page.
pub fn synth_page(rng: &mut ChaCha8Rng, buf: &mut [u8]) {
    let mut pick = rng.gen_range(0..100u32);
    let mut kind = KINDS.len() - 1;
    for (i, (_, share)) in KINDS.iter().enumerate() {
        if pick < *share {
            kind = i;
            break;
        }
        pick -= share;
    }
    match KINDS[kind].0 {
        "zero" => buf.fill(0),
        "same" => {
            let v: u8 = rng.gen_range(1..=255);
            buf.fill(v);
        }
        "text" => text(rng, buf),
        "heap" => heap(rng, buf),
        "sparse" => {
            buf.fill(0);
            for _ in 0..rng.gen_range(1..=8) {
                let len = rng.gen_range(8..=256).min(buf.len());
                let at = rng.gen_range(0..=buf.len() - len);
                rng.fill_bytes(&mut buf[at..at + len]);
            }
        }
        _ => rng.fill_bytes(buf),
    }
}

fn text(rng: &mut ChaCha8Rng, buf: &mut [u8]) {
    let mut at = 0;
    while at < buf.len() {
        let w = WORDS[rng.gen_range(0..WORDS.len())].as_bytes();
        let sep: &[u8] = if rng.gen_ratio(1, 12) { b"\n" } else { b" " };
        for &b in w.iter().chain(sep) {
            if at == buf.len() {
                break;
            }
            buf[at] = b;
            at += 1;
        }
    }
}

/// 8-byte words: kernel-like pointers, small integers, flags and zeros.
fn heap(rng: &mut ChaCha8Rng, buf: &mut [u8]) {
    let base: u64 = 0xffff_8880_0000_0000 | (rng.gen_range(0..1u64 << 20) << 12);
    for chunk in buf.chunks_mut(8) {
        let v: u64 = match rng.gen_range(0..10) {
            0..=2 => base + (rng.gen_range(0..4096u64) << 3),
            3..=5 => rng.gen_range(0..256),
            6 => 1 << rng.gen_range(0..16),
            _ => 0,
        };
        let bytes = v.to_le_bytes();
        chunk.copy_from_slice(&bytes[..chunk.len()]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn synthetic_pages_are_reproducible() {
        let gen = |seed| {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            let mut out = vec![0u8; 4096 * 64];
            for p in out.chunks_mut(4096) {
                synth_page(&mut rng, p);
            }
            out
        };
        assert_eq!(gen(3), gen(3));
        assert_ne!(gen(3), gen(4));
    }
}
