//! `sync_file_range(2)`: start, or start and wait for, the write-back of a
//! byte range of a file, without the journal commit `fdatasync` implies.
//! New files are written back while the next ones are prepared, and large
//! ones chunk by chunk so that their pages can be dropped as they go.
//! rustix has no wrapper for it.

use std::io;
use std::os::fd::{AsFd, AsRawFd};

/// How far to go with the range's dirty pages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteBack {
    /// Queue them for write-back and return (`SYNC_FILE_RANGE_WRITE`).
    Start,
    /// Wait for earlier write-back, queue the rest and wait for it too
    /// (`WAIT_BEFORE | WRITE | WAIT_AFTER`): the range is clean after.
    Wait,
}

/// `sync_file_range(fd, offset, len, flags)`; a `len` of 0 means "to the end
/// of the file". It writes no metadata and flushes no disk cache: a
/// durability point still needs `fdatasync` or `syncfs`.
pub fn sync_range(fd: impl AsFd, offset: u64, len: u64, how: WriteBack) -> io::Result<()> {
    let flags = match how {
        WriteBack::Start => libc::SYNC_FILE_RANGE_WRITE,
        WriteBack::Wait => {
            libc::SYNC_FILE_RANGE_WAIT_BEFORE | libc::SYNC_FILE_RANGE_WRITE | libc::SYNC_FILE_RANGE_WAIT_AFTER
        }
    };
    let too_far = || io::Error::from_raw_os_error(libc::EINVAL);
    let offset = libc::off64_t::try_from(offset).map_err(|_| too_far())?;
    let len = libc::off64_t::try_from(len).map_err(|_| too_far())?;
    // SAFETY: a valid descriptor while `fd` is borrowed; the call takes
    // integers only and touches no memory of ours.
    let rc = unsafe { libc::sync_file_range(fd.as_fd().as_raw_fd(), offset, len, flags) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn writes_back_a_file_and_rejects_a_bad_descriptor_kind() {
        let mut f = tempfile::tempfile().unwrap();
        f.write_all(&[7u8; 10_000]).unwrap();
        sync_range(&f, 0, 0, WriteBack::Start).unwrap();
        sync_range(&f, 0, 4096, WriteBack::Wait).unwrap();
        // A pipe is not a file: ESPIPE, reported rather than ignored.
        let (r, _w) = std::io::pipe().unwrap();
        assert_eq!(sync_range(&r, 0, 0, WriteBack::Start).unwrap_err().raw_os_error(), Some(libc::ESPIPE));
    }
}
