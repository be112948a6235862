//! Reading an inotify queue dry, for the host's watches that keep what is
//! known of a directory true between looks (a workspace's missing top
//! entries, its skill folders): each reads every queued event before it
//! trusts what it knows.

#[cfg(target_os = "linux")]
use std::ffi::OsStr;
#[cfg(target_os = "linux")]
use std::io::{self, ErrorKind};

#[cfg(target_os = "linux")]
use inotify::{Event, EventMask, Inotify};

/// Hand every event queued on `fd` to `each` until none is left (the
/// descriptor is non-blocking). `Ok(true)` when the kernel dropped events
/// (its queue overflowed): the caller knows nothing of its directories
/// any more. An error is the descriptor failing: the same, for good.
#[cfg(target_os = "linux")]
pub fn drain(fd: &mut Inotify, mut each: impl FnMut(Event<&OsStr>)) -> io::Result<bool> {
    let mut buffer = [0u8; 4096];
    let mut lost = false;
    loop {
        let events = match fd.read_events(&mut buffer) {
            Ok(events) => events,
            Err(e) if e.kind() == ErrorKind::WouldBlock => return Ok(lost),
            Err(e) => return Err(e),
        };
        for event in events {
            if event.mask.contains(EventMask::Q_OVERFLOW) {
                lost = true;
            } else {
                each(event);
            }
        }
    }
}
