//! Symlinks and `.rooignore`: where a workspace path really leads, and
//! whether that place is ignored.
//!
//! The walker honours `.rooignore` by name, so a symlink (`notes.txt ->
//! secrets/key.txt`, `pub -> secrets`) would reach an ignored file under a
//! name that is not ignored. [`Guard`] resolves a path the way the kernel
//! would, one component at a time with `symlink_metadata` and `read_link`
//! (`canonicalize` is not available on every WASI target), and checks the
//! real location against the workspace's `.rooignore`.

use std::ffi::OsString;
use std::fs::Metadata;
use std::path::{Component, Path, PathBuf};

use ignore::gitignore::{Gitignore, GitignoreBuilder};
use roost_sdk::ToolError;

/// Most symlinks followed while resolving one path (Linux's `MAXSYMLINKS`).
pub const MAX_HOPS: usize = 40;
/// Largest `.rooignore` read.
const MAX_ROOIGNORE_BYTES: u64 = 1 << 20;
/// The ignore file, at the workspace root.
const ROOIGNORE: &str = ".rooignore";

/// Why a path may not be used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// It leads outside the workspace root.
    Outside,
    /// A symlink on it cannot be resolved (dangling, a loop, too many hops,
    /// unreadable).
    Unresolvable,
    /// It leads to a path `.rooignore` ignores.
    Ignored,
}

impl Refused {
    /// The error shown to the model for the workspace-relative `rel`.
    pub fn error(self, rel: &str) -> ToolError {
        match self {
            Self::Ignored => ToolError::permission_denied(format!(
                "Access to {rel} is blocked by the .rooignore file settings. You must try to continue in \
                 the task without using this file, or ask the user to update the .rooignore file."
            )),
            Self::Outside => ToolError::permission_denied(format!(
                "{rel}: a symlink on this path leads outside the workspace"
            )),
            Self::Unresolvable => ToolError::permission_denied(format!(
                "{rel}: a symlink on this path cannot be resolved"
            )),
        }
    }
}

/// Where a path really is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Real {
    /// Relative to the root, without symlinks, `.` or `..` (empty for the
    /// root itself).
    pub rel: PathBuf,
    /// Whether it exists (only ever false when missing paths are allowed).
    pub exists: bool,
    /// Whether it is a directory.
    pub is_dir: bool,
    /// Whether a symlink was followed to get there.
    pub via_link: bool,
}

/// One step still to resolve.
enum Step {
    Up,
    Name(OsString),
}

/// Push `path`'s components on the stack `todo` (last popped first).
fn push_steps(todo: &mut Vec<Step>, path: &Path) -> Result<(), Refused> {
    let mut steps = Vec::new();
    for c in path.components() {
        match c {
            Component::Normal(n) => steps.push(Step::Name(n.to_owned())),
            Component::ParentDir => steps.push(Step::Up),
            Component::CurDir => {}
            Component::RootDir | Component::Prefix(_) => return Err(Refused::Unresolvable),
        }
    }
    todo.extend(steps.into_iter().rev());
    Ok(())
}

/// Resolve `path` (absolute, under `root`) to its real location inside
/// `root`: every symlink on it is followed (chains up to [`MAX_HOPS`],
/// relative targets against the link's directory, absolute ones must lie
/// under `root`), `.` and `..` are normalised lexically, and `..` above the
/// root is [`Refused::Outside`]. `root` itself is taken as real.
///
/// With `allow_missing`, components from the first missing one on are
/// taken as written (they cannot be symlinks); otherwise a missing
/// component, a dangling link included, is [`Refused::Unresolvable`].
pub fn resolve(root: &Path, path: &Path, allow_missing: bool) -> Result<Real, Refused> {
    let rel = path.strip_prefix(root).map_err(|_| Refused::Outside)?;
    let mut todo = Vec::new();
    push_steps(&mut todo, rel)?;
    let mut real: Vec<OsString> = Vec::new();
    // Index in `real` of the first component that does not exist.
    let mut missing_from: Option<usize> = None;
    // File type of the last component of `real`, when known.
    let mut last_is_dir: Option<bool> = Some(true);
    let mut hops = 0usize;
    let mut via_link = false;
    while let Some(step) = todo.pop() {
        match step {
            Step::Up => {
                if real.pop().is_none() {
                    return Err(Refused::Outside);
                }
                if missing_from.is_some_and(|m| real.len() <= m) {
                    missing_from = None;
                }
                last_is_dir = if real.is_empty() {
                    Some(true)
                } else if missing_from.is_some() {
                    Some(false)
                } else {
                    None
                };
            }
            Step::Name(name) => {
                real.push(name);
                if missing_from.is_some() {
                    last_is_dir = Some(false);
                    continue;
                }
                let here: PathBuf = root.join(real.iter().collect::<PathBuf>());
                match std::fs::symlink_metadata(&here) {
                    Ok(m) if m.file_type().is_symlink() => {
                        hops += 1;
                        via_link = true;
                        if hops > MAX_HOPS {
                            return Err(Refused::Unresolvable);
                        }
                        let target =
                            std::fs::read_link(&here).map_err(|_| Refused::Unresolvable)?;
                        real.pop();
                        if target.is_absolute() {
                            let inner = target.strip_prefix(root).map_err(|_| Refused::Outside)?;
                            real.clear();
                            push_steps(&mut todo, inner)?;
                        } else {
                            push_steps(&mut todo, &target)?;
                        }
                        last_is_dir = if real.is_empty() { Some(true) } else { None };
                    }
                    Ok(m) => last_is_dir = Some(m.is_dir()),
                    Err(e) if allow_missing && e.kind() == std::io::ErrorKind::NotFound => {
                        missing_from = Some(real.len() - 1);
                        last_is_dir = Some(false);
                    }
                    Err(_) => return Err(Refused::Unresolvable),
                }
            }
        }
    }
    let rel: PathBuf = real.iter().collect();
    let exists = missing_from.is_none();
    let is_dir = match last_is_dir {
        Some(d) => d,
        // After a `..`: look again at where we ended up.
        None => std::fs::symlink_metadata(root.join(&rel))
            .map_err(|_| Refused::Unresolvable)?
            .is_dir(),
    };
    Ok(Real {
        rel,
        exists,
        is_dir,
        via_link,
    })
}

/// The workspace's `.rooignore`.
pub struct RooIgnore {
    /// The patterns, if the file exists (and is usable).
    matcher: Option<Gitignore>,
    /// The file exists but could not be used (not a regular file, too
    /// large, unreadable, a dangling link): every path reached through a
    /// symlink is treated as ignored, failing closed.
    unusable: bool,
}

impl RooIgnore {
    /// Read `root/.rooignore`, only if it resolves to a regular file inside
    /// `root` of at most 1 MiB (a FIFO or device is never opened). Lines that
    /// do not parse are skipped.
    pub fn load(root: &Path) -> Self {
        let path = root.join(ROOIGNORE);
        let none = Self {
            matcher: None,
            unusable: false,
        };
        let unusable = Self {
            matcher: None,
            unusable: true,
        };
        match std::fs::symlink_metadata(&path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return none,
            Err(_) => return unusable,
            Ok(_) => {}
        }
        let Ok(real) = resolve(root, &path, false) else {
            return unusable;
        };
        let real = root.join(&real.rel);
        let Ok(meta) = std::fs::symlink_metadata(&real) else {
            return unusable;
        };
        if !meta.is_file() || meta.len() > MAX_ROOIGNORE_BYTES {
            return unusable;
        }
        let Ok(bytes) = std::fs::read(&real) else {
            return unusable;
        };
        let text = String::from_utf8_lossy(&bytes);
        let mut b = GitignoreBuilder::new(root);
        for line in text.lines() {
            let _ = b.add_line(Some(path.clone()), line);
        }
        match b.build() {
            Ok(m) => Self {
                matcher: Some(m),
                unusable: false,
            },
            Err(_) => unusable,
        }
    }

    /// Whether the root-relative `rel` (or a directory above it) is ignored;
    /// `via_link` says it was reached through a symlink. The root itself
    /// never is.
    pub fn blocks(&self, rel: &Path, is_dir: bool, via_link: bool) -> bool {
        if rel.as_os_str().is_empty() {
            return false;
        }
        if self.unusable {
            return via_link;
        }
        self.matcher
            .as_ref()
            .is_some_and(|m| m.matched_path_or_any_parents(rel, is_dir).is_ignore())
    }
}

/// Symlink-aware `.rooignore` checks for one tool call.
pub struct Guard {
    root: PathBuf,
    ignore: RooIgnore,
}

impl Guard {
    /// The guard for the workspace at `root`, loading its `.rooignore`.
    pub fn new(root: &Path) -> Self {
        Self {
            root: root.to_owned(),
            ignore: RooIgnore::load(root),
        }
    }

    /// Where `path` really leads, refused if that is outside the root,
    /// unresolvable, or ignored by `.rooignore`.
    pub fn check(&self, path: &Path, allow_missing: bool) -> Result<Real, Refused> {
        let real = resolve(&self.root, path, allow_missing)?;
        if self.ignore.blocks(&real.rel, real.is_dir, real.via_link) {
            return Err(Refused::Ignored);
        }
        Ok(real)
    }

    /// Whether `rel` (root-relative, already real, reached through a
    /// symlink if `via_link`) is ignored.
    pub fn blocks(&self, rel: &Path, is_dir: bool, via_link: bool) -> bool {
        self.ignore.blocks(rel, is_dir, via_link)
    }

    /// Whether a walk may show `path` (a walked entry, not the walk's
    /// start): a symlink only if its target is inside the root, resolvable
    /// and not ignored.
    pub fn allows_symlink(&self, path: &Path) -> bool {
        self.check(path, false).is_ok()
    }
}

/// `root`-relative form of `path` for output (`.` for the root).
pub fn relative(root: &Path, path: &Path) -> String {
    match path.strip_prefix(root) {
        Ok(r) if r.as_os_str().is_empty() => ".".to_owned(),
        Ok(r) => r.to_string_lossy().into_owned(),
        Err(_) => path.to_string_lossy().into_owned(),
    }
}

/// Check a path a tool is about to read or write (`rel` as the model gave
/// it): where it really leads, missing components allowed, must be inside
/// the workspace at `root` and, when a symlink was followed, not
/// `.rooignore`d. (Without a symlink the real path is the one the host
/// already checked against `.rooignore`.)
pub fn check_path(root: &Path, path: &Path, rel: &str) -> Result<(), ToolError> {
    let real = resolve(root, path, true).map_err(|r| r.error(rel))?;
    if real.via_link && RooIgnore::load(root).blocks(&real.rel, real.is_dir, true) {
        return Err(Refused::Ignored.error(rel));
    }
    Ok(())
}

/// [`check_path`], then look `path` up (following symlinks) without opening
/// it: a FIFO, socket or device is refused, since opening a FIFO can block
/// forever. Directories pass; the caller decides.
pub fn check_readable(root: &Path, path: &Path, rel: &str) -> Result<Metadata, ToolError> {
    // Fast path: a regular file directly in the workspace root, not a link
    // (one lookup instead of a resolution).
    if path.parent() == Some(root)
        && let Ok(m) = std::fs::symlink_metadata(path)
        && m.is_file()
    {
        return Ok(m);
    }
    check_path(root, path, rel)?;
    let meta = std::fs::metadata(path).map_err(|e| ToolError::io(rel, &e))?;
    if !meta.is_file() && !meta.is_dir() {
        return Err(ToolError::permission_denied(format!(
            "{rel} is not a regular file (a FIFO, socket or device); it cannot be read"
        )));
    }
    Ok(meta)
}

/// [`check_path`], then refuse a FIFO, socket or device (or a directory)
/// already at `path`: opening a FIFO to write blocks until a reader comes.
pub fn check_writable(root: &Path, path: &Path, rel: &str) -> Result<(), ToolError> {
    check_path(root, path, rel)?;
    match std::fs::metadata(path) {
        Ok(m) if !m.is_file() => Err(ToolError::permission_denied(format!(
            "{rel} is not a regular file (a directory, FIFO, socket or device); it cannot be written"
        ))),
        _ => Ok(()),
    }
}
