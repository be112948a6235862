//! Shared support for Roost's end-to-end tests: where the built fixture
//! components are, one plugin engine per test binary (with an on-disk
//! component cache shared by all test binaries), and throwaway workspaces
//! with a canary directory beside them whose hash must never change.

#![forbid(unsafe_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use roost_sandbox::plugins::{EngineConfig, PluginEngine};

/// Directory of the built Rust fixture components.
pub const FIXTURES_DIR: &str = env!("ROOST_FIXTURES_DIR");

/// Built component of a Rust fixture crate (`hostile`, `limits`, …; dashes
/// become underscores as cargo names the file).
pub fn fixture_wasm(crate_name: &str) -> PathBuf {
    Path::new(FIXTURES_DIR).join(format!("{}.wasm", crate_name.replace('-', "_")))
}

/// Built component of the Python conformance plugin, built on first use
/// with componentize-py (so building the workspace never needs Python).
pub fn python_plugin_wasm() -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT
        .get_or_init(|| {
            let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
            roost_build::python::componentize(
                &root.join("tests/fixtures/python-plugin"),
                &root.join("wit"),
                "tool-plugin",
                "app",
                &["roost:plugin/types@0.2.0=types"],
                &Path::new(env!("ROOST_WASM_TARGET_DIR"))
                    .join("python")
                    .join("python_plugin.wasm"),
            )
            .unwrap_or_else(|e| panic!("building the Python fixture: {e}"))
        })
        .clone()
}

/// The JavaScript conformance plugin (`tests/fixtures/js-plugin`), built
/// once per test binary with the toolchain `roost plugin new --lang js`
/// pins (its package.json and lockfile), in a folder under the target dir.
pub fn js_plugin_wasm() -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT
        .get_or_init(|| {
            let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
            let project = Path::new(env!("ROOST_WASM_TARGET_DIR")).join("js/conformance");
            std::fs::create_dir_all(&project).expect("js project dir");
            for file in ["package.json", "package-lock.json"] {
                let from = root.join("host/cli/templates/js").join(file);
                let to = project.join(file);
                let same = std::fs::read(&to).ok() == std::fs::read(&from).ok();
                if !same {
                    std::fs::copy(&from, &to).expect("copy the js toolchain pins");
                }
            }
            roost_build::js::componentize(
                &project,
                &root.join("tests/fixtures/js-plugin/plugin.js"),
                &root.join("wit"),
                "tool-plugin",
                &project.join("js_plugin.wasm"),
            )
            .unwrap_or_else(|e| panic!("building the JavaScript fixture: {e}"))
        })
        .clone()
}

/// Component cache shared by all test binaries, so each fixture compiles once.
pub fn cache_dir() -> PathBuf {
    Path::new(FIXTURES_DIR).join("roost-test-cache")
}

/// One engine per test binary, as one per process in the host.
pub fn engine() -> Arc<PluginEngine> {
    static ENGINE: OnceLock<Arc<PluginEngine>> = OnceLock::new();
    ENGINE
        .get_or_init(|| {
            let cfg = EngineConfig {
                max_concurrent_calls: 64,
                ..roost_core::first_party::engine_config(cache_dir())
            };
            Arc::new(PluginEngine::new(cfg).expect("test engine"))
        })
        .clone()
}

/// A temporary directory holding `workspace/` and a sibling `canary/`
/// (with a secret file) that no plugin may ever reach.
pub struct TestWorkspace {
    dir: tempfile::TempDir,
}

impl Default for TestWorkspace {
    fn default() -> Self {
        Self::new()
    }
}

impl TestWorkspace {
    /// Create the workspace and canary.
    pub fn new() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir(dir.path().join("workspace")).expect("mkdir workspace");
        std::fs::create_dir(dir.path().join("canary")).expect("mkdir canary");
        std::fs::write(
            dir.path().join("canary").join("secret.txt"),
            "canary secret\n",
        )
        .expect("write canary");
        Self { dir }
    }

    /// The workspace directory.
    pub fn path(&self) -> PathBuf {
        self.dir.path().join("workspace")
    }

    /// The canary directory beside it.
    pub fn canary(&self) -> PathBuf {
        self.dir.path().join("canary")
    }

    /// The parent of both.
    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    /// Write a workspace file (creating parent dirs).
    pub fn write(&self, rel: &str, content: &str) {
        let p = self.path().join(rel);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).expect("mkdir");
        }
        std::fs::write(p, content).expect("write");
    }

    /// Read a workspace file.
    pub fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.path().join(rel)).expect("read")
    }
}

/// The workspace the hostile fixture attacks from: files in the read-only
/// area, a write root `out/`, and symlinks leading out by every route.
pub fn hostile_workspace() -> TestWorkspace {
    use std::os::unix::fs::symlink;
    let ws = TestWorkspace::new();
    let w = ws.path();
    let canary = ws.canary();
    ws.write("readme.txt", "read me\n");
    ws.write("sub/inner.txt", "inner\n");
    ws.write("out/movable.txt", "move me\n");
    std::fs::create_dir(w.join("outside")).expect("mkdir outside");
    symlink(canary.join("secret.txt"), w.join("abs_link")).expect("symlink");
    symlink("../canary/secret.txt", w.join("rel_link")).expect("symlink");
    symlink("chain2", w.join("chain1")).expect("symlink");
    symlink("../canary/secret.txt", w.join("chain2")).expect("symlink");
    symlink(&canary, w.join("ts_link")).expect("symlink");
    symlink("../../canary/secret.txt", w.join("out/esc_link")).expect("symlink");
    symlink(&canary, w.join("out/dir_link")).expect("symlink");
    symlink(&canary, w.join("out/ts_out")).expect("symlink");
    // Authority files and a scoped tree for the host-side routes.
    ws.write(".git/config", "[core]\n\tbare = false\n");
    ws.write(".git/hooks/pre-commit.sample", "#!/bin/sh\n");
    ws.write(".orchestration/agent_trace.jsonl", "");
    ws.write("src/auth/session.rs", "// session\n");
    ws.write("src/billing.rs", "// billing\n");
    // What .rooignore hides: by name anywhere, and by an anchored path.
    ws.write(".rooignore", ".env\nconf/secret.txt\n");
    ws.write(".env", "API_KEY=hidden-by-rooignore\n");
    ws.write("conf/secret.txt", "hidden-by-rooignore\n");
    ws
}

/// Make a FIFO at `path` (nothing in Roost may ever block on it).
pub fn mkfifo(path: &Path) {
    let status = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("run mkfifo");
    assert!(status.success(), "mkfifo {}", path.display());
}

/// Every entry under `dir` (not following symlinks) → a description holding
/// its kind, mode and content hash (or link target). Comparing two snapshots
/// shows any change on disk.
pub fn tree_hash(dir: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, String>) {
    use std::os::unix::fs::PermissionsExt;
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = entries.flatten().collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let p = e.path();
        let rel = p.strip_prefix(root).unwrap_or(&p).display().to_string();
        let Ok(meta) = std::fs::symlink_metadata(&p) else {
            continue;
        };
        let mode = meta.permissions().mode();
        let desc = if meta.file_type().is_symlink() {
            format!(
                "link {:o} -> {}",
                mode,
                std::fs::read_link(&p)
                    .map(|t| t.display().to_string())
                    .unwrap_or_default()
            )
        } else if meta.is_dir() {
            walk(root, &p, out);
            format!("dir {mode:o}")
        } else {
            let bytes = std::fs::read(&p).unwrap_or_default();
            format!(
                "file {mode:o} {} {}",
                bytes.len(),
                blake3::hash(&bytes).to_hex()
            )
        };
        out.insert(rel, desc);
    }
}

/// The fuzz targets' library (without libFuzzer), for the replay of their
/// seeds and kept inputs (`tests/all/fuzz_replay.rs`).
pub use roost_fuzz as fuzz;

/// The person at the keyboard, scripted: queued answers for approvals,
/// completion reviews, follow-up questions and guidance requests. When a
/// queue is empty the defaults apply (approve, accept, no answer, stop).
pub mod harness;
pub mod http;
pub mod identity;
pub mod otlp;
pub mod registry;

pub mod user {
    use std::collections::VecDeque;
    use std::sync::Mutex;

    use roost_core::task::{Answers, Approval, CompletionAnswer};
    use roost_core::tools::ToolGroup;

    /// Scripted answers; records every question it was asked.
    #[derive(Default)]
    pub struct ScriptedUser {
        /// Answers to approval requests.
        pub approvals: Mutex<VecDeque<Approval>>,
        /// Answers to `attempt_completion`.
        pub completions: Mutex<VecDeque<CompletionAnswer>>,
        /// Answers to follow-up questions.
        pub followups: Mutex<VecDeque<String>>,
        /// Answers to out-of-scope writes (default: deny).
        pub scope: Mutex<VecDeque<Approval>>,
        /// Answers to mode hooks' questions (default: deny).
        pub hook: Mutex<VecDeque<Approval>>,
        /// Answers to guidance requests (mistake limit, repetition).
        pub guidance: Mutex<VecDeque<String>>,
        /// Everything asked, as `kind: text`.
        pub asked: Mutex<Vec<String>>,
    }

    impl ScriptedUser {
        /// Queue an approval answer.
        pub fn approve(self, a: Approval) -> Self {
            self.approvals.lock().expect("lock").push_back(a);
            self
        }
        /// Queue an answer to an out-of-scope write.
        pub fn scope(self, a: Approval) -> Self {
            self.scope.lock().expect("lock").push_back(a);
            self
        }
        /// Queue an answer to a hook's question.
        pub fn hook(self, a: Approval) -> Self {
            self.hook.lock().expect("lock").push_back(a);
            self
        }
        /// Queue a completion answer.
        pub fn complete(self, a: CompletionAnswer) -> Self {
            self.completions.lock().expect("lock").push_back(a);
            self
        }
        /// Queue a follow-up answer.
        pub fn answer(self, a: &str) -> Self {
            self.followups.lock().expect("lock").push_back(a.to_owned());
            self
        }
        /// Queue guidance.
        pub fn guide(self, a: &str) -> Self {
            self.guidance.lock().expect("lock").push_back(a.to_owned());
            self
        }
        /// Questions asked so far.
        pub fn asked(&self) -> Vec<String> {
            self.asked.lock().expect("lock").clone()
        }
        fn note(&self, s: String) {
            self.asked.lock().expect("lock").push(s);
        }
    }

    #[async_trait::async_trait]
    impl Answers for ScriptedUser {
        async fn approve(
            &self,
            tool: &str,
            _group: ToolGroup,
            _args: &serde_json::Value,
            preview: Option<&str>,
        ) -> Approval {
            match preview {
                Some(p) => self.note(format!("approve: {tool}\n{p}")),
                None => self.note(format!("approve: {tool}")),
            }
            self.approvals
                .lock()
                .expect("lock")
                .pop_front()
                .unwrap_or(Approval::Approve)
        }
        async fn scope_violation(
            &self,
            intent: &str,
            tool: &str,
            path: &str,
            preview: Option<&str>,
        ) -> Approval {
            match preview {
                Some(p) => self.note(format!("scope: {intent} {tool} {path}\n{p}")),
                None => self.note(format!("scope: {intent} {tool} {path}")),
            }
            self.scope
                .lock()
                .expect("lock")
                .pop_front()
                .unwrap_or(Approval::Deny { feedback: None })
        }
        async fn hook_question(&self, hook: &str, tool: &str, question: &str) -> Approval {
            self.note(format!("hook: {hook} {tool} {question}"));
            self.hook
                .lock()
                .expect("lock")
                .pop_front()
                .unwrap_or(Approval::Deny { feedback: None })
        }
        async fn followup(&self, question: &str, _suggestions: &[String]) -> Option<String> {
            self.note(format!("followup: {question}"));
            self.followups.lock().expect("lock").pop_front()
        }
        async fn completion(&self, result: &str) -> CompletionAnswer {
            self.note(format!("completion: {result}"));
            self.completions
                .lock()
                .expect("lock")
                .pop_front()
                .unwrap_or(CompletionAnswer::Accept)
        }
        async fn guidance(&self, reason: &str) -> Option<String> {
            self.note(format!("guidance: {reason}"));
            self.guidance.lock().expect("lock").pop_front()
        }
    }
}

include!(concat!(env!("OUT_DIR"), "/foreach.rs"));

/// What the sandbox suite expects of an escape route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expect {
    /// A positive control (or a write inside the write root): it must work.
    Allowed,
    /// An attack: the sandbox must refuse it.
    Denied,
    /// Driven by a named test of the host suite instead.
    Host,
    /// A door out of the WebAssembly sandbox (commands, MCP servers,
    /// checkpoints, the server): driven by the named end-to-end test of
    /// the module the line names.
    Door,
}

/// One sandbox escape route of `tests/escape-routes.txt`.
#[derive(Debug, Clone)]
pub struct EscapeRoute {
    /// The case the hostile fixture runs.
    pub case: String,
    /// What the sandbox suite expects.
    pub expect: Expect,
    /// Whether the scope suite runs it under a finer intent scope.
    pub scope: bool,
}

/// Every escape route, in the file's order (the one list the sandbox
/// suite, the scope suite and the hostile fixture share).
pub fn escape_routes() -> Vec<EscapeRoute> {
    const ROUTES: &str = include_str!("../escape-routes.txt");
    ROUTES
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| {
            let words: Vec<&str> = l.split_whitespace().collect();
            let expect = match words.get(1).copied() {
                Some("allowed") => Expect::Allowed,
                Some("denied") => Expect::Denied,
                Some("host") => Expect::Host,
                Some("door") => Expect::Door,
                other => panic!("escape-routes.txt: `{l}`: unknown expectation {other:?}"),
            };
            EscapeRoute {
                case: words[0].to_owned(),
                expect,
                scope: words.get(2) == Some(&"scope"),
            }
        })
        .collect()
}

/// A program of the real MCP servers and clients the tests run
/// (`tests/mcp/node_modules/.bin/NAME`, installed from npm by
/// `scripts/test.sh`).
pub fn mcp_bin(name: &str) -> PathBuf {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("mcp/node_modules/.bin")
        .join(name);
    assert!(
        p.exists(),
        "{} is missing: run `npm ci --prefix tests/mcp` (scripts/test.sh does)",
        p.display()
    );
    p
}

/// A script of the tests' own MCP servers (`tests/mcp/NAME`).
pub fn mcp_script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("mcp").join(name)
}
