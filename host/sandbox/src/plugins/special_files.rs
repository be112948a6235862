//! No plugin opens a FIFO, socket or device, and no `open-at` can block.
//! Opening a FIFO blocks the opening thread until a writer comes (a device
//! may block too), inside a host call where no epoch deadline reaches: a
//! hostile workspace could hang a call, and with it the runtime thread it
//! runs on. WASI's `open-at` is replaced by one that opens with
//! `O_NONBLOCK` (a FIFO opens at once, or fails with `ENXIO` when opened
//! for writing without a reader), looks at what it opened, and keeps it
//! only when it is a regular file or a directory; anything else is closed
//! and refused with `access`. The look is at the open descriptor, so
//! another process swapping a file for a FIFO between a look and an open
//! has no window.
//!
//! The rest is wasmtime-wasi's own `open-at` (`Dir::open_at`): the same
//! flags, the same permission check, the same sandboxed path resolution
//! (cap-primitives, which wasmtime-wasi's copy is taken from).

use std::path::Path;

use cap_primitives::fs::{FollowSymlinks, OpenOptions, OpenOptionsExt};
use rustix::fs::{FileType, OFlags};
use wasmtime::component::{Linker, Resource};
use wasmtime_wasi::filesystem::{Descriptor, Dir, File, WasiFilesystemView};
use wasmtime_wasi::p2::bindings::filesystem::types::{
    DescriptorFlags, ErrorCode, OpenFlags, PathFlags,
};
use wasmtime_wasi::{FsPerms, OpenMode};

use super::state::CallState;

/// The WASI filesystem interface as wasmtime-wasi defines it (semver
/// matching makes every 0.2.x import of a guest resolve to it).
pub(super) const FILESYSTEM_TYPES: &str = "wasi:filesystem/types@0.2.12";

type OpenArgs = (
    Resource<Descriptor>,
    PathFlags,
    String,
    OpenFlags,
    DescriptorFlags,
);

/// Replace `[method]descriptor.open-at` in `linker` (after WASI was added)
/// by one that refuses special files and never blocks.
pub(super) fn refuse_special_files(linker: &mut Linker<CallState>) -> wasmtime::Result<()> {
    linker.allow_shadowing(true);
    let mut types = linker.instance(FILESYSTEM_TYPES)?;
    types.func_wrap(
        "[method]descriptor.open-at",
        |mut store, (fd, path_flags, path, oflags, flags): OpenArgs| {
            let hidden = store.data().hidden.clone();
            let view = store.data_mut().filesystem();
            let dir = match view.table.get(&fd)? {
                Descriptor::Dir(d) => d.clone(),
                Descriptor::File(_) => return Ok((Err(ErrorCode::NotDirectory),)),
            };
            // `.rooignore`d paths are not there for a guest, before any
            // open (a create or a truncate would act at once).
            if let Some(h) = hidden
                && h.blocks_at(
                    &dir.dir,
                    &path,
                    path_flags.contains(PathFlags::SYMLINK_FOLLOW),
                )
            {
                tracing::debug!("refused a path .rooignore hides: {path:?}");
                return Ok((Err(ErrorCode::Access),));
            }
            match open_at(&dir, path_flags, &path, oflags, flags) {
                Ok(d) => Ok((Ok(view.table.push(d)?),)),
                Err(e) => Ok((Err(e),)),
            }
        },
    )?;
    linker.allow_shadowing(false);
    Ok(())
}

/// `open-at` under `dir`, as wasmtime-wasi does it, but opened with
/// `O_NONBLOCK` and kept only when it is a regular file or a directory.
fn open_at(
    dir: &Dir,
    path_flags: PathFlags,
    path: &str,
    oflags: OpenFlags,
    flags: DescriptorFlags,
) -> Result<Descriptor, ErrorCode> {
    let mut create = false;
    let mut open_mode = OpenMode::empty();
    let mut opts = OpenOptions::new();
    if oflags.contains(OpenFlags::CREATE) {
        if oflags.contains(OpenFlags::EXCLUSIVE) {
            opts.create_new(true);
        } else {
            opts.create(true);
        }
        create = true;
        opts.write(true);
        open_mode |= OpenMode::WRITE;
    }
    if oflags.contains(OpenFlags::TRUNCATE) {
        opts.truncate(true).write(true);
        open_mode |= OpenMode::WRITE;
    }
    if flags.contains(DescriptorFlags::READ) {
        opts.read(true);
        open_mode |= OpenMode::READ;
    }
    if flags.contains(DescriptorFlags::WRITE) {
        opts.write(true);
        open_mode |= OpenMode::WRITE;
    } else {
        // Opened for reading, so the OS lets it be opened; the permissions
        // refuse writes through it later.
        opts.read(true);
        open_mode |= OpenMode::READ;
    }
    opts._cap_fs_ext_follow(if path_flags.contains(PathFlags::SYMLINK_FOLLOW) {
        FollowSymlinks::Yes
    } else {
        FollowSymlinks::No
    });
    if flags.intersects(
        DescriptorFlags::FILE_INTEGRITY_SYNC
            | DescriptorFlags::DATA_INTEGRITY_SYNC
            | DescriptorFlags::REQUESTED_WRITE_SYNC,
    ) {
        return Err(ErrorCode::Unsupported);
    }
    if oflags.contains(OpenFlags::DIRECTORY)
        && oflags.intersects(OpenFlags::CREATE | OpenFlags::EXCLUSIVE | OpenFlags::TRUNCATE)
    {
        return Err(ErrorCode::Invalid);
    }
    if dir.perms == FsPerms::ReadOnly && (create || open_mode.contains(OpenMode::WRITE)) {
        return Err(ErrorCode::NotPermitted);
    }
    opts.custom_flags(OFlags::NONBLOCK.bits().cast_signed());
    let opened = match cap_primitives::fs::open(&dir.dir, Path::new(path), &opts) {
        Ok(f) => f,
        // A FIFO opened for writing with no reader: a special file.
        Err(e) if e.raw_os_error() == Some(rustix::io::Errno::NXIO.raw_os_error()) => {
            tracing::debug!("refused to open the special file {path:?}");
            return Err(ErrorCode::Access);
        }
        Err(e) => return Err(ErrorCode::from(e)),
    };
    let kind = rustix::fs::fstat(&opened)
        .map(|st| FileType::from_raw_mode(st.st_mode))
        .map_err(errno)?;
    match kind {
        FileType::Directory => Ok(Descriptor::Dir(Dir::new(
            opened, dir.perms, open_mode, true,
        ))),
        _ if oflags.contains(OpenFlags::DIRECTORY) => Err(ErrorCode::NotDirectory),
        FileType::RegularFile => {
            // Reads and writes of the file block as they normally would.
            // Of the flags `F_SETFL` sets, this open asked for
            // `O_NONBLOCK` alone (no append, direct I/O or no-atime):
            // clearing them all clears it, with no `F_GETFL` first.
            rustix::fs::fcntl_setfl(&opened, OFlags::empty()).map_err(errno)?;
            Ok(Descriptor::File(File::new(
                opened, dir.perms, open_mode, true,
            )))
        }
        _ => {
            tracing::debug!("refused to open the special file {path:?}");
            Err(ErrorCode::Access)
        }
    }
}

/// A failed system call as the guest sees it.
fn errno(e: rustix::io::Errno) -> ErrorCode {
    ErrorCode::from(std::io::Error::from(e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::time::Duration;

    /// Open `name` under `dir` on a thread of its own, so that an open
    /// that blocks fails the test instead of hanging it.
    fn open_in(
        dir: &std::path::Path,
        name: &str,
        flags: DescriptorFlags,
    ) -> Result<bool, ErrorCode> {
        let d = Dir::new(
            std::fs::File::open(dir).expect("dir"),
            FsPerms::ReadWrite,
            OpenMode::READ | OpenMode::WRITE,
            true,
        );
        let name = name.to_owned();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let r = open_at(&d, PathFlags::empty(), &name, OpenFlags::empty(), flags)
                .map(|d| matches!(d, Descriptor::Dir(_)));
            let _ = tx.send(r);
        });
        rx.recv_timeout(Duration::from_secs(60))
            .expect("open-at returned instead of blocking")
    }

    /// A FIFO is refused with `access` whether opened for reading (which
    /// would wait for a writer) or writing (which would wait for a reader),
    /// without blocking; regular files and directories open as before.
    #[test]
    fn a_fifo_is_refused_without_blocking_and_files_still_open() {
        let tmp = tempfile::tempdir().expect("tmp");
        let made = std::process::Command::new("mkfifo")
            .arg(tmp.path().join("fifo"))
            .status()
            .expect("mkfifo");
        assert!(made.success());
        std::fs::write(tmp.path().join("file.txt"), "x").expect("file");
        std::fs::create_dir(tmp.path().join("sub")).expect("sub");
        for flags in [DescriptorFlags::READ, DescriptorFlags::WRITE] {
            assert_eq!(
                open_in(tmp.path(), "fifo", flags),
                Err(ErrorCode::Access),
                "{flags:?}"
            );
        }
        assert_eq!(
            open_in(tmp.path(), "file.txt", DescriptorFlags::READ),
            Ok(false)
        );
        assert_eq!(open_in(tmp.path(), "sub", DescriptorFlags::READ), Ok(true));
        assert_eq!(
            open_in(tmp.path(), "missing", DescriptorFlags::READ),
            Err(ErrorCode::NoEntry)
        );
    }

    /// A file opened for reading is left blocking (`O_NONBLOCK` cleared),
    /// as wasmtime-wasi would have opened it.
    #[test]
    fn a_regular_file_is_left_blocking() {
        let tmp = tempfile::tempdir().expect("tmp");
        std::fs::write(tmp.path().join("file.txt"), "x").expect("file");
        let d = Dir::new(
            std::fs::File::open(tmp.path()).expect("dir"),
            FsPerms::ReadOnly,
            OpenMode::READ,
            true,
        );
        let opened = open_at(
            &d,
            PathFlags::empty(),
            "file.txt",
            OpenFlags::empty(),
            DescriptorFlags::READ,
        )
        .expect("opens");
        let Descriptor::File(f) = opened else {
            panic!("a file")
        };
        let fl = rustix::fs::fcntl_getfl(&*f.file).expect("flags");
        assert!(!fl.contains(OFlags::NONBLOCK));
        // Read-only preopens refuse writes before the OS sees them.
        assert!(matches!(
            open_at(
                &d,
                PathFlags::empty(),
                "file.txt",
                OpenFlags::empty(),
                DescriptorFlags::WRITE
            ),
            Err(ErrorCode::NotPermitted)
        ));
    }
}
