//! Who runs Roost in an end-to-end test: the test's own user (root on CI,
//! as containers and VMs often run Roost) and, when that is root, the
//! unprivileged `nobody` too, switched to with `setpriv`.

use std::path::Path;
use std::process::Command;

/// Who runs Roost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Identity {
    /// The test's own user (root on CI).
    Caller,
    /// `nobody` (only when the test runs as root).
    Nobody,
}

/// `nobody`'s user and group id.
pub const NOBODY: u32 = 65534;

/// Whether the test runs as root.
pub fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(1) == Some("0"))
}

/// Every identity this machine can test: root and nobody when the test
/// runs as root, else the caller (an unprivileged user) alone.
pub fn identities() -> Vec<Identity> {
    if is_root() {
        vec![Identity::Caller, Identity::Nobody]
    } else {
        eprintln!("not root: tested as this unprivileged user only");
        vec![Identity::Caller]
    }
}

/// Give `dir` and everything under it (links not followed) to `uid`.
pub fn chown_tree(dir: &Path, uid: u32) {
    std::os::unix::fs::lchown(dir, Some(uid), Some(uid)).expect("chown");
    if dir.symlink_metadata().is_ok_and(|m| m.is_dir()) {
        for e in std::fs::read_dir(dir).expect("read_dir").flatten() {
            chown_tree(&e.path(), uid);
        }
    }
}

impl Identity {
    /// A command running `program` as this identity.
    pub fn command(self, program: &Path) -> Command {
        match self {
            Identity::Caller => Command::new(program),
            Identity::Nobody => {
                let mut c = Command::new("setpriv");
                c.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
                    .arg(program);
                c
            }
        }
    }
}
