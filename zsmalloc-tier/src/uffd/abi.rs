//! The kernel's userfaultfd ABI (`include/uapi/linux/userfaultfd.h` as of Linux 6.18), written
//! out here because distributions' headers lag the kernel: Debian's has no `UFFDIO_MOVE`, no
//! `UFFD_FEATURE_MOVE`, no `WP_ASYNC`. The ioctl numbers follow `_IOWR`/`_IOR` from the
//! structures' sizes, exactly as the header computes them; the kernel's answers to `UFFDIO_API`
//! and `UFFDIO_REGISTER` (bitmasks of these ioctls' command numbers) are checked at run time
//! before any of them is used, so a number wrong here shows as a refusal, not a wrong call.

use std::mem::size_of;

// The generic ioctl encoding (direction in bits 30..31, size in 16..29). Alpha, MIPS, PowerPC
// and SPARC encode differently; the crate refuses to build there rather than call wrong numbers.
#[cfg(any(
    target_arch = "mips",
    target_arch = "mips64",
    target_arch = "powerpc",
    target_arch = "powerpc64",
    target_arch = "sparc",
    target_arch = "sparc64"
))]
compile_error!("the userfaultfd ioctl numbers here use the generic _IOC encoding");

const IOC_WRITE: u64 = 1;
const IOC_READ: u64 = 2;

const fn ioc(dir: u64, ty: u64, nr: u64, size: usize) -> u64 {
    (dir << 30) | ((size as u64) << 16) | (ty << 8) | nr
}

/// `USERFAULTFD_IOC`, the type byte of `/dev/userfaultfd`'s ioctl.
const USERFAULTFD_IOC: u64 = 0xAA;
/// The `userfaultfd` flag (and `USERFAULTFD_IOC_NEW`'s) for a descriptor that takes only the
/// faults of user-mode instructions; allowed without privilege.
pub const UFFD_USER_MODE_ONLY: i32 = 1;
/// `USERFAULTFD_IOC_NEW = _IO(0xAA, 0x00)`: a new userfaultfd from `/dev/userfaultfd`.
pub const USERFAULTFD_IOC_NEW: u64 = ioc(0, USERFAULTFD_IOC, 0x00, 0);

/// `UFFD_API`, the only API version.
pub const UFFD_API: u64 = 0xAA;
/// The type byte of the userfaultfd's own ioctls.
const UFFDIO: u64 = 0xAA;

/// The command numbers: bit `n` of the kernel's `ioctls` answers says command `n` is available.
pub const NR_REGISTER: u64 = 0x00;
pub const NR_UNREGISTER: u64 = 0x01;
pub const NR_WAKE: u64 = 0x02;
pub const NR_COPY: u64 = 0x03;
pub const NR_ZEROPAGE: u64 = 0x04;
pub const NR_MOVE: u64 = 0x05;
pub const NR_WRITEPROTECT: u64 = 0x06;
pub const NR_API: u64 = 0x3F;

pub const UFFDIO_API: u64 = ioc(IOC_READ | IOC_WRITE, UFFDIO, NR_API, size_of::<UffdioApi>());
pub const UFFDIO_REGISTER: u64 =
    ioc(IOC_READ | IOC_WRITE, UFFDIO, NR_REGISTER, size_of::<UffdioRegister>());
pub const UFFDIO_UNREGISTER: u64 = ioc(IOC_READ, UFFDIO, NR_UNREGISTER, size_of::<UffdioRange>());
pub const UFFDIO_WAKE: u64 = ioc(IOC_READ, UFFDIO, NR_WAKE, size_of::<UffdioRange>());
pub const UFFDIO_COPY: u64 = ioc(IOC_READ | IOC_WRITE, UFFDIO, NR_COPY, size_of::<UffdioCopy>());
pub const UFFDIO_ZEROPAGE: u64 =
    ioc(IOC_READ | IOC_WRITE, UFFDIO, NR_ZEROPAGE, size_of::<UffdioZeropage>());
pub const UFFDIO_MOVE: u64 = ioc(IOC_READ | IOC_WRITE, UFFDIO, NR_MOVE, size_of::<UffdioMove>());
pub const UFFDIO_WRITEPROTECT: u64 =
    ioc(IOC_READ | IOC_WRITE, UFFDIO, NR_WRITEPROTECT, size_of::<UffdioWriteprotect>());

pub const UFFDIO_REGISTER_MODE_MISSING: u64 = 1 << 0;
pub const UFFDIO_REGISTER_MODE_WP: u64 = 1 << 1;

pub const UFFDIO_COPY_MODE_DONTWAKE: u64 = 1 << 0;
/// The copied pages come in write-protected (the range registered with `MODE_WP`).
pub const UFFDIO_COPY_MODE_WP: u64 = 1 << 1;
pub const UFFDIO_WRITEPROTECT_MODE_WP: u64 = 1 << 0;
pub const UFFDIO_MOVE_MODE_DONTWAKE: u64 = 1 << 0;

pub const UFFD_EVENT_PAGEFAULT: u8 = 0x12;
pub const UFFD_EVENT_FORK: u8 = 0x13;
pub const UFFD_EVENT_REMAP: u8 = 0x14;
pub const UFFD_EVENT_REMOVE: u8 = 0x15;
pub const UFFD_EVENT_UNMAP: u8 = 0x16;

pub const UFFD_PAGEFAULT_FLAG_WRITE: u64 = 1 << 0;
pub const UFFD_PAGEFAULT_FLAG_WP: u64 = 1 << 1;
pub const UFFD_PAGEFAULT_FLAG_MINOR: u64 = 1 << 2;

/// `struct uffdio_api`.
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub struct UffdioApi {
    pub api: u64,
    pub features: u64,
    pub ioctls: u64,
}

/// `struct uffdio_range`.
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub struct UffdioRange {
    pub start: u64,
    pub len: u64,
}

/// `struct uffdio_register`.
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub struct UffdioRegister {
    pub range: UffdioRange,
    pub mode: u64,
    pub ioctls: u64,
}

/// `struct uffdio_copy`.
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub struct UffdioCopy {
    pub dst: u64,
    pub src: u64,
    pub len: u64,
    pub mode: u64,
    pub copy: i64,
}

/// `struct uffdio_zeropage`.
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub struct UffdioZeropage {
    pub range: UffdioRange,
    pub mode: u64,
    pub zeropage: i64,
}

/// `struct uffdio_move` (Linux 6.8).
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub struct UffdioMove {
    pub dst: u64,
    pub src: u64,
    pub len: u64,
    pub mode: u64,
    pub moved: i64,
}

/// `struct uffdio_writeprotect`.
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub struct UffdioWriteprotect {
    pub range: UffdioRange,
    pub mode: u64,
}

/// `struct uffd_msg` (packed in the header; its fields fall on natural offsets anyway): the
/// event byte, reserved bytes, and a 24-byte union read field by field in [`super::event`].
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct UffdMsg {
    pub event: u8,
    pub reserved1: u8,
    pub reserved2: u16,
    pub reserved3: u32,
    pub arg: [u8; 24],
}

impl UffdMsg {
    pub const ZERO: UffdMsg =
        UffdMsg { event: 0, reserved1: 0, reserved2: 0, reserved3: 0, arg: [0; 24] };

    /// The native-endian `u64` at byte `at` of the union.
    pub fn u64_at(&self, at: usize) -> u64 {
        let mut b = [0u8; 8];
        b.copy_from_slice(&self.arg[at..at + 8]);
        u64::from_ne_bytes(b)
    }

    /// The native-endian `u32` at byte `at` of the union.
    pub fn u32_at(&self, at: usize) -> u32 {
        let mut b = [0u8; 4];
        b.copy_from_slice(&self.arg[at..at + 4]);
        u32::from_ne_bytes(b)
    }
}

// The kernel reads and writes exactly these sizes; a mismatch would change every ioctl number.
const _: () = assert!(size_of::<UffdioApi>() == 24);
const _: () = assert!(size_of::<UffdioRange>() == 16);
const _: () = assert!(size_of::<UffdioRegister>() == 32);
const _: () = assert!(size_of::<UffdioCopy>() == 40);
const _: () = assert!(size_of::<UffdioZeropage>() == 32);
const _: () = assert!(size_of::<UffdioMove>() == 40);
const _: () = assert!(size_of::<UffdioWriteprotect>() == 24);
const _: () = assert!(size_of::<UffdMsg>() == 32);

#[cfg(test)]
mod tests {
    use super::*;

    /// The numbers the C header gives for the ioctls it has (gcc on x86_64, Debian's header),
    /// and `UFFDIO_MOVE` from the kernel's `_IOWR(UFFDIO, 0x05, struct uffdio_move)`.
    #[test]
    fn ioctl_numbers_are_the_headers() {
        assert_eq!(USERFAULTFD_IOC_NEW, 0xaa00);
        assert_eq!(UFFDIO_API, 0xc018_aa3f);
        assert_eq!(UFFDIO_REGISTER, 0xc020_aa00);
        assert_eq!(UFFDIO_UNREGISTER, 0x8010_aa01);
        assert_eq!(UFFDIO_WAKE, 0x8010_aa02);
        assert_eq!(UFFDIO_COPY, 0xc028_aa03);
        assert_eq!(UFFDIO_ZEROPAGE, 0xc020_aa04);
        assert_eq!(UFFDIO_MOVE, 0xc028_aa05);
        assert_eq!(UFFDIO_WRITEPROTECT, 0xc018_aa06);
    }
}
