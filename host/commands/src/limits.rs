//! What one command may use of the machine: processes, memory, file size
//! and CPU time. Each command gets a cgroup of its own where Roost can
//! make one (cgroup v2, or the v1 `pids` and `memory` hierarchies, under
//! the cgroup Roost itself runs in), bounding the command and everything
//! it starts together; rlimits bound each process besides, and are all
//! there is where no cgroup can be made. The kernel does not count a
//! root-owned process against `RLIMIT_NPROC`, so a Roost run as root
//! without cgroups has no bound on processes: `roost doctor` says so.

// System calls (write to cgroup.procs, setrlimit) between fork and exec.
#![allow(unsafe_code)]

use std::fs::File;
use std::os::fd::{AsRawFd, RawFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{LazyLock, Mutex};

use serde::Deserialize;

/// The `limits` of a command profile, as the config gives them.
#[derive(Debug, Clone, Copy, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LimitsConfig {
    /// Most processes (and threads) at once (default 512).
    pub processes: Option<u64>,
    /// Most memory, in MiB, for the command and all it starts (default
    /// 2048).
    pub memory_mb: Option<u64>,
    /// Largest file a command may write, in MiB (default 1024).
    pub file_size_mb: Option<u64>,
    /// Most CPU seconds of any one process (default: the time limit).
    pub cpu_seconds: Option<u64>,
}

/// Bounds on one command, ready to apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Most processes at once.
    pub processes: u64,
    /// Most memory in bytes.
    pub memory: u64,
    /// Largest file in bytes.
    pub file_size: u64,
    /// Most CPU seconds of one process (`None`: the command's time limit).
    pub cpu_seconds: Option<u64>,
}

const MIB: u64 = 1 << 20;

impl Default for Limits {
    fn default() -> Self {
        Self {
            processes: 512,
            memory: 2048 * MIB,
            file_size: 1024 * MIB,
            cpu_seconds: None,
        }
    }
}

impl Limits {
    /// The config's limits over the defaults (each at least a small
    /// floor, so a typo cannot make every command fail to start).
    pub fn from_config(c: &LimitsConfig) -> Self {
        let d = Self::default();
        Self {
            processes: c.processes.map_or(d.processes, |n| n.max(8)),
            memory: c
                .memory_mb
                .map_or(d.memory, |m| m.max(16).saturating_mul(MIB)),
            file_size: c
                .file_size_mb
                .map_or(d.file_size, |m| m.max(1).saturating_mul(MIB)),
            cpu_seconds: c.cpu_seconds.map(|s| s.max(1)),
        }
    }
}

/// Which cgroup hierarchy this machine lets Roost make cgroups in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CgroupSupport {
    /// cgroup v2: children of this directory, with `pids` and `memory`.
    V2(PathBuf),
    /// cgroup v1: children of these `pids` and `memory` directories.
    V1 {
        /// Roost's own cgroup in the `pids` hierarchy.
        pids: PathBuf,
        /// Roost's own cgroup in the `memory` hierarchy.
        memory: PathBuf,
    },
    /// None can be made here (why): rlimits only.
    Unavailable(String),
}

/// Where this process's cgroups are, once per process.
static SUPPORT: LazyLock<CgroupSupport> = LazyLock::new(detect);

/// Cgroups left behind while processes were still in them (an MCP server
/// outliving the call that started it); removed when they empty.
static LEFT: LazyLock<Mutex<Vec<PathBuf>>> = LazyLock::new(|| Mutex::new(Vec::new()));

/// Names each command's cgroup.
static NEXT: AtomicU64 = AtomicU64::new(0);

/// Whether and how commands get a cgroup here.
pub fn cgroup_support() -> &'static CgroupSupport {
    &SUPPORT
}

/// This process's cgroup in a hierarchy: the v2 path (`0::/x`) or the
/// v1 path of the line naming `controller`.
fn own_cgroup(proc_cgroup: &str, controller: Option<&str>) -> Option<String> {
    proc_cgroup.lines().find_map(|line| {
        let mut parts = line.splitn(3, ':');
        let (_, ctrls, path) = (parts.next()?, parts.next()?, parts.next()?);
        let hit = match controller {
            None => ctrls.is_empty(),
            Some(c) => ctrls.split(',').any(|x| x == c),
        };
        hit.then(|| path.to_owned())
    })
}

/// A directory where a child cgroup can be made, with the controllers
/// enabled for children (v2) — tried, not guessed.
fn writable_dir(dir: &Path) -> Result<(), String> {
    let probe = dir.join(format!("roost-probe-{}", std::process::id()));
    std::fs::create_dir(&probe)
        .map_err(|e| format!("cannot make a cgroup in {}: {e}", dir.display()))?;
    let _ = std::fs::remove_dir(&probe);
    Ok(())
}

fn detect() -> CgroupSupport {
    let root = Path::new("/sys/fs/cgroup");
    let Ok(mine) = std::fs::read_to_string("/proc/self/cgroup") else {
        return CgroupSupport::Unavailable("no /proc/self/cgroup".into());
    };
    if root.join("cgroup.controllers").is_file() {
        let Some(own) = own_cgroup(&mine, None) else {
            return CgroupSupport::Unavailable("no cgroup v2 line in /proc/self/cgroup".into());
        };
        let dir = root.join(own.trim_start_matches('/'));
        let enabled =
            std::fs::read_to_string(dir.join("cgroup.subtree_control")).unwrap_or_default();
        let has = |c: &str| enabled.split_whitespace().any(|x| x == c);
        if !(has("pids") && has("memory")) {
            // Enabling controllers for children works only where no
            // process lives in this cgroup itself (or at the root).
            if let Err(e) = std::fs::write(dir.join("cgroup.subtree_control"), "+pids +memory") {
                return CgroupSupport::Unavailable(format!(
                    "cgroup v2: cannot enable the pids and memory controllers in {}: {e}",
                    dir.display()
                ));
            }
        }
        return match writable_dir(&dir) {
            Ok(()) => CgroupSupport::V2(dir),
            Err(e) => CgroupSupport::Unavailable(e),
        };
    }
    let v1 = |c: &str| -> Result<PathBuf, String> {
        let own =
            own_cgroup(&mine, Some(c)).ok_or_else(|| format!("no cgroup v1 `{c}` hierarchy"))?;
        let dir = root.join(c).join(own.trim_start_matches('/'));
        writable_dir(&dir)?;
        Ok(dir)
    };
    match (v1("pids"), v1("memory")) {
        (Ok(pids), Ok(memory)) => CgroupSupport::V1 { pids, memory },
        (Err(e), _) | (_, Err(e)) => CgroupSupport::Unavailable(e),
    }
}

/// One command's cgroup(s), removed when dropped (or, while processes
/// still live in them, once they are gone).
#[derive(Debug)]
pub struct Cgroup {
    dirs: Vec<PathBuf>,
    procs: Vec<File>,
}

impl Cgroup {
    /// A new cgroup bounded by `limits`, where this machine allows one.
    pub fn create(limits: &Limits) -> Result<Option<Self>, String> {
        reap();
        let name = format!(
            "roost-cmd-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let settings: Vec<(PathBuf, Vec<(&str, String)>)> = match cgroup_support() {
            CgroupSupport::Unavailable(_) => return Ok(None),
            CgroupSupport::V2(dir) => vec![(
                dir.join(&name),
                vec![
                    ("pids.max", limits.processes.to_string()),
                    ("memory.max", limits.memory.to_string()),
                    ("memory.swap.max", "0".to_owned()),
                ],
            )],
            CgroupSupport::V1 { pids, memory } => vec![
                (
                    pids.join(&name),
                    vec![("pids.max", limits.processes.to_string())],
                ),
                (
                    memory.join(&name),
                    vec![("memory.limit_in_bytes", limits.memory.to_string())],
                ),
            ],
        };
        let mut made = Self {
            dirs: Vec::new(),
            procs: Vec::new(),
        };
        for (dir, files) in settings {
            std::fs::create_dir(&dir).map_err(|e| format!("cgroup {}: {e}", dir.display()))?;
            made.dirs.push(dir.clone());
            for (file, value) in files {
                match std::fs::write(dir.join(file), &value) {
                    Ok(()) => {}
                    // Swap accounting is optional.
                    Err(_) if file == "memory.swap.max" => {}
                    Err(e) => return Err(format!("cgroup {}/{file}: {e}", dir.display())),
                }
            }
            let procs = std::fs::OpenOptions::new()
                .write(true)
                .open(dir.join("cgroup.procs"))
                .map_err(|e| format!("cgroup {}: {e}", dir.display()))?;
            made.procs.push(procs);
        }
        Ok(Some(made))
    }

    /// The descriptors of its `cgroup.procs` files: a process joins by
    /// writing `0` to each (see [`Entry::enter`]).
    fn fds(&self) -> Vec<RawFd> {
        self.procs.iter().map(AsRawFd::as_raw_fd).collect()
    }
}

impl Drop for Cgroup {
    fn drop(&mut self) {
        for dir in self.dirs.drain(..) {
            if std::fs::remove_dir(&dir).is_err() {
                LEFT.lock().unwrap_or_else(|p| p.into_inner()).push(dir);
            }
        }
    }
}

/// Remove the cgroups whose processes have all ended since.
fn reap() {
    let mut left = LEFT.lock().unwrap_or_else(|p| p.into_inner());
    left.retain(|d| d.exists() && std::fs::remove_dir(d).is_err());
}

/// What a starting command does to itself before it runs: join its
/// cgroup, set its rlimits. Everything is prepared in the parent, so the
/// child (between fork and exec) only makes async-signal-safe calls.
#[derive(Debug)]
pub struct Entry {
    cgroup: Option<Cgroup>,
    fds: Vec<RawFd>,
    rlimits: Vec<(libc::__rlimit_resource_t, u64)>,
}

impl Entry {
    /// The entry for `limits`, with a cgroup where one can be made
    /// (a failure to make one is logged; the rlimits still apply).
    pub fn new(limits: &Limits, time_limit_secs: u64) -> Self {
        let cgroup = match Cgroup::create(limits) {
            Ok(c) => c,
            Err(e) => {
                tracing::warn!("a command's cgroup cannot be made ({e}); rlimits only");
                None
            }
        };
        let fds = cgroup.as_ref().map(Cgroup::fds).unwrap_or_default();
        let cpu = limits.cpu_seconds.unwrap_or(time_limit_secs).max(1);
        Self {
            cgroup,
            fds,
            rlimits: vec![
                (libc::RLIMIT_NPROC, limits.processes),
                (libc::RLIMIT_DATA, limits.memory),
                (libc::RLIMIT_FSIZE, limits.file_size),
                // Past the soft limit SIGXCPU, a second later SIGKILL.
                (libc::RLIMIT_CPU, cpu),
                (libc::RLIMIT_CORE, 0),
            ],
        }
    }

    /// Whether the command runs in a cgroup of its own.
    pub fn has_cgroup(&self) -> bool {
        self.cgroup.is_some()
    }

    /// Join the cgroup and set the rlimits: called in the child between
    /// fork and exec, so only system calls, no allocation.
    pub fn enter(&self) -> std::io::Result<()> {
        for fd in &self.fds {
            // SAFETY: `fd` is an open descriptor of this (forked) process
            // and the buffer a static byte string.
            let n = unsafe { libc::write(*fd, b"0".as_ptr().cast(), 1) };
            if n < 0 {
                return Err(std::io::Error::last_os_error());
            }
        }
        for (resource, value) in &self.rlimits {
            let soft = *value;
            let hard = if *resource == libc::RLIMIT_CPU {
                soft.saturating_add(1)
            } else {
                soft
            };
            let lim = libc::rlimit {
                rlim_cur: soft,
                rlim_max: hard,
            };
            // SAFETY: setrlimit with a valid resource and a pointer to a
            // live struct.
            if unsafe { libc::setrlimit(*resource, &lim) } != 0 {
                return Err(std::io::Error::last_os_error());
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_cgroup_lines() {
        let v1 = "9:name=systemd:/\n8:pids:/a/b\n4:memory:/process_api/x\n0::/\n";
        assert_eq!(own_cgroup(v1, Some("pids")).as_deref(), Some("/a/b"));
        assert_eq!(
            own_cgroup(v1, Some("memory")).as_deref(),
            Some("/process_api/x")
        );
        assert_eq!(own_cgroup(v1, None).as_deref(), Some("/"));
        assert_eq!(
            own_cgroup("0::/user.slice/x.scope\n", None).as_deref(),
            Some("/user.slice/x.scope")
        );
        assert_eq!(own_cgroup("garbage", Some("pids")), None);
    }

    #[test]
    fn limits_from_config_keep_floors() {
        let l = Limits::from_config(&LimitsConfig {
            processes: Some(0),
            memory_mb: Some(1),
            file_size_mb: None,
            cpu_seconds: Some(0),
        });
        assert_eq!(l.processes, 8);
        assert_eq!(l.memory, 16 * MIB);
        assert_eq!(l.file_size, Limits::default().file_size);
        assert_eq!(l.cpu_seconds, Some(1));
    }
}
