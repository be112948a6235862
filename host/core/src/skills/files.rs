//! A skill's files as a front-end serves them (the MCP server's
//! `skill://` resources): listed and read by the host without following
//! any link, never outside the skill's folder; hidden entries (a name
//! starting with `.`) are neither listed nor read, and a skill with more
//! files or bytes than the bounds below is not served.

use std::ffi::OsStr;

use super::Skill;
use roost_sandbox::capability::RelPath;
use roost_sandbox::capability::dirfd::{DirFd, Kind};

/// Most files of one skill served.
pub const MAX_FILES: usize = 512;
/// Most bytes of one skill served.
pub const MAX_BYTES: u64 = 16 << 20;
/// Deepest directory of a skill served.
pub const MAX_DEPTH: usize = 8;

/// One file of a skill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillFile {
    /// Its path in the skill's folder, `/`-separated.
    pub rel: String,
    /// Its size.
    pub size: u64,
}

/// The files of `skill`, sorted by path, or why it is not served.
pub fn files(skill: &Skill) -> Result<Vec<SkillFile>, String> {
    let root = DirFd::open_resolved(&skill.dir).map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    let mut total = 0u64;
    let mut stack = vec![(root, String::new(), 0usize)];
    while let Some((dir, prefix, depth)) = stack.pop() {
        let entries = dir.entries().map_err(|e| e.to_string())?;
        for (name, stat) in entries {
            let Some(n) = name.to_str() else { continue };
            if n.starts_with('.') {
                continue;
            }
            let rel = format!("{prefix}{n}");
            match stat.kind {
                Kind::Dir if depth + 1 < MAX_DEPTH => {
                    let sub = dir.open_dir(&name).map_err(|e| e.to_string())?;
                    stack.push((sub, format!("{rel}/"), depth + 1));
                }
                Kind::File => {
                    total = total.saturating_add(stat.size);
                    out.push(SkillFile {
                        rel,
                        size: stat.size,
                    });
                }
                _ => {}
            }
            if out.len() > MAX_FILES || total > MAX_BYTES {
                return Err(format!("more than {MAX_FILES} files or {MAX_BYTES} bytes"));
            }
        }
    }
    out.sort_by(|a, b| a.rel.cmp(&b.rel));
    Ok(out)
}

/// The bytes of `rel` in `skill`'s folder, reached without following any
/// link; `None` when there is no such file (or it is hidden).
pub fn read(skill: &Skill, rel: &str) -> Option<Vec<u8>> {
    let path = RelPath::parse(rel).ok()?;
    let parts = path.parts();
    if parts
        .iter()
        .any(|p| p.to_str().is_none_or(|p| p.starts_with('.')))
    {
        return None;
    }
    let (file, dirs) = parts.split_last()?;
    if dirs.len() + 1 > MAX_DEPTH {
        return None;
    }
    DirFd::open_resolved(&skill.dir)
        .and_then(|root| root.open_dir_path(dirs))
        .and_then(|dir| dir.read(OsStr::new(file), MAX_BYTES))
        .ok()
}
