//! What the machine says about itself for the cost study: the last-level cache (to size the pool
//! beyond it), the transparent-huge-page settings, the load average, minor faults of this thread
//! (`getrusage(RUSAGE_THREAD)`) and a user-space instruction counter where the kernel offers one
//! (`perf_event_open`; a VM without a hardware PMU has none, and then there is no count).

use serde::Serialize;

/// The largest cache of CPU 0 (`/sys/devices/system/cpu/cpu0/cache/index*/size`), in bytes.
pub fn last_level_cache_bytes() -> Option<u64> {
    let dir = std::fs::read_dir("/sys/devices/system/cpu/cpu0/cache").ok()?;
    let mut best: Option<(u32, u64)> = None;
    for e in dir.flatten() {
        let p = e.path();
        if !p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("index")) {
            continue;
        }
        let read = |f: &str| std::fs::read_to_string(p.join(f)).ok().map(|s| s.trim().to_string());
        let (Some(level), Some(size)) = (read("level"), read("size")) else { continue };
        if read("type").as_deref() == Some("Instruction") {
            continue;
        }
        let Ok(level) = level.parse::<u32>() else { continue };
        let bytes = parse_cache_size(&size)?;
        if best.is_none_or(|(l, _)| level > l) {
            best = Some((level, bytes));
        }
    }
    best.map(|(_, b)| b)
}

/// `32768K` -> 33554432; `8M`; a plain number of bytes.
pub fn parse_cache_size(s: &str) -> Option<u64> {
    let s = s.trim();
    let (digits, mult) = match s.chars().last()? {
        'K' | 'k' => (&s[..s.len() - 1], 1024),
        'M' | 'm' => (&s[..s.len() - 1], 1024 * 1024),
        'G' | 'g' => (&s[..s.len() - 1], 1024 * 1024 * 1024),
        _ => (s, 1),
    };
    digits.parse::<u64>().ok().map(|d| d * mult)
}

/// The transparent-huge-page settings in force (the bracketed choice of each file).
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Thp {
    /// `/sys/kernel/mm/transparent_hugepage/enabled` (anonymous memory).
    pub enabled: Option<String>,
    /// `/sys/kernel/mm/transparent_hugepage/shmem_enabled` (shmem and memfd).
    pub shmem_enabled: Option<String>,
}

fn bracketed(path: &str) -> Option<String> {
    let s = std::fs::read_to_string(path).ok()?;
    let a = s.find('[')?;
    let b = s[a..].find(']')?;
    Some(s[a + 1..a + b].to_string())
}

pub fn thp() -> Thp {
    Thp {
        enabled: bracketed("/sys/kernel/mm/transparent_hugepage/enabled"),
        shmem_enabled: bracketed("/sys/kernel/mm/transparent_hugepage/shmem_enabled"),
    }
}

/// The 1-minute load average (`/proc/loadavg`).
pub fn load_average() -> Option<f64> {
    std::fs::read_to_string("/proc/loadavg").ok()?.split_whitespace().next()?.parse().ok()
}

/// Minor page faults of the calling thread so far.
#[inline]
pub fn minor_faults() -> u64 {
    // SAFETY: an all-zero rusage is a valid value of the plain C struct.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `ru` is a valid, writable rusage; RUSAGE_THREAD is a valid `who` on Linux.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
    if rc != 0 {
        return 0;
    }
    ru.ru_minflt as u64
}

/// Pushes the pool out of the caches before a timed pass: touches (writes) one byte per cache
/// line of a buffer larger than the last-level cache, so a pass never finds the objects the
/// previous pass brought in.
pub struct Evictor {
    buf: Vec<u8>,
    round: u8,
}

impl Evictor {
    pub fn new(bytes: usize) -> Evictor {
        Evictor { buf: vec![1u8; bytes], round: 0 }
    }

    pub fn run(&mut self) {
        self.round = self.round.wrapping_add(1);
        let r = self.round;
        for b in self.buf.iter_mut().step_by(64) {
            *b = b.wrapping_add(r);
        }
        std::hint::black_box(&self.buf);
    }
}

/// A hardware counter of user-space instructions retired by this thread.
pub struct InstructionCounter {
    fd: libc::c_int,
}

const PERF_TYPE_HARDWARE: u32 = 0;
const PERF_COUNT_HW_INSTRUCTIONS: u64 = 1;
/// `PERF_ATTR_SIZE_VER0`: the first 64 bytes of `struct perf_event_attr`, which every kernel
/// accepts.
const ATTR_SIZE: u32 = 64;
const FLAG_DISABLED: u64 = 1 << 0;
const FLAG_EXCLUDE_KERNEL: u64 = 1 << 5;
const FLAG_EXCLUDE_HV: u64 = 1 << 6;
// _IO('$', 0) and _IO('$', 1).
const PERF_EVENT_IOC_ENABLE: libc::c_ulong = 0x2400;
const PERF_EVENT_IOC_DISABLE: libc::c_ulong = 0x2401;

impl InstructionCounter {
    /// `None` when the kernel offers no such counter (no PMU, `perf_event_paranoid`, seccomp).
    pub fn open() -> Option<InstructionCounter> {
        // struct perf_event_attr, version 0: type, size, config, sample_period, sample_type,
        // read_format, the flag bits, wakeup_events + bp_type, bp_addr.
        let mut attr = [0u64; 8];
        attr[0] = u64::from(PERF_TYPE_HARDWARE) | (u64::from(ATTR_SIZE) << 32);
        attr[1] = PERF_COUNT_HW_INSTRUCTIONS;
        attr[6] = FLAG_DISABLED | FLAG_EXCLUDE_KERNEL | FLAG_EXCLUDE_HV;
        // SAFETY: `attr` is a 64-byte perf_event_attr (version 0) that lives across the call;
        // pid 0 / cpu -1 = this thread on any CPU; no group, no flags.
        let fd =
            unsafe { libc::syscall(libc::SYS_perf_event_open, attr.as_ptr(), 0, -1, -1, 0u64) };
        if fd < 0 {
            return None;
        }
        let c = InstructionCounter { fd: fd as libc::c_int };
        // SAFETY: `c.fd` is the perf event just opened; ENABLE takes no argument.
        if unsafe { libc::ioctl(c.fd, PERF_EVENT_IOC_ENABLE, 0) } != 0 {
            return None;
        }
        c.read().map(|_| c)
    }

    /// Instructions counted so far.
    #[inline]
    pub fn read(&self) -> Option<u64> {
        let mut v = 0u64;
        // SAFETY: reads 8 bytes into `v` from the perf event fd (read_format 0: one u64).
        let n = unsafe { libc::read(self.fd, (&mut v as *mut u64).cast(), 8) };
        (n == 8).then_some(v)
    }
}

impl Drop for InstructionCounter {
    fn drop(&mut self) {
        // SAFETY: `fd` is this counter's own descriptor, closed once here.
        unsafe {
            libc::ioctl(self.fd, PERF_EVENT_IOC_DISABLE, 0);
            libc::close(self.fd);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_settings_read() {
        assert_eq!(parse_cache_size("32768K"), Some(32 << 20));
        assert_eq!(parse_cache_size("8M"), Some(8 << 20));
        assert_eq!(parse_cache_size("512"), Some(512));
        assert_eq!(parse_cache_size("x"), None);
        let before = minor_faults();
        let v = vec![1u8; 8 << 20];
        std::hint::black_box(&v);
        assert!(minor_faults() >= before);
        // Either a counter that counts, or none: never a made-up figure.
        if let Some(c) = InstructionCounter::open() {
            let a = c.read().unwrap();
            let s: u64 = (0..100_000u64).map(std::hint::black_box).sum();
            assert!(s > 0 && c.read().unwrap() > a);
        }
    }
}
