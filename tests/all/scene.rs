//! A place for tests that run the real binary as root and as `nobody`:
//! a folder outside `/tmp` (a command's sandbox has a `/tmp` of its own)
//! everyone may enter, the binary runnable by anyone, and `roost` run as
//! an identity with only PATH and HOME of the environment.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use roost_tests::identity::{Identity, NOBODY, chown_tree, runnable_by_anyone};

/// A place laid out for one identity.
pub(crate) struct Scene {
    /// The place (under /var/tmp, entered by anyone).
    pub(crate) base: tempfile::TempDir,
    /// The binary, runnable by anyone.
    pub(crate) bin: PathBuf,
}

impl Scene {
    /// An empty place, and the binary where `nobody` can run it.
    pub(crate) fn new() -> Self {
        // Outside /tmp: every sandbox has a private /tmp of its own.
        let base = tempfile::tempdir_in("/var/tmp")
            .or_else(|_| tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")))
            .expect("base");
        std::fs::set_permissions(base.path(), std::fs::Permissions::from_mode(0o755))
            .expect("chmod base");
        // The binary where another user can run it.
        let bin = runnable_by_anyone(Path::new(env!("CARGO_BIN_EXE_roost")));
        Self { base, bin }
    }

    /// A path in the place.
    pub(crate) fn p(&self, rel: &str) -> PathBuf {
        self.base.path().join(rel)
    }

    /// `roost` as `who` in the scene: its `ws` the working directory, its
    /// `home` and `data`, the config `config`, nothing else of the
    /// environment but PATH.
    pub(crate) fn roost(&self, who: Identity, config: &Path) -> std::process::Command {
        let mut c = who.command(&self.bin);
        c.current_dir(self.p("ws"))
            .env_clear()
            .env("PATH", "/usr/local/bin:/usr/bin:/bin")
            .env("HOME", self.p("home"))
            .env("ROOST_CONFIG", config)
            .arg("--data-dir")
            .arg(self.p("data"));
        c
    }

    /// The folders `rels`, made.
    pub(crate) fn dirs<const N: usize>(&self, rels: [&str; N]) -> [PathBuf; N] {
        rels.map(|r| {
            let d = self.p(r);
            std::fs::create_dir_all(&d).expect("mkdir");
            d
        })
    }

    /// Give the place to `who` (when that is not the caller).
    pub(crate) fn hand_to(&self, who: Identity) {
        if who == Identity::Nobody {
            chown_tree(self.base.path(), NOBODY);
        }
    }
}
