//! Native tests of the symlink and special-file defences, on a throwaway
//! directory standing in for `/workspace`.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use regex::Regex;
use roost_sdk::ErrorCode;

use crate::links::{Guard, MAX_HOPS, Real, Refused, RooIgnore, check_path, resolve};
use crate::list::list_in;
use crate::read::{ReadArgs, read_in};
use crate::search::search_in;

/// A temporary workspace, removed on drop.
struct Ws {
    root: PathBuf,
}

impl Ws {
    fn new() -> Self {
        static N: AtomicUsize = AtomicUsize::new(0);
        let root = std::env::temp_dir().join(format!(
            "fs-tools-test-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(&root).expect("temp workspace");
        Self { root }
    }

    /// A workspace with `secrets/` ignored, a secret in it, and a public file.
    fn with_secrets() -> Self {
        let ws = Self::new();
        ws.write(".rooignore", "secrets/\n*.key\n");
        ws.write("secrets/key.txt", "TOPSECRET in the ignored dir\n");
        ws.write("conf/server.key", "TOPSECRET in an ignored file\n");
        ws.write("readme.md", "public readme\n");
        ws
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    fn write(&self, rel: &str, text: &str) {
        let p = self.path(rel);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(p, text).expect("write");
    }

    fn link(&self, rel: &str, target: impl AsRef<Path>) {
        let p = self.path(rel);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::os::unix::fs::symlink(target, p).expect("symlink");
    }

    fn fifo(&self, rel: &str) {
        let ok = std::process::Command::new("mkfifo")
            .arg(self.path(rel))
            .status()
            .expect("run mkfifo")
            .success();
        assert!(ok, "mkfifo {rel}");
    }

    fn check(&self, rel: &str) -> Result<String, Refused> {
        Guard::new(&self.root)
            .check(&self.path(rel), false)
            .map(|r| r.rel.to_string_lossy().into_owned())
    }

    fn list(&self, dir: &str) -> Result<Vec<String>, Refused> {
        list_in(&self.root, &self.path(dir), true, 1000).map(|(e, _)| e)
    }

    /// Matched text of a search for `TOPSECRET|public` under `dir`.
    fn search(&self, dir: &str) -> Result<String, Refused> {
        let re = Regex::new("TOPSECRET|public").expect("regex");
        search_in(&self.root, &self.path(dir), &re, None, 0, 1000).map(|f| f.text)
    }

    fn read(&self, rel: &str) -> Result<String, roost_sdk::ToolError> {
        let args = ReadArgs {
            path: rel.to_owned(),
            start_line: None,
            end_line: None,
        };
        read_in(&self.root, &self.path(rel), &args).map(|o| o.text)
    }
}

impl Drop for Ws {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// Run `f` on a thread, failing the test if it takes over 10 s (it blocked).
fn within_timeout<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(Duration::from_secs(10))
        .expect("finished without blocking")
}

fn assert_denied(r: Result<String, roost_sdk::ToolError>, what: &str) {
    match r {
        Err(e) => assert_eq!(e.code, ErrorCode::PermissionDenied, "{what}: {e}"),
        Ok(text) => panic!("{what}: expected a refusal, got {text:?}"),
    }
}

#[test]
fn symlink_to_ignored_file_is_hidden_and_refused() {
    let ws = Ws::with_secrets();
    ws.link("notes.txt", "secrets/key.txt");
    ws.link("cert.pem", "conf/server.key");
    assert_eq!(ws.check("notes.txt"), Err(Refused::Ignored));
    assert_eq!(ws.check("cert.pem"), Err(Refused::Ignored));
    let entries = ws.list(".").expect("lists");
    assert!(!entries.iter().any(|e| e == "notes.txt"), "{entries:?}");
    assert!(!entries.iter().any(|e| e == "cert.pem"), "{entries:?}");
    assert!(entries.iter().any(|e| e == "readme.md"), "{entries:?}");
    let found = ws.search(".").expect("searches");
    assert!(!found.contains("TOPSECRET"), "{found}");
    assert!(found.contains("public readme"), "{found}");
    // Named directly, as the start of a search or as a file to read.
    assert_eq!(ws.search("notes.txt"), Err(Refused::Ignored));
    assert_denied(ws.read("notes.txt"), "read notes.txt");
    assert_denied(ws.read("cert.pem"), "read cert.pem");
}

#[test]
fn symlink_to_ignored_dir_is_hidden_and_not_entered() {
    let ws = Ws::with_secrets();
    ws.link("pub", "secrets");
    ws.link("slash", "secrets/");
    assert_eq!(ws.check("pub"), Err(Refused::Ignored));
    assert_eq!(ws.check("slash"), Err(Refused::Ignored));
    let entries = ws.list(".").expect("lists");
    assert!(
        !entries
            .iter()
            .any(|e| e.starts_with("pub") || e.starts_with("slash")),
        "{entries:?}"
    );
    assert_eq!(ws.list("pub"), Err(Refused::Ignored));
    assert_eq!(ws.search("pub"), Err(Refused::Ignored));
    assert_denied(ws.read("pub/key.txt"), "read pub/key.txt");
    // Writing through the link into the ignored directory is refused too.
    let e = check_path(&ws.root, &ws.path("pub/new.txt"), "pub/new.txt").expect_err("refused");
    assert_eq!(e.code, ErrorCode::PermissionDenied);
    assert!(e.message.contains(".rooignore"), "{}", e.message);
}

#[test]
fn chains_of_symlinks_are_followed_to_the_end() {
    let ws = Ws::with_secrets();
    ws.link("a", "b");
    ws.link("b", "sub/c");
    ws.link("sub/c", "../secrets/key.txt");
    assert_eq!(ws.check("a"), Err(Refused::Ignored));
    // A directory link in the middle of the chain.
    ws.link("d1", "d2");
    ws.link("d2", "secrets");
    ws.link("via", "d1/key.txt");
    assert_eq!(ws.check("via"), Err(Refused::Ignored));
    let entries = ws.list(".").expect("lists");
    for hidden in ["a", "b", "sub/c", "d1", "d2", "via"] {
        assert!(
            !entries.iter().any(|e| e == hidden),
            "{hidden}: {entries:?}"
        );
    }
    assert_denied(ws.read("a"), "read a");
    // A chain to a public file resolves.
    ws.link("p1", "p2");
    ws.link("p2", "readme.md");
    assert_eq!(ws.check("p1").as_deref(), Ok("readme.md"));
}

#[test]
fn loops_and_overlong_chains_are_unresolvable() {
    let ws = Ws::with_secrets();
    ws.link("loop1", "loop2");
    ws.link("loop2", "loop1");
    assert_eq!(ws.check("loop1"), Err(Refused::Unresolvable));
    // MAX_HOPS links are followed; one more is too many.
    ws.link(&format!("hop{MAX_HOPS}"), "readme.md");
    for i in (0..MAX_HOPS).rev() {
        ws.link(&format!("hop{i}"), format!("hop{}", i + 1));
    }
    assert_eq!(ws.check("hop1").as_deref(), Ok("readme.md"));
    assert_eq!(ws.check("hop0"), Err(Refused::Unresolvable));
    ws.link("dangling", "no/such/file");
    assert_eq!(ws.check("dangling"), Err(Refused::Unresolvable));
    let entries = ws.list(".").expect("lists");
    for hidden in ["loop1", "loop2", "hop0", "dangling"] {
        assert!(
            !entries.iter().any(|e| e == hidden),
            "{hidden}: {entries:?}"
        );
    }
    assert!(entries.iter().any(|e| e == "hop1"), "{entries:?}");
}

#[test]
fn relative_targets_resolve_against_the_links_directory() {
    let ws = Ws::with_secrets();
    ws.write("deep/er/own.txt", "public own\n");
    ws.link("deep/er/up", "../../secrets/key.txt");
    ws.link("deep/er/dots", "./../er/../../secrets/./key.txt");
    ws.link("deep/er/fine", "../../readme.md");
    ws.link("deep/er/here", "own.txt");
    assert_eq!(ws.check("deep/er/up"), Err(Refused::Ignored));
    assert_eq!(ws.check("deep/er/dots"), Err(Refused::Ignored));
    assert_eq!(ws.check("deep/er/fine").as_deref(), Ok("readme.md"));
    assert_eq!(ws.check("deep/er/here").as_deref(), Ok("deep/er/own.txt"));
    let entries = ws.list("deep").expect("lists");
    assert!(!entries.iter().any(|e| e == "deep/er/up"), "{entries:?}");
    assert!(!entries.iter().any(|e| e == "deep/er/dots"), "{entries:?}");
    assert!(entries.iter().any(|e| e == "deep/er/fine"), "{entries:?}");
    assert!(entries.iter().any(|e| e == "deep/er/here"), "{entries:?}");
}

#[test]
fn targets_outside_the_root_are_refused() {
    let ws = Ws::with_secrets();
    let outside = Ws::new();
    outside.write("data.txt", "TOPSECRET outside\n");
    ws.link("abs", outside.path("data.txt"));
    ws.link(
        "rel",
        format!(
            "../{}/data.txt",
            outside.root.file_name().unwrap().to_string_lossy()
        ),
    );
    ws.link("parent", "..");
    ws.link("sub/deeper", "../../..");
    assert_eq!(ws.check("abs"), Err(Refused::Outside));
    assert_eq!(ws.check("rel"), Err(Refused::Outside));
    assert_eq!(ws.check("parent"), Err(Refused::Outside));
    assert_eq!(ws.check("sub/deeper"), Err(Refused::Outside));
    // An absolute target inside the root is judged by where it leads.
    ws.link("abs_in_ok", ws.path("readme.md"));
    ws.link("abs_in_ignored", ws.path("secrets"));
    assert_eq!(ws.check("abs_in_ok").as_deref(), Ok("readme.md"));
    assert_eq!(ws.check("abs_in_ignored"), Err(Refused::Ignored));
    let entries = ws.list(".").expect("lists");
    for hidden in ["abs", "rel", "parent", "sub/deeper", "abs_in_ignored"] {
        assert!(
            !entries.iter().any(|e| e == hidden),
            "{hidden}: {entries:?}"
        );
    }
    assert!(entries.iter().any(|e| e == "abs_in_ok"), "{entries:?}");
    assert!(!ws.search(".").expect("searches").contains("TOPSECRET"));
    assert_eq!(ws.search("parent"), Err(Refused::Outside));
    assert_denied(ws.read("abs"), "read abs");
}

#[test]
fn symlinks_to_public_files_and_dirs_are_still_listed() {
    let ws = Ws::with_secrets();
    ws.write("docs/guide.md", "public guide\n");
    ws.link("link.md", "readme.md");
    ws.link("manual", "docs");
    let entries = ws.list(".").expect("lists");
    assert!(entries.iter().any(|e| e == "link.md"), "{entries:?}");
    assert!(entries.iter().any(|e| e == "manual"), "{entries:?}");
    // Links are not followed by the walk, but can be named directly.
    assert_eq!(ws.list("manual").expect("lists"), vec!["manual/guide.md"]);
    assert!(
        ws.search("link.md")
            .expect("searches")
            .contains("public readme")
    );
    assert!(ws.read("link.md").expect("reads").contains("public readme"));
    check_path(&ws.root, &ws.path("manual/new.md"), "manual/new.md").expect("writable");
}

#[test]
fn a_walk_started_through_a_link_checks_the_real_paths() {
    let ws = Ws::new();
    ws.write(".rooignore", "docs/private/\n");
    ws.write("docs/open.md", "public open\n");
    ws.write("docs/private/plan.md", "TOPSECRET plan\n");
    ws.link("d", "docs");
    let entries = ws.list("d").expect("lists");
    assert_eq!(entries, vec!["d/open.md"]);
    let found = ws.search("d").expect("searches");
    assert!(found.contains("public open"), "{found}");
    assert!(!found.contains("TOPSECRET"), "{found}");
    assert_denied(ws.read("d/private/plan.md"), "read d/private/plan.md");
}

#[test]
fn fifos_are_skipped_by_search_and_refused_by_read() {
    let ws = Ws::with_secrets();
    ws.fifo("pipe");
    ws.link("pipe_link", "pipe");
    let root = ws.root.clone();
    let found = within_timeout(move || {
        let re = Regex::new("public").expect("regex");
        search_in(&root, &root, &re, None, 0, 1000).map(|f| f.text)
    })
    .expect("searches");
    assert!(found.contains("public readme"), "{found}");
    // Started at the FIFO itself, or at a link to it.
    let re = Regex::new("x").expect("regex");
    for start in ["pipe", "pipe_link"] {
        let root = ws.root.clone();
        let re = re.clone();
        let found = within_timeout(move || {
            search_in(&root, &root.join(start), &re, None, 0, 1000).map(|f| f.matches)
        });
        assert_eq!(found, Ok(0), "{start}");
    }
    for name in ["pipe", "pipe_link"] {
        let root = ws.root.clone();
        let r = within_timeout(move || {
            let args = ReadArgs {
                path: name.to_owned(),
                start_line: None,
                end_line: None,
            };
            read_in(&root, &root.join(name), &args).map(|o| o.text)
        });
        assert_denied(r, name);
    }
}

#[test]
fn rooignore_is_read_only_from_a_small_regular_file() {
    // A FIFO .rooignore is never opened; links then fail closed.
    let ws = Ws::new();
    ws.write("readme.md", "public\n");
    ws.link("link.md", "readme.md");
    ws.fifo(".rooignore");
    let root = ws.root.clone();
    let ignore = within_timeout(move || RooIgnore::load(&root));
    assert!(ignore.blocks(Path::new("readme.md"), false, true));
    assert!(!ignore.blocks(Path::new("readme.md"), false, false));
    assert!(!ignore.blocks(Path::new(""), true, true));

    // Over 1 MiB: not read, links fail closed.
    let ws = Ws::new();
    ws.write(".rooignore", &"# padding\n".repeat(120_000));
    let ignore = RooIgnore::load(&ws.root);
    assert!(ignore.blocks(Path::new("a.txt"), false, true));

    // A normal one, including a parent directory match.
    let ws = Ws::new();
    ws.write(".rooignore", "secrets/\n*.key\n");
    let ignore = RooIgnore::load(&ws.root);
    assert!(ignore.blocks(Path::new("secrets"), true, true));
    assert!(ignore.blocks(Path::new("secrets/deep/a.txt"), false, true));
    assert!(ignore.blocks(Path::new("conf/server.key"), false, false));
    assert!(!ignore.blocks(Path::new("src/main.rs"), false, true));

    // None at all: nothing is ignored.
    let ws = Ws::new();
    assert!(!RooIgnore::load(&ws.root).blocks(Path::new("a"), false, true));
}

#[test]
fn missing_components_are_allowed_only_when_asked() {
    let ws = Ws::with_secrets();
    ws.link("pub", "secrets");
    ws.link("m", "missing/../readme.md");
    let real = |rel: &str, allow: bool| resolve(&ws.root, &ws.path(rel), allow);
    assert_eq!(
        real("pub/new/x.txt", true),
        Ok(Real {
            rel: "secrets/new/x.txt".into(),
            exists: false,
            is_dir: false,
            via_link: true,
        })
    );
    assert_eq!(real("pub/new/x.txt", false), Err(Refused::Unresolvable));
    assert_eq!(
        real("a/b/../c", true),
        Ok(Real {
            rel: "a/c".into(),
            exists: false,
            is_dir: false,
            via_link: false,
        })
    );
    assert_eq!(real("m", false), Err(Refused::Unresolvable));
    assert_eq!(
        real("m", true),
        Ok(Real {
            rel: "readme.md".into(),
            exists: true,
            is_dir: false,
            via_link: true,
        })
    );
    assert_eq!(
        real(".", false),
        Ok(Real {
            rel: "".into(),
            exists: true,
            is_dir: true,
            via_link: false,
        })
    );
}
