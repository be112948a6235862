//! A call's directories come from the handles its grant holds. WASI's
//! `get-directories` is replaced by one that hands the guest the mounts
//! [`sandbox`](crate::capability::wasi::sandbox) made from those handles,
//! instead of the preopens WASI would open by path (its builder takes only
//! paths: a handle had to be named by `/proc/self/fd/N`, a walk through
//! procfs on every call, about 6 µs of a 30 µs `read_file`).
//!
//! What the guest gets is what wasmtime-wasi's own preopens are: a
//! `Descriptor::Dir` of an `O_PATH` directory descriptor, with the
//! permissions of the grant, resolved beneath by the same sandboxed path
//! resolution.

use wasmtime::component::{Linker, Resource};
use wasmtime_wasi::filesystem::{Descriptor, WasiFilesystemView};

use super::state::CallState;

/// The WASI preopens interface as wasmtime-wasi defines it (semver
/// matching makes every 0.2.x import of a guest resolve to it).
const FILESYSTEM_PREOPENS: &str = "wasi:filesystem/preopens@0.2.12";

/// Replace `get-directories` in `linker` (after WASI was added) by one
/// that serves the call's mounts.
pub(super) fn mount_held_directories(linker: &mut Linker<CallState>) -> wasmtime::Result<()> {
    linker.allow_shadowing(true);
    let mut preopens = linker.instance(FILESYSTEM_PREOPENS)?;
    preopens.func_wrap("get-directories", |mut store, (): ()| {
        let state = store.data_mut();
        let mounts = state.mounts.clone();
        let view = state.filesystem();
        let mut out: Vec<(Resource<Descriptor>, String)> = Vec::with_capacity(mounts.len());
        for (dir, guest) in mounts {
            out.push((view.table.push(Descriptor::Dir(dir))?, guest));
        }
        Ok((out,))
    })?;
    linker.allow_shadowing(false);
    Ok(())
}
