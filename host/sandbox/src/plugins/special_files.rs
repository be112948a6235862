//! No plugin opens a FIFO, socket or device. Opening a FIFO blocks the
//! opening thread until a writer comes (a device may block too), inside a
//! host call where no epoch deadline reaches: a hostile workspace could
//! hang a call that way. WASI's `open-at` is wrapped: the target is looked
//! at first (with the guest's own symlink flags) and anything but a regular
//! file or a directory is refused with `access`, before any open.
//!
//! The engine still runs each call on a thread of its own and abandons it
//! at its deadline, for what this cannot see (another process swapping a
//! file for a FIFO between the look and the open).

use wasmtime::component::{Linker, Resource};
use wasmtime_wasi::filesystem::{Descriptor, WasiFilesystemView};
use wasmtime_wasi::p2::bindings::filesystem::types::{
    DescriptorFlags, DescriptorType, ErrorCode, Host, HostDescriptor, OpenFlags, PathFlags,
};

use super::state::CallState;

/// The WASI filesystem interface as wasmtime-wasi defines it (semver
/// matching makes every 0.2.x import of a guest resolve to it).
const FILESYSTEM_TYPES: &str = "wasi:filesystem/types@0.2.12";

type OpenArgs = (
    Resource<Descriptor>,
    PathFlags,
    String,
    OpenFlags,
    DescriptorFlags,
);

/// Replace `[method]descriptor.open-at` in `linker` (after WASI was added)
/// by one that refuses special files.
pub(super) fn refuse_special_files(linker: &mut Linker<CallState>) -> wasmtime::Result<()> {
    linker.allow_shadowing(true);
    let mut types = linker.instance(FILESYSTEM_TYPES)?;
    types.func_wrap_async(
        "[method]descriptor.open-at",
        |mut store, (fd, path_flags, path, oflags, flags): OpenArgs| {
            Box::new(async move {
                let mut view = store.data_mut().filesystem();
                let dir = || Resource::<Descriptor>::new_borrow(fd.rep());
                match HostDescriptor::stat_at(&mut view, dir(), path_flags, path.clone()).await {
                    // Only regular files and directories are opened (a
                    // symlink not followed fails in `open-at` itself);
                    // FIFOs and sockets show as `unknown` here.
                    Ok(st)
                        if !matches!(
                            st.type_,
                            DescriptorType::RegularFile
                                | DescriptorType::Directory
                                | DescriptorType::SymbolicLink
                        ) =>
                    {
                        tracing::debug!("refused to open the special file {path:?}");
                        return Ok((Err(ErrorCode::Access),));
                    }
                    // Missing (a create), or any other error: `open-at`
                    // itself says what is wrong.
                    _ => {}
                }
                let opened =
                    HostDescriptor::open_at(&mut view, dir(), path_flags, path, oflags, flags)
                        .await;
                match opened {
                    Ok(d) => Ok((Ok(d),)),
                    Err(e) => Ok((Err(view.convert_error_code(e)?),)),
                }
            })
        },
    )?;
    linker.allow_shadowing(false);
    Ok(())
}
