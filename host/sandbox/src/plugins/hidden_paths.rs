//! Paths `.rooignore` hides are unreachable from inside the sandbox
//! ([`Hidden`](crate::capability::Hidden)): every WASI filesystem method that takes a path asks first
//! and answers `access` for a hidden one, and directory listings leave
//! hidden entries out. `open-at` is wrapped in `special_files`; this module
//! wraps the rest by name and hands what passes to wasmtime-wasi's own
//! implementation. A call without hidden paths (no `.rooignore`) goes
//! straight through.

use std::sync::Arc;

use wasmtime::StoreContextMut;
use wasmtime::component::{Linker, Resource};
use wasmtime_wasi::filesystem::{Descriptor, WasiFilesystemView};
use wasmtime_wasi::p2::FsError;
use wasmtime_wasi::p2::bindings::filesystem::types::{
    self as fs, DescriptorStat, DirectoryEntry, DirectoryEntryStream, ErrorCode, HostDescriptor,
    HostDirectoryEntryStream, MetadataHashValue, NewTimestamp, PathFlags,
};

use super::special_files::FILESYSTEM_TYPES;
use super::state::CallState;

/// What a path check decided.
enum Check {
    Go,
    Refuse(ErrorCode),
}

/// Whether `path`, relative to the directory `fd`, may be used.
fn check(
    store: &mut StoreContextMut<'_, CallState>,
    fd: &Resource<Descriptor>,
    path: &str,
    follow: bool,
) -> wasmtime::Result<Check> {
    let Some(hidden) = store.data().hidden.clone() else {
        return Ok(Check::Go);
    };
    let view = store.data_mut().filesystem();
    let dir = match view.table.get(fd)? {
        Descriptor::Dir(d) => Arc::clone(&d.dir),
        Descriptor::File(_) => return Ok(Check::Refuse(ErrorCode::NotDirectory)),
    };
    Ok(if hidden.blocks_at(&dir, path, follow) {
        tracing::debug!("refused a path .rooignore hides: {path:?}");
        Check::Refuse(ErrorCode::Access)
    } else {
        Check::Go
    })
}

/// A method's result as the guest gets it: an error code, or a trap.
fn finish<T>(
    store: &mut StoreContextMut<'_, CallState>,
    r: Result<T, FsError>,
) -> wasmtime::Result<(Result<T, ErrorCode>,)> {
    match r {
        Ok(v) => Ok((Ok(v),)),
        Err(e) => {
            let mut view = store.data_mut().filesystem();
            Ok((Err(fs::Host::convert_error_code(&mut view, e)?),))
        }
    }
}

fn follows(flags: PathFlags) -> bool {
    flags.contains(PathFlags::SYMLINK_FOLLOW)
}

type Path1 = (Resource<Descriptor>, String);
type FlagsPath = (Resource<Descriptor>, PathFlags, String);

/// Wrap every path-taking method of `wasi:filesystem/types` (but
/// `open-at`) and `read-directory` in `linker`, after WASI was added.
pub(super) fn hide_ignored_paths(linker: &mut Linker<CallState>) -> wasmtime::Result<()> {
    linker.allow_shadowing(true);
    let mut types = linker.instance(FILESYSTEM_TYPES)?;
    types.func_wrap_async(
        "[method]descriptor.create-directory-at",
        |mut store, (fd, path): Path1| {
            Box::new(async move {
                if let Check::Refuse(e) = check(&mut store, &fd, &path, false)? {
                    return Ok((Err(e),));
                }
                let mut view = store.data_mut().filesystem();
                let r = HostDescriptor::create_directory_at(&mut view, fd, path).await;
                finish(&mut store, r)
            })
        },
    )?;
    types.func_wrap_async(
        "[method]descriptor.stat-at",
        |mut store, (fd, flags, path): FlagsPath| {
            Box::new(async move {
                if let Check::Refuse(e) = check(&mut store, &fd, &path, follows(flags))? {
                    return Ok((Err::<DescriptorStat, _>(e),));
                }
                let mut view = store.data_mut().filesystem();
                let r = HostDescriptor::stat_at(&mut view, fd, flags, path).await;
                finish(&mut store, r)
            })
        },
    )?;
    types.func_wrap_async(
        "[method]descriptor.metadata-hash-at",
        |mut store, (fd, flags, path): FlagsPath| {
            Box::new(async move {
                if let Check::Refuse(e) = check(&mut store, &fd, &path, follows(flags))? {
                    return Ok((Err::<MetadataHashValue, _>(e),));
                }
                let mut view = store.data_mut().filesystem();
                let r = HostDescriptor::metadata_hash_at(&mut view, fd, flags, path).await;
                finish(&mut store, r)
            })
        },
    )?;
    types.func_wrap_async(
        "[method]descriptor.set-times-at",
        |mut store,
         (fd, flags, path, atim, mtim): (
            Resource<Descriptor>,
            PathFlags,
            String,
            NewTimestamp,
            NewTimestamp,
        )| {
            Box::new(async move {
                if let Check::Refuse(e) = check(&mut store, &fd, &path, follows(flags))? {
                    return Ok((Err(e),));
                }
                let mut view = store.data_mut().filesystem();
                let r = HostDescriptor::set_times_at(&mut view, fd, flags, path, atim, mtim).await;
                finish(&mut store, r)
            })
        },
    )?;
    types.func_wrap_async(
        "[method]descriptor.link-at",
        |mut store,
         (fd, flags, old, new_fd, new): (
            Resource<Descriptor>,
            PathFlags,
            String,
            Resource<Descriptor>,
            String,
        )| {
            Box::new(async move {
                for (d, p, follow) in [(&fd, &old, follows(flags)), (&new_fd, &new, false)] {
                    if let Check::Refuse(e) = check(&mut store, d, p, follow)? {
                        return Ok((Err(e),));
                    }
                }
                let mut view = store.data_mut().filesystem();
                let r = HostDescriptor::link_at(&mut view, fd, flags, old, new_fd, new).await;
                finish(&mut store, r)
            })
        },
    )?;
    types.func_wrap_async(
        "[method]descriptor.readlink-at",
        |mut store, (fd, path): Path1| {
            Box::new(async move {
                if let Check::Refuse(e) = check(&mut store, &fd, &path, false)? {
                    return Ok((Err::<String, _>(e),));
                }
                let mut view = store.data_mut().filesystem();
                let r = HostDescriptor::readlink_at(&mut view, fd, path).await;
                finish(&mut store, r)
            })
        },
    )?;
    types.func_wrap_async(
        "[method]descriptor.remove-directory-at",
        |mut store, (fd, path): Path1| {
            Box::new(async move {
                if let Check::Refuse(e) = check(&mut store, &fd, &path, false)? {
                    return Ok((Err(e),));
                }
                let mut view = store.data_mut().filesystem();
                let r = HostDescriptor::remove_directory_at(&mut view, fd, path).await;
                finish(&mut store, r)
            })
        },
    )?;
    types.func_wrap_async(
        "[method]descriptor.unlink-file-at",
        |mut store, (fd, path): Path1| {
            Box::new(async move {
                if let Check::Refuse(e) = check(&mut store, &fd, &path, false)? {
                    return Ok((Err(e),));
                }
                let mut view = store.data_mut().filesystem();
                let r = HostDescriptor::unlink_file_at(&mut view, fd, path).await;
                finish(&mut store, r)
            })
        },
    )?;
    types.func_wrap_async(
        "[method]descriptor.symlink-at",
        |mut store, (fd, target, path): (Resource<Descriptor>, String, String)| {
            Box::new(async move {
                // The link itself may not be hidden; where it points is
                // checked when something goes through it.
                if let Check::Refuse(e) = check(&mut store, &fd, &path, false)? {
                    return Ok((Err(e),));
                }
                let mut view = store.data_mut().filesystem();
                let r = HostDescriptor::symlink_at(&mut view, fd, target, path).await;
                finish(&mut store, r)
            })
        },
    )?;
    types.func_wrap_async(
        "[method]descriptor.rename-at",
        |mut store, (fd, old, new_fd, new): (Resource<Descriptor>, String, Resource<Descriptor>, String)| {
            Box::new(async move {
                for (d, p) in [(&fd, &old), (&new_fd, &new)] {
                    if let Check::Refuse(e) = check(&mut store, d, p, false)? {
                        return Ok((Err(e),));
                    }
                }
                // A directory holding a hidden path keeps its name: under
                // another one a pattern anchored to it would not match.
                if let Some(hidden) = store.data().hidden.clone() {
                    let view = store.data_mut().filesystem();
                    if let Descriptor::Dir(d) = view.table.get(&fd)?
                        && hidden.hides_below(&d.dir, &old)
                    {
                        return Ok((Err(ErrorCode::Access),));
                    }
                }
                let mut view = store.data_mut().filesystem();
                let r = HostDescriptor::rename_at(&mut view, fd, old, new_fd, new).await;
                finish(&mut store, r)
            })
        },
    )?;
    types.func_wrap_async(
        "[method]descriptor.read-directory",
        |mut store, (fd,): (Resource<Descriptor>,)| {
            Box::new(async move {
                let place = match store.data().hidden.clone() {
                    None => None,
                    Some(hidden) => {
                        let view = store.data_mut().filesystem();
                        match view.table.get(&fd)? {
                            Descriptor::Dir(d) => match hidden.place_of(&*d.dir) {
                                Some(p) => Some(p),
                                None => return Ok((Err(ErrorCode::Access),)),
                            },
                            Descriptor::File(_) => return Ok((Err(ErrorCode::NotDirectory),)),
                        }
                    }
                };
                let mut view = store.data_mut().filesystem();
                let r = HostDescriptor::read_directory(&mut view, fd).await;
                if let (Ok(stream), Some(place)) = (&r, place) {
                    store.data_mut().listings.insert(stream.rep(), place);
                }
                finish(&mut store, r)
            })
        },
    )?;
    types.func_wrap_async(
        "[method]directory-entry-stream.read-directory-entry",
        |mut store, (stream,): (Resource<DirectoryEntryStream>,)| {
            Box::new(async move {
                let hidden = store.data().hidden.clone();
                let place = store.data().listings.get(&stream.rep()).cloned();
                loop {
                    let mut view = store.data_mut().filesystem();
                    let r = HostDirectoryEntryStream::read_directory_entry(
                        &mut view,
                        Resource::new_borrow(stream.rep()),
                    )
                    .await;
                    if let (Ok(Some(entry)), Some(h), Some(p)) = (&r, &hidden, &place)
                        && h.blocks_entry(p, &entry.name)
                    {
                        continue;
                    }
                    return finish::<Option<DirectoryEntry>>(&mut store, r);
                }
            })
        },
    )?;
    linker.allow_shadowing(false);
    Ok(())
}
