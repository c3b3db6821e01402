//! The record of the pool's operations (`ZSMALLOC_TIER_RECORD`), as a lab text trace: a line
//! per store, read and free, an object named by its page's number in the reserve. The lines
//! go into a fixed buffer of the tier's own memory, formatted without allocating (the handler
//! may not use the program's heap), and are written when it fills, before a fork and at exit.
//! A failed write stops the recording; the program goes on.

use crate::sys;

const BUFFER: usize = 64 * 1024;
/// The longest line: "store", a 20-digit id, a 20-digit length, spaces and the newline.
const LONGEST_LINE: usize = 64;

pub struct Recorder {
    fd: i32,
    buf: usize,
    len: usize,
    /// Lines in the buffer, not yet written.
    pending: u64,
    /// Lines written to the file.
    pub written: u64,
    /// The OS error that stopped the recording (0: none).
    pub errno: i32,
    /// After the exit's flush: every line is written at once (a late free is kept too).
    direct: bool,
}

impl Recorder {
    /// The trace's descriptor (-1: none was opened).
    pub fn fd(&self) -> i32 {
        self.fd
    }

    /// The trace's descriptor moved to the lowest free number at or above `floor`
    /// (`zsmalloc_tier::fd_number`); where it cannot be, it stays.
    pub fn raise(&mut self, floor: i32) {
        if self.fd < 0 {
            return;
        }
        // SAFETY: the recorder's own descriptor, open while it is borrowed here.
        let fd = unsafe { std::os::fd::BorrowedFd::borrow_raw(self.fd) };
        if let Ok(copy) = zsmalloc_tier::fd_number::copy_above(fd, floor) {
            // SAFETY: the old number, the recorder's own, replaced by the copy.
            unsafe { libc::close(self.fd) };
            self.fd = std::os::fd::IntoRawFd::into_raw_fd(copy);
        }
    }

    /// Opens `path` (made by the command) and writes `header`, each line a comment. A file
    /// that cannot be opened or written gives a recorder that has stopped (its `errno` says
    /// why): the program is tiered all the same.
    pub fn open(path: &str, header: &[String]) -> Recorder {
        let mut r =
            Recorder { fd: -1, buf: 0, len: 0, pending: 0, written: 0, errno: 0, direct: false };
        let Ok(c) = std::ffi::CString::new(path) else {
            r.errno = libc::EINVAL;
            return r;
        };
        let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC | libc::O_CLOEXEC;
        // SAFETY: open of a NUL-terminated path; the descriptor is the recorder's.
        r.fd = unsafe { libc::open(c.as_ptr(), flags, 0o644) };
        if r.fd < 0 {
            r.errno = std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO);
            return r;
        }
        match sys::own_memory(BUFFER) {
            Some(buf) => r.buf = buf,
            None => {
                r.errno = libc::ENOMEM;
                return r;
            }
        }
        r.put(b"# zsmalloc trace v1: store <id> <len> | read <id> <len> | free <id> | compact\n");
        for h in header {
            r.put(b"# ");
            r.put(h.as_bytes());
            r.put(b"\n");
        }
        r.flush();
        r
    }

    fn put(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(BUFFER) {
            if self.len + chunk.len() > BUFFER {
                self.flush();
            }
            // SAFETY: the buffer is BUFFER bytes of the recorder's own memory and the chunk
            // fits after `len`.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    chunk.as_ptr(),
                    (self.buf + self.len) as *mut u8,
                    chunk.len(),
                )
            };
            self.len += chunk.len();
        }
    }

    fn number(&mut self, mut n: u64) {
        let mut digits = [0u8; 20];
        let mut at = digits.len();
        loop {
            at -= 1;
            digits[at] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        self.put(&digits[at..]);
    }

    fn line(&mut self, op: &[u8], id: u64, len: Option<u64>) {
        if self.errno != 0 {
            return;
        }
        if self.len + LONGEST_LINE > BUFFER {
            self.flush();
        }
        self.put(op);
        self.put(b" ");
        self.number(id);
        if let Some(len) = len {
            self.put(b" ");
            self.number(len);
        }
        self.put(b"\n");
        self.pending += 1;
        if self.direct {
            self.flush();
        }
    }

    pub fn store(&mut self, id: usize, len: usize) {
        self.line(b"store", id as u64, Some(len as u64));
    }

    pub fn read(&mut self, id: usize, len: usize) {
        self.line(b"read", id as u64, Some(len as u64));
    }

    pub fn free(&mut self, id: usize) {
        self.line(b"free", id as u64, None);
    }

    /// Writes what the buffer holds; a failure stops the recording.
    pub fn flush(&mut self) {
        let mut at = 0;
        while at < self.len && self.errno == 0 {
            // SAFETY: write(2) of the buffer's filled part after `at`.
            let n = unsafe {
                libc::write(self.fd, (self.buf + at) as *const libc::c_void, self.len - at)
            };
            if n > 0 {
                at += n as usize;
                continue;
            }
            let err = std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO);
            if n < 0 && err == libc::EINTR {
                continue;
            }
            // A write of nothing would repeat forever: the disk is full.
            self.errno = if n == 0 { libc::ENOSPC } else { err };
        }
        if self.errno == 0 {
            self.written += self.pending;
        }
        self.pending = 0;
        self.len = 0;
    }

    /// The program is ending: the buffer is written, and any line after it at once.
    pub fn at_exit(&mut self) {
        self.flush();
        self.direct = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_the_trace_format_and_counted_once_written() {
        let path = std::env::temp_dir().join(format!("record-test-{}.trace", std::process::id()));
        let p = path.to_str().unwrap();
        let mut r = Recorder::open(p, &["workload: test".into()]);
        assert_eq!(r.errno, 0);
        r.store(0, 4096);
        r.read(usize::MAX, 1);
        r.free(1_234_567);
        assert_eq!(r.written, 0, "buffered, not yet written");
        for i in 0..5000 {
            r.store(i, 100 + i % 7);
        }
        assert!(r.written > 0, "a full buffer is written");
        r.at_exit();
        r.free(9);
        assert_eq!(r.written, 5004, "after the exit's flush, each line at once");
        let text = std::fs::read_to_string(&path).unwrap();
        let _ = std::fs::remove_file(&path);
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].starts_with("# zsmalloc trace v1"));
        assert_eq!(lines[1], "# workload: test");
        assert_eq!(lines[2], "store 0 4096");
        assert_eq!(lines[3], format!("read {} 1", usize::MAX));
        assert_eq!(lines[4], "free 1234567");
        assert_eq!(lines[5 + 4999], "store 4999 101");
        assert_eq!(lines.last(), Some(&"free 9"));
        assert_eq!(lines.len(), 2 + 5004);
    }

    #[test]
    fn a_failed_write_stops_the_recording() {
        let mut r = Recorder::open("/dev/full", &[]);
        assert_eq!(r.errno, libc::ENOSPC);
        r.store(1, 2);
        r.flush();
        assert_eq!((r.written, r.errno), (0, libc::ENOSPC));
        let r = Recorder::open("/nonexistent/x", &[]);
        assert_eq!(r.errno, libc::ENOENT);
    }
}
