//! Which CPUs a thread may run on: where a fault's handler runs against the faulting thread is
//! what the floor measures.

use std::io;

/// The CPUs this thread may run on, in order.
pub fn allowed() -> io::Result<Vec<usize>> {
    // SAFETY: an all-zero cpu_set_t is a valid empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a live cpu_set_t of the size passed; pid 0 is the calling thread.
    let r = unsafe { libc::sched_getaffinity(0, std::mem::size_of_val(&set), &mut set) };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: CPU_ISSET reads the live set within its fixed size.
    Ok((0..libc::CPU_SETSIZE as usize).filter(|&c| unsafe { libc::CPU_ISSET(c, &set) }).collect())
}

/// Keeps the calling thread on `cpu` alone.
pub fn pin_current_thread(cpu: usize) -> io::Result<()> {
    // SAFETY: an all-zero cpu_set_t is a valid empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    if cpu >= libc::CPU_SETSIZE as usize {
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    }
    // SAFETY: `cpu` is below CPU_SETSIZE, so CPU_SET writes inside the set.
    unsafe { libc::CPU_SET(cpu, &mut set) };
    // SAFETY: `set` is a live cpu_set_t of the size passed; pid 0 is the calling thread.
    let r = unsafe { libc::sched_setaffinity(0, std::mem::size_of_val(&set), &set) };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_pinned_runs_where_it_was_put() {
        let cpus = allowed().expect("affinity");
        assert!(!cpus.is_empty());
        let first = cpus[0];
        std::thread::spawn(move || {
            pin_current_thread(first).expect("pin");
            assert_eq!(allowed().expect("affinity"), vec![first]);
            // SAFETY: sched_getcpu takes no arguments and touches no memory of ours.
            assert_eq!(unsafe { libc::sched_getcpu() }, first as i32);
        })
        .join()
        .expect("the pinned thread");
    }
}
