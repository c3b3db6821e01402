//! A memfd arena that cannot be made gives no pool and an error naming the read mode: with no
//! file descriptor left (`RLIMIT_NOFILE` lowered to the descriptors already open), `map` mode and
//! the memfd backing are refused, and the anonymous backing still works. One test in its own
//! binary, since it lowers a limit of the whole process for a moment.

use zsmalloc_core::{Backing, Error, Pool, PoolConfig, ReadMode};

#[test]
fn no_memfd_no_pool() {
    let mut old = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: `old` is a valid rlimit to fill.
    assert_eq!(unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut old) }, 0);
    let none = libc::rlimit { rlim_cur: 0, rlim_max: old.rlim_max };
    // SAFETY: a valid rlimit; restored below before any assertion can fail.
    assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &none) }, 0);
    let map = Pool::new(PoolConfig { read_mode: ReadMode::Map, ..Default::default() });
    let memfd = Pool::new(PoolConfig {
        read_mode: ReadMode::Contiguous,
        backing: Backing::Memfd,
        ..Default::default()
    });
    let anonymous = Pool::new(PoolConfig::default());
    // SAFETY: restores the limit read above.
    assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &old) }, 0);
    for (mode, got) in [("map", map), ("contiguous", memfd)] {
        match got {
            Err(e @ Error::Config { setting: "read_mode", .. }) => {
                let m = e.to_string();
                assert!(m.contains(&format!("'{mode}'")) && m.contains("memfd_create"), "{m}");
                assert_eq!(e.errno(), libc::EINVAL);
            }
            other => panic!("{mode}: {other:?}"),
        }
    }
    let p = anonymous.expect("the anonymous backing needs no descriptor");
    let h = p.store(b"still works").unwrap();
    assert_eq!(p.read_to_vec(&h).unwrap(), b"still works");
}
