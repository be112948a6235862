//! Reading an inotify queue dry, for the host's watches that keep what is
//! known of a directory true between looks (a workspace's missing top
//! entries, its skill folders): each reads every queued event before it
//! trusts what it knows.

#[cfg(target_os = "linux")]
use std::ffi::OsStr;
#[cfg(target_os = "linux")]
use std::io::{self, ErrorKind};

#[cfg(target_os = "linux")]
use inotify::{Event, EventMask, Inotify, Watches};

/// Bytes read at once: room for many events (one is at most 16 bytes and
/// a name of up to 256).
#[cfg(target_os = "linux")]
const BUFFER: usize = 4096;

/// An inotify instance and the buffer its events are read into. The
/// buffer is kept: a turn looks several times, almost always finding
/// nothing, and zeroing a fresh 4 KiB each time cost more than the read.
#[cfg(target_os = "linux")]
pub struct Queue {
    fd: Inotify,
    buffer: Box<[u8]>,
}

#[cfg(target_os = "linux")]
impl Queue {
    /// A new, non-blocking inotify instance.
    pub fn init() -> io::Result<Self> {
        Ok(Self {
            fd: Inotify::init()?,
            buffer: vec![0; BUFFER].into_boxed_slice(),
        })
    }

    /// What is watched, to add or remove a watch.
    pub fn watches(&self) -> Watches {
        self.fd.watches()
    }

    /// Hand every queued event to `each` until none is left. `Ok(true)`
    /// when the kernel dropped events (its queue overflowed): the caller
    /// knows nothing of its directories any more. An error is the
    /// descriptor failing: the same, for good.
    pub fn drain(&mut self, mut each: impl FnMut(Event<&OsStr>)) -> io::Result<bool> {
        let mut lost = false;
        loop {
            let events = match self.fd.read_events(&mut self.buffer) {
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
}
