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

/// `bin` where every identity can run it: the checkout (and so the
/// binary the tests built) may lie in a folder `nobody` cannot enter, such
/// as root's home. A hard link in a world-readable folder outside `/tmp`
/// (a command's sandbox has a `/tmp` of its own), named after the build:
/// no file is written, so no process forked meanwhile can hold it open
/// for writing (which would make running it fail with "text file busy"),
/// and concurrent test runs of other checkouts keep their own. A copy
/// where a link cannot be made (another file system). Links whose build
/// is gone (the only name left) are removed after two hours.
pub fn runnable_by_anyone(bin: &Path) -> std::path::PathBuf {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    static PLACED: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    PLACED
        .get_or_init(|| {
            let meta = std::fs::metadata(bin).expect("the binary");
            let key = blake3::hash(
                format!(
                    "{}:{}:{}:{}",
                    bin.display(),
                    meta.dev(),
                    meta.ino(),
                    meta.len()
                )
                .as_bytes(),
            );
            let dir = Path::new("/var/tmp").join("roost-tests-bin");
            std::fs::create_dir_all(&dir).expect("bin dir");
            std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).expect("chmod");
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs());
            for e in std::fs::read_dir(&dir).expect("bin dir").flatten() {
                if let Ok(m) = e.path().symlink_metadata()
                    && m.nlink() == 1
                    && now.saturating_sub(u64::try_from(m.ctime()).unwrap_or(0)) > 2 * 3600
                {
                    let _ = std::fs::remove_file(e.path());
                }
            }
            let name = format!("roost-{}", &key.to_hex()[..16]);
            let placed = dir.join(&name);
            if !placed.exists() {
                let part = dir.join(format!("{name}.{}", std::process::id()));
                if std::fs::hard_link(bin, &part).is_err() {
                    std::fs::copy(bin, &part).expect("copy the binary");
                }
                std::fs::set_permissions(&part, std::fs::Permissions::from_mode(0o755))
                    .expect("chmod");
                std::fs::rename(&part, &placed).expect("place the binary");
            }
            placed
        })
        .clone()
}
