//! Builds the WASI context of one call from its [`Grant`] and nothing else:
//! no environment, no arguments, no inherited stdio, no sockets, no name
//! lookups; the workspace (or only its read roots) read-only and each write
//! root read-write. The network a grant allows goes only through
//! `wasi:http`, whose requests the host checks and sends itself
//! (`plugins::http`); WASI sockets stay off whatever the grant says.

use std::path::Path;
use std::sync::Arc;

use wasmtime_wasi::filesystem::Dir;
use wasmtime_wasi::{FsPerms, OpenMode, WasiCtx, WasiCtxBuilder};

use super::dirfd::DirFd;
use super::{GUEST_WORKSPACE, Grant, GrantError, Hidden, RelPath, Workspace, WorkspaceError};

/// The sandbox of one call, plus the facts the plugin may ask about.
pub struct Sandbox {
    /// WASI context to put in the call's store (no preopens: see `mounts`).
    pub ctx: WasiCtx,
    /// The directories the guest gets from `wasi:filesystem/preopens`, with
    /// the guest path of each: made from the handles the grant holds, so
    /// WASI never opens a path for them (the host serves `get-directories`
    /// from this list).
    pub mounts: Vec<(Dir, String)>,
    /// Normalised write roots, workspace-relative (for `workspace-info`).
    pub write_roots: Vec<String>,
    /// What the workspace's `.rooignore` hides from the guest, whatever
    /// the grant (a write root is readable too).
    pub hidden: Option<Arc<Hidden>>,
}

/// Build the sandbox of a call. Write roots that do not exist yet are
/// created (the grant allows writing there); a root reached through a
/// symlink, or that is not a directory, is refused.
pub fn sandbox(grant: &Grant) -> Result<Sandbox, GrantError> {
    if !grant.env.is_empty() {
        return Err(GrantError::Unsupported("environment variables"));
    }
    let mut b = WasiCtxBuilder::new();
    // Blocking filesystem calls run on the calling thread instead of a hop
    // through tokio's blocking pool (measured ~5x faster for small reads);
    // nothing here can block indefinitely (see `plugins::special_files`).
    // The mounts below are made the same way.
    b.allow_blocking_current_thread(true);
    b.allow_tcp(false);
    b.allow_udp(false);
    b.allow_ip_name_lookup(false);

    let has_roots = !grant.read_roots.is_empty() || !grant.write_roots.is_empty();
    // Every mount is made from a handle on the directory (opened through
    // [`Workspace`], which refuses a workspace that is no longer the one
    // its task pinned), never by a path checked before.
    let ws = if grant.read || has_roots {
        Some(match grant.held.get() {
            Some(held) => held.clone(),
            None => Workspace::open(&grant.workspace).map_err(|e| GrantError::Io {
                path: grant.workspace.clone(),
                source: std::io::Error::other(e.to_string()),
            })?,
        })
    } else {
        None
    };
    let hidden = match ws.as_ref() {
        // As of this moment (as a lookup now would find it), without
        // one where the workspace is known to have no `.rooignore`.
        Some(ws) => Hidden::of(&ws.as_of_now()).map_err(|source| GrantError::Io {
            path: grant.workspace.clone(),
            source,
        })?,
        None => None,
    };
    // A root `.rooignore` hides is not mounted at all.
    let refuse_hidden = |root: &Path, rel: &RelPath| match &hidden {
        Some(h) if !rel.is_root() && h.blocks(&rel.as_string()) => Err(GrantError::RootEscapes {
            root: root.to_path_buf(),
            reason: ".rooignore hides it".to_owned(),
        }),
        _ => Ok(()),
    };

    let mut mounts = Vec::new();
    if let (true, Some(ws)) = (grant.read, ws.as_ref()) {
        mounts.push(mount(
            ws.root(),
            ws.host_path(),
            GUEST_WORKSPACE.to_owned(),
            FsPerms::ReadOnly,
        )?);
    }
    if let (false, Some(ws)) = (grant.read, ws.as_ref()) {
        for root in &grant.read_roots {
            let rel = root_path(root)?;
            refuse_hidden(root, &rel)?;
            let dir = match ws.dir(&rel) {
                Ok(d) => d,
                // Nothing there to read; the guest sees no such directory.
                Err(e) if e.is_not_found() => continue,
                Err(e) => return Err(root_error(root, e)),
            };
            let host = ws.host_path().join(rel.to_path());
            mounts.push(mount(&dir, &host, guest_path(&rel), FsPerms::ReadOnly)?);
        }
    }
    let mut write_roots = Vec::new();
    if let Some(ws) = ws.as_ref() {
        for root in &grant.write_roots {
            let rel = root_path(root)?;
            refuse_hidden(root, &rel)?;
            let dir = ws.ensure_dir_fd(&rel).map_err(|e| root_error(root, e))?;
            let host = ws.host_path().join(rel.to_path());
            mounts.push(mount(&dir, &host, guest_path(&rel), FsPerms::ReadWrite)?);
            write_roots.push(rel.as_string());
        }
    }
    Ok(Sandbox {
        ctx: b.build(),
        mounts,
        write_roots,
        hidden: hidden.map(Arc::new),
    })
}

/// Guest path of a normalised workspace-relative directory.
fn guest_path(rel: &RelPath) -> String {
    if rel.is_root() {
        GUEST_WORKSPACE.to_owned()
    } else {
        format!("{GUEST_WORKSPACE}/{rel}")
    }
}

/// The directory `dir` holds (`host` names it in errors), to be mounted
/// at `guest`: a descriptor of its own (`O_PATH`, as WASI opens a
/// preopen) opened from the handle itself, so no path is resolved again
/// between the grant's checks and the guest's use. (WASI's own preopens
/// take a path; naming a handle by `/proc/self/fd/N` cost a walk through
/// procfs on every call.)
fn mount(
    dir: &DirFd,
    host: &Path,
    guest: String,
    perms: FsPerms,
) -> Result<(Dir, String), GrantError> {
    let dir_file = dir.reopen_for_mount().map_err(|e| GrantError::Preopen {
        path: host.to_path_buf(),
        message: e.to_string(),
    })?;
    let mode = match perms {
        FsPerms::ReadOnly => OpenMode::READ,
        FsPerms::ReadWrite => OpenMode::READ | OpenMode::WRITE,
    };
    Ok((Dir::new(dir_file, perms, mode, true), guest))
}

/// A grant's root as a normalised workspace path.
fn root_path(root: &Path) -> Result<RelPath, GrantError> {
    let norm = Grant::normalize_root(root)?;
    RelPath::parse(&norm.to_string_lossy()).map_err(|_| GrantError::BadRoot(root.to_path_buf()))
}

/// Why a root cannot be mounted: it leads out of the workspace, through a
/// symlink, or is not a directory.
fn root_error(root: &Path, e: WorkspaceError) -> GrantError {
    GrantError::RootEscapes {
        root: root.to_path_buf(),
        reason: e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::MetadataExt;

    use super::*;

    /// A mount is the directory the handle holds, whatever its path names
    /// by the time the call is made: here the workspace was moved away and
    /// another directory put at its path after the handle was taken.
    #[test]
    fn a_mount_is_the_held_directory_not_what_its_path_names_now() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let ws = tmp.path().join("ws");
        std::fs::create_dir(&ws).expect("ws");
        let held = DirFd::open_ambient(&ws).expect("held");
        std::fs::rename(&ws, tmp.path().join("moved")).expect("moved");
        std::fs::create_dir(&ws).expect("another ws");
        let (dir, guest) =
            mount(&held, &ws, "/workspace".into(), FsPerms::ReadWrite).expect("mount");
        assert_eq!(guest, "/workspace");
        assert_eq!(dir.perms, FsPerms::ReadWrite);
        assert_eq!(dir.open_mode, OpenMode::READ | OpenMode::WRITE);
        let mounted = dir.dir.metadata().expect("stat").ino();
        let moved = std::fs::metadata(tmp.path().join("moved"))
            .expect("stat")
            .ino();
        let now_there = std::fs::metadata(&ws).expect("stat").ino();
        assert_eq!(mounted, moved);
        assert_ne!(mounted, now_there);
    }
}
