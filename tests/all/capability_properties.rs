//! Properties of the capability layer, searched by proptest on the real
//! `Workspace`/`DirFd` over real temporary directories (issue 48): what a
//! hostile process plants in a workspace — symlinks absolute, relative,
//! chained and dangling, renames, FIFOs, hard links, deep chains — mixed
//! with the layer's own operations never lets it read or write outside
//! the root, follow a link out, or block; scope and `.rooignore` matching
//! agree with reference matchers written from their documentation; the
//! write guard leaves what lies outside the scope exactly as it was.
//!
//! Seeded (the same cases every run); `PROPTEST_CASES` scales a run up
//! (FUZZING.md gives the counts searched).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed};

use roost_core::intents::{Intent, Scope};
use roost_sandbox::capability::{GuardBudget, WriteGuard, rule};
use roost_sandbox::capability::{RooIgnore, Workspace};

/// What the outside canary holds: no read through the layer may return it.
const SECRET: &[u8] = b"SECRET-OUTSIDE-THE-WORKSPACE\n";

/// The proptest settings of this file: a fixed seed, no files written.
fn config(cases: u32) -> Config {
    let mut c = Config {
        cases,
        failure_persistence: None,
        rng_seed: RngSeed::Fixed(48),
        ..Config::default()
    };
    if let Some(n) = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        c.cases = n;
    }
    // Another fixed seed: a long campaign split across processes.
    if let Some(seed) = std::env::var("PROPTEST_RNG_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        c.rng_seed = RngSeed::Fixed(seed);
    }
    c
}

// ---------------------------------------------------------------------
// Escapes: plants and operations interleaved.

/// Names plants and operations use: inside, through `..`, absolute.
const NAMES: &[&str] = &[
    "a",
    "b",
    "a/b",
    "a/b/c",
    "link",
    "a/link",
    "l2",
    "fifo",
    "hl",
    "a/hl",
    "x.txt",
    "a/x.txt",
    "..",
    "../outside",
    "../outside/secret",
    "a/../..",
    "./a",
    "a/./b",
    "link/secret",
    "link/x",
    "l2/secret",
    "deep",
    "deep/d/d/d/d",
    "a..b",
    "a/link/b",
];

#[derive(Debug, Clone)]
enum Step {
    /// A symlink at a name, to the outside canary (absolute).
    LinkOutAbs(usize),
    /// A symlink at a name, to `../outside` (relative, out).
    LinkOutRel(usize),
    /// A symlink to another name (maybe a chain, maybe dangling).
    LinkTo(usize, usize),
    /// A chain of `n` links ending outside.
    Chain(usize, u8),
    /// A directory.
    Mkdir(usize),
    /// A regular file.
    File(usize),
    /// A FIFO.
    Fifo(usize),
    /// A hard link to the outside canary.
    HardLink(usize),
    /// A rename of one name over another.
    Rename(usize, usize),
    /// A removal (file or tree).
    Remove(usize),
    /// The layer reads.
    Read(usize),
    /// The layer lists.
    List(usize),
    /// The layer creates a file.
    Create(usize),
    /// The layer replaces a file.
    Replace(usize),
    /// The layer appends.
    Append(usize),
    /// The layer makes a directory.
    EnsureDir(usize),
    /// The layer removes a file.
    RemoveFile(usize),
    /// The layer changes a mode.
    SetMode(usize),
}

fn step() -> impl Strategy<Value = Step> {
    let n = || 0..NAMES.len();
    prop_oneof![
        n().prop_map(Step::LinkOutAbs),
        n().prop_map(Step::LinkOutRel),
        (n(), n()).prop_map(|(a, b)| Step::LinkTo(a, b)),
        (n(), 1u8..12).prop_map(|(a, k)| Step::Chain(a, k)),
        n().prop_map(Step::Mkdir),
        n().prop_map(Step::File),
        n().prop_map(Step::Fifo),
        n().prop_map(Step::HardLink),
        (n(), n()).prop_map(|(a, b)| Step::Rename(a, b)),
        n().prop_map(Step::Remove),
        n().prop_map(Step::Read),
        n().prop_map(Step::List),
        n().prop_map(Step::Create),
        n().prop_map(Step::Replace),
        n().prop_map(Step::Append),
        n().prop_map(Step::EnsureDir),
        n().prop_map(Step::RemoveFile),
        n().prop_map(Step::SetMode),
    ]
}

/// Everything outside the workspace, as [`tree_state`] has it.
fn outside_state(base: &Path) -> BTreeMap<String, (char, Vec<u8>, u32)> {
    tree_state(base, "outside")
}

/// A plant, as a process in the workspace would make it (errors are part
/// of the game: the name may be taken).
fn plant(ws: &Path, base: &Path, s: &Step) {
    let at = |i: usize| ws.join(NAMES[i]);
    // The planter works inside the workspace (names that climb out are
    // for the layer's operations).
    let inside = |i: &usize| reference_normal(NAMES[*i]).is_some() && !NAMES[*i].contains("..");
    let names = match s {
        Step::LinkTo(i, j) | Step::Rename(i, j) => vec![i, j],
        Step::LinkOutAbs(i)
        | Step::LinkOutRel(i)
        | Step::Chain(i, _)
        | Step::Mkdir(i)
        | Step::File(i)
        | Step::Fifo(i)
        | Step::HardLink(i)
        | Step::Remove(i) => vec![i],
        _ => Vec::new(),
    };
    // Nor through a symlink of its own: what it plants is in the
    // workspace (the layer is under test, not std::fs).
    let direct = |i: &usize| {
        Path::new(NAMES[*i])
            .ancestors()
            .skip(1)
            .filter(|a| !a.as_os_str().is_empty())
            .all(|a| {
                std::fs::symlink_metadata(ws.join(a)).is_ok_and(|m| !m.file_type().is_symlink())
            })
    };
    if !names.into_iter().all(|i| inside(i) && direct(i)) {
        return;
    }
    let _ = match s {
        Step::LinkOutAbs(i) => std::os::unix::fs::symlink(base.join("outside/secret"), at(*i)),
        Step::LinkOutRel(i) => {
            let depth = NAMES[*i].matches('/').count();
            let up = "../".repeat(depth + 1);
            std::os::unix::fs::symlink(format!("{up}outside"), at(*i))
        }
        Step::LinkTo(i, j) => std::os::unix::fs::symlink(NAMES[*j], at(*i)),
        Step::Chain(i, k) => {
            let mut target = base.join("outside").to_string_lossy().into_owned();
            for n in 0..*k {
                let name = format!("chain{n}");
                let _ = std::fs::remove_file(ws.join(&name));
                let _ = std::os::unix::fs::symlink(&target, ws.join(&name));
                target = name;
            }
            std::os::unix::fs::symlink(target, at(*i))
        }
        Step::Mkdir(i) => std::fs::create_dir_all(at(*i)),
        // Only where there is nothing yet (the planter writing its own
        // FIFO would wait for a reader, its own hard link write outside).
        Step::File(i) => std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(at(*i))
            .and_then(|mut f| std::io::Write::write_all(&mut f, b"inside\n")),
        Step::Fifo(i) => rustix::fs::mknodat(
            rustix::fs::CWD,
            at(*i),
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o644),
            0,
        )
        .map_err(std::io::Error::from),
        Step::HardLink(i) => std::fs::hard_link(base.join("outside/secret"), at(*i)),
        Step::Rename(i, j) => std::fs::rename(at(*i), at(*j)),
        Step::Remove(i) => {
            std::fs::remove_file(at(*i)).or_else(|_| std::fs::remove_dir_all(at(*i)))
        }
        _ => Ok(()),
    };
}

/// What the layer did: bytes it read, or nothing.
fn operate(ws: &Workspace, s: &Step) -> Option<Vec<u8>> {
    let rel = |i: usize| ws.normalize(NAMES[i]).ok();
    match s {
        Step::Read(i) => rel(*i).and_then(|r| ws.read(&r, 1 << 16).ok().flatten()),
        Step::List(i) => {
            for f in ws.list_files(NAMES[*i]).unwrap_or_default() {
                if let Ok(Some(b)) = ws.read(&f, 1 << 16) {
                    return Some(b);
                }
            }
            None
        }
        Step::Create(i) => {
            let _ = rel(*i).map(|r| ws.create_file(&r, b"created\n", 0o644));
            None
        }
        Step::Replace(i) => {
            let _ = rel(*i).map(|r| ws.replace_file(&r, b"replaced\n", 0o644));
            None
        }
        Step::Append(i) => {
            let _ = ws.append_strict(NAMES[*i], b"appended\n");
            None
        }
        Step::EnsureDir(i) => {
            let _ = rel(*i).map(|r| ws.ensure_dir(&r));
            None
        }
        Step::RemoveFile(i) => {
            let _ = rel(*i).map(|r| ws.remove_file(&r));
            None
        }
        Step::SetMode(i) => {
            let _ = rel(*i).map(|r| ws.set_mode(&r, 0o777));
            None
        }
        _ => None,
    }
}

/// Run `steps` on a fresh workspace; the first broken promise.
fn escapes(steps: &[Step]) -> Result<(), String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let base = dir.path().to_path_buf();
    let root = base.join("ws");
    std::fs::create_dir_all(root.join("a")).map_err(|e| e.to_string())?;
    std::fs::create_dir_all(base.join("outside/dir")).map_err(|e| e.to_string())?;
    std::fs::write(base.join("outside/secret"), SECRET).map_err(|e| e.to_string())?;
    std::fs::write(base.join("outside/x.txt"), SECRET).map_err(|e| e.to_string())?;
    let before = outside_state(&base);
    let mut hard_linked = false;
    for (n, s) in steps.iter().enumerate() {
        plant(&root, &base, s);
        if matches!(s, Step::HardLink(_)) {
            hard_linked = true;
        }
        // Run the layer's operation where a blocked open would show: on
        // another thread, waited for (a bound, not a measurement).
        let (tx, rx) = mpsc::channel();
        let ws2 = Workspace::open(&root).map_err(|e| e.to_string())?;
        let s2 = s.clone();
        std::thread::spawn(move || {
            let _ = tx.send(operate(&ws2, &s2));
        });
        let read = match rx.recv_timeout(Duration::from_secs(60)) {
            Ok(r) => r,
            Err(_) => return Err(format!("step {n} ({s:?}) blocked")),
        };
        if let Some(bytes) = read
            && bytes == SECRET
            && !hard_linked
        {
            return Err(format!("step {n} ({s:?}) read the outside secret"));
        }
        let now = outside_state(&base);
        if now != before {
            return Err(format!(
                "step {n} ({s:?}) changed what lies outside: {:?}",
                now.iter()
                    .filter(|(k, v)| before.get(*k) != Some(*v))
                    .map(|(k, _)| k)
                    .chain(before.keys().filter(|k| !now.contains_key(*k)))
                    .collect::<Vec<_>>()
            ));
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(config(64))]

    /// Plants and operations in any order: nothing outside is read,
    /// written, moved or made; nothing blocks.
    #[test]
    fn no_sequence_of_plants_lets_the_layer_out(steps in proptest::collection::vec(step(), 1..14)) {
        prop_assert_eq!(escapes(&steps), Ok(()));
    }
}

// ---------------------------------------------------------------------
// Scope and .rooignore against reference matchers.

/// Components paths and globs are made of: ASCII, case, Unicode (NFC and
/// NFD `é`), dots, a name with `..` inside.
const PARTS: &[&str] = &[
    "a", "b", "A", "é", "e\u{301}", "x.rs", "X.RS", ".hidden", "a..b", "..", ".", "",
];

fn path() -> impl Strategy<Value = String> {
    proptest::collection::vec(proptest::sample::select(PARTS), 1..5).prop_map(|v| v.join("/"))
}

/// A glob component: a part, a wildcard, or a part with wildcards.
fn glob_part() -> impl Strategy<Value = String> {
    prop_oneof![
        proptest::sample::select(&["a", "b", "A", "é", "x.rs", ".hidden", "a..b"][..])
            .prop_map(str::to_owned),
        Just("*".to_owned()),
        Just("?".to_owned()),
        Just("**".to_owned()),
        Just("*.rs".to_owned()),
        Just("a*".to_owned()),
        Just("?.rs".to_owned()),
        Just("*b*".to_owned()),
    ]
}

fn glob() -> impl Strategy<Value = String> {
    (
        proptest::collection::vec(glob_part(), 1..4),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|(v, dot, slash)| {
            let g = v.join("/");
            let g = if dot { format!("./{g}") } else { g };
            if slash { format!("{g}/") } else { g }
        })
}

/// Does the one path component `s` match the wildcard component `p`
/// (`*` any run, `?` one byte — as git's wildmatch and globset count
/// them: a non-ASCII character is more than one — the rest literal)?
fn component_matches(p: &[u8], s: &[u8]) -> bool {
    match p.split_first() {
        None => s.is_empty(),
        Some((b'*', rest)) => (0..=s.len()).any(|k| component_matches(rest, &s[k..])),
        Some((b'?', rest)) => !s.is_empty() && component_matches(rest, &s[1..]),
        Some((c, rest)) => s.first() == Some(c) && component_matches(rest, &s[1..]),
    }
}

/// Do the glob components `g` match the path components `p`? `**` is any
/// number of components, zero included — but a trailing `/**` means what
/// lies under, at least one (`a/**` is not `a`).
fn components_match(g: &[&str], p: &[&str]) -> bool {
    match g.split_first() {
        None => p.is_empty(),
        Some((&"**", [])) => !p.is_empty(),
        Some((&"**", rest)) => (0..=p.len()).any(|k| components_match(rest, &p[k..])),
        Some((c, rest)) => p.first().is_some_and(|first| {
            component_matches(c.as_bytes(), first.as_bytes()) && components_match(rest, &p[1..])
        }),
    }
}

/// The scope rule as `intents` documents it: `*`/`?` within a component,
/// `**` across any number, a pattern without wildcards naming that path
/// and everything under it; `./` and a trailing `/` ignored. `None`: a
/// glob the reference does not define (`**` inside a component).
fn reference_scope(glob: &str, path: &str) -> Option<bool> {
    let g = glob.trim_start_matches("./").trim_end_matches('/');
    let parts: Vec<&str> = g.split('/').collect();
    if parts.iter().any(|c| c.contains("**") && *c != "**") || parts.iter().any(|c| c.is_empty()) {
        return None;
    }
    let p: Vec<&str> = path.split('/').collect();
    let literal = !g.contains(['*', '?', '[', '{']);
    let mut hit = components_match(&parts, &p);
    if literal && !g.is_empty() {
        let mut under = parts.clone();
        under.push("**");
        hit |= p.len() > parts.len() && components_match(&under, &p);
    }
    Some(hit)
}

/// The path a call would be judged by: normalised lexically as the layer
/// does (`.` and empty parts dropped, `..` going up), `None` when it
/// leaves the workspace, is absolute, or names the root.
fn reference_normal(raw: &str) -> Option<String> {
    if raw.starts_with('/') {
        return None;
    }
    let mut out: Vec<&str> = Vec::new();
    for c in raw.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                out.pop()?;
            }
            c => out.push(c),
        }
    }
    (!out.is_empty()).then(|| out.join("/"))
}

fn scope_case(glob: &str, raw: &str) -> Result<(), String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let ws = Workspace::open(dir.path()).map_err(|e| e.to_string())?;
    let intent = Intent {
        id: "INT-1".into(),
        name: "prop".into(),
        status: "IN_PROGRESS".into(),
        owned_scope: vec![glob.to_owned()],
        constraints: Vec::new(),
        acceptance_criteria: Vec::new(),
        command_profile: None,
    };
    let Some(expected_shape) = reference_normal(raw) else {
        // The layer must refuse (or find the root) too.
        if let Ok(r) = ws.normalize(raw)
            && !r.is_root()
        {
            return Err(format!("{raw:?} normalised to {:?}", r.as_string()));
        }
        return Ok(());
    };
    let rel = ws
        .normalize(raw)
        .map_err(|e| format!("{raw:?} refused: {e}"))?;
    if rel.as_string() != expected_shape {
        return Err(format!(
            "{raw:?} normalised to {:?}, not {expected_shape:?}",
            rel.as_string()
        ));
    }
    let Some(expected) = reference_scope(glob, &expected_shape) else {
        return Ok(());
    };
    let scope = match Scope::new(dir.path(), &intent) {
        Ok(s) => s,
        Err(e) => return Err(format!("glob {glob:?} refused: {e}")),
    };
    let got = scope.allows(&rel.as_string());
    if got != expected {
        return Err(format!(
            "glob {glob:?}, path {:?}: the scope says {got}, the reference {expected}",
            rel.as_string()
        ));
    }
    Ok(())
}

/// The `.rooignore` rule (gitignore, in the subset the generator makes):
/// a pattern with a `/` before its end is anchored at the root, one
/// without matches a name at any depth; a match of a directory covers
/// everything under it.
fn reference_ignore(pattern: &str, path: &str) -> Option<bool> {
    let trimmed = pattern.trim_end_matches('/');
    let anchored = trimmed.trim_start_matches('/').contains('/') || trimmed.starts_with('/');
    let g = trimmed.trim_start_matches('/');
    let g = g.strip_prefix("./").unwrap_or(g);
    let parts: Vec<&str> = g.split('/').collect();
    // Outside the reference: empty or dot components, `**` inside a
    // component, and a pattern of nothing but `**` (the ignore crate
    // blocks everything for `**/`, files too: more than git, never less).
    if parts
        .iter()
        .any(|c| c.is_empty() || c.starts_with('.') || (c.contains("**") && *c != "**"))
        || parts.iter().all(|c| *c == "**")
    {
        return None;
    }
    let dir_only = pattern.ends_with('/');
    let p: Vec<&str> = path.split('/').collect();
    // The ignore crate asks about the root too (an empty path, a
    // directory): a pattern that matches nothing at all (`*/`) hides
    // everything — more than git, never less.
    let root_hit = if anchored {
        components_match(&parts, &[""])
    } else {
        parts.len() == 1 && components_match(&parts, &[""])
    };
    if root_hit {
        return Some(true);
    }
    // Each ancestor (and the path itself): is it matched?
    Some((1..=p.len()).any(|k| {
        let q = &p[..k];
        // A directory-only pattern matches only directories: the
        // ancestors, not the path itself (a file, here).
        if dir_only && k == p.len() {
            return false;
        }
        if anchored {
            components_match(&parts, q)
        } else {
            parts.len() == 1
                && q.last()
                    .is_some_and(|last| components_match(&parts, &[last]))
        }
    }))
}

fn ignore_case(pattern: &str, raw: &str) -> Result<(), String> {
    let Some(path) = reference_normal(raw) else {
        return Ok(());
    };
    let Some(expected) = reference_ignore(pattern, &path) else {
        return Ok(());
    };
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    std::fs::write(dir.path().join(".rooignore"), format!("{pattern}\n"))
        .map_err(|e| e.to_string())?;
    let ws = Workspace::open(dir.path()).map_err(|e| e.to_string())?;
    let rel = ws.normalize(raw).map_err(|e| e.to_string())?;
    let got = RooIgnore::load_in(&ws).blocks(&rel.as_string());
    if got != expected {
        return Err(format!(
            ".rooignore {pattern:?}, path {:?}: blocks says {got}, the reference {expected}",
            rel.as_string()
        ));
    }
    Ok(())
}

fn ignore_pattern() -> impl Strategy<Value = String> {
    (
        proptest::collection::vec(glob_part(), 1..3),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|(v, lead, trail)| {
            let g = v.join("/");
            let g = if lead { format!("/{g}") } else { g };
            if trail { format!("{g}/") } else { g }
        })
}

proptest! {
    #![proptest_config(config(512))]

    /// An intent's scope matches as documented, after the layer's own
    /// normalisation (`..`, `.`, empty parts, Unicode, case).
    #[test]
    fn scope_matches_its_reference(g in glob(), p in path()) {
        prop_assert_eq!(scope_case(&g, &p), Ok(()));
    }

    /// `.rooignore` blocks what gitignore's rules say, names with `..`
    /// inside them included.
    #[test]
    fn rooignore_matches_its_reference(g in ignore_pattern(), p in path()) {
        prop_assert_eq!(ignore_case(&g, &p), Ok(()));
    }
}

// ---------------------------------------------------------------------
// The write guard.

#[derive(Debug, Clone)]
enum Change {
    Write(usize),
    Create(usize),
    Remove(usize),
    Mkdir(usize),
    Symlink(usize),
    HardLink(usize, usize),
    Rename(usize, usize),
    Chmod(usize),
}

/// Names under the guarded root `src/`: in scope (`.rs`) and out.
const TREE: &[&str] = &[
    "src/a.rs",
    "src/b.txt",
    "src/d",
    "src/d/c.rs",
    "src/d/e.txt",
    "src/d.rs",
    "src/d.rs/f.txt",
    "src/g.md",
    "src/d/h",
    "src/d/h/i.txt",
    "src/new.rs",
    "src/new.txt",
];

fn change() -> impl Strategy<Value = Change> {
    let n = || 0..TREE.len();
    prop_oneof![
        n().prop_map(Change::Write),
        n().prop_map(Change::Create),
        n().prop_map(Change::Remove),
        n().prop_map(Change::Mkdir),
        n().prop_map(Change::Symlink),
        (n(), n()).prop_map(|(a, b)| Change::HardLink(a, b)),
        (n(), n()).prop_map(|(a, b)| Change::Rename(a, b)),
        n().prop_map(Change::Chmod),
    ]
}

/// The tree under `base/under`, never following a link: path (relative
/// to `base`) → (kind, content or link target, permission bits).
fn tree_state(base: &Path, under: &str) -> BTreeMap<String, (char, Vec<u8>, u32)> {
    use std::os::unix::fs::MetadataExt;
    let mut out = BTreeMap::new();
    let mut todo = vec![base.join(under)];
    while let Some(p) = todo.pop() {
        let Ok(md) = std::fs::symlink_metadata(&p) else {
            continue;
        };
        let rel = p
            .strip_prefix(base)
            .map(|r| r.to_string_lossy().into_owned())
            .unwrap_or_default();
        let (kind, body) = if md.file_type().is_symlink() {
            let t = std::fs::read_link(&p).unwrap_or_default();
            ('l', t.to_string_lossy().into_owned().into_bytes())
        } else if md.is_dir() {
            if let Ok(rd) = std::fs::read_dir(&p) {
                todo.extend(rd.flatten().map(|e| e.path()));
            }
            ('d', Vec::new())
        } else if md.is_file() {
            ('f', std::fs::read(&p).unwrap_or_default())
        } else {
            ('o', Vec::new())
        };
        out.insert(rel, (kind, body, md.mode() & 0o7777));
    }
    out
}

/// One change a call makes; its links point at `canary`, a file outside
/// the workspace (never a system file: the tests run as root, and the
/// call writes through its links).
fn apply(ws: &Path, canary: &Path, c: &Change) {
    let at = |i: usize| ws.join(TREE[i]);
    let _ = match c {
        Change::Write(i) => std::fs::write(at(*i), b"written by the call\n"),
        Change::Create(i) => std::fs::create_dir_all(at(*i).parent().unwrap_or(ws))
            .and_then(|()| std::fs::write(at(*i), b"new\n")),
        Change::Remove(i) => {
            std::fs::remove_file(at(*i)).or_else(|_| std::fs::remove_dir_all(at(*i)))
        }
        Change::Mkdir(i) => std::fs::create_dir_all(at(*i)),
        Change::Symlink(i) => std::os::unix::fs::symlink(canary, at(*i)),
        Change::HardLink(i, j) => std::fs::hard_link(at(*i), at(*j)),
        Change::Rename(i, j) => std::fs::rename(at(*i), at(*j)),
        Change::Chmod(i) => {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(at(*i), std::fs::Permissions::from_mode(0o755))
        }
    };
}

/// The guard's promise on one tree and one call's changes: after `check`,
/// every path outside the scope is as it was when the guard was armed.
fn guard_case(pre: &[usize], changes: &[Change]) -> Result<(), String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let ws_path = dir.path().to_path_buf();
    std::fs::create_dir_all(ws_path.join("src")).map_err(|e| e.to_string())?;
    let outside = tempfile::tempdir().map_err(|e| e.to_string())?;
    let canary = outside.path().join("canary");
    std::fs::write(&canary, b"canary\n").map_err(|e| e.to_string())?;
    for &i in pre {
        let p = ws_path.join(TREE[i]);
        if TREE[i].contains('.') {
            let _ = std::fs::create_dir_all(p.parent().unwrap_or(&ws_path));
            let _ = std::fs::write(&p, format!("before: {}\n", TREE[i]));
        } else {
            let _ = std::fs::create_dir_all(&p);
        }
    }
    let ws = Workspace::open(&ws_path).map_err(|e| e.to_string())?;
    let allows = |rel: &str| rel.ends_with(".rs");
    let r = rule(&allows);
    let before = tree_state(&ws_path, "src");
    let guard = WriteGuard::arm(&ws, &[PathBuf::from("src")], &r, GuardBudget::default())
        .map_err(|e| e.to_string())?;
    for c in changes {
        apply(&ws_path, &canary, c);
    }
    // What the call left in the canary (it may write through a link);
    // the guard, restoring, must never follow one out.
    let called = std::fs::read(&canary).map_err(|e| e.to_string())?;
    let report = guard.check(&r);
    if !report.failed.is_empty() {
        return Err(format!("the guard failed to restore: {report:?}"));
    }
    if std::fs::read(&canary).map_err(|e| e.to_string())? != called {
        return Err(format!(
            "the guard wrote through a link out of the workspace ({report:?})"
        ));
    }
    let after = tree_state(&ws_path, "src");
    let outside = |p: &str| !allows(p);
    for (p, was) in before.iter().filter(|(p, _)| outside(p)) {
        // Below an in-scope directory the call may remove the directory
        // (and so this path) — that is the scope's to allow.
        let under_scope = Path::new(p)
            .ancestors()
            .skip(1)
            .any(|a| allows(&a.to_string_lossy()));
        match after.get(p) {
            Some(now) if now == was => {}
            None if under_scope => {}
            now => return Err(format!("{p}: was {was:?}, is {now:?} ({report:?})")),
        }
    }
    for (p, now) in after.iter().filter(|(p, _)| outside(p)) {
        if !before.contains_key(p) {
            let under_scope = Path::new(p)
                .ancestors()
                .skip(1)
                .any(|a| allows(&a.to_string_lossy()));
            // A new directory may stay to hold what the scope allows.
            let holds_scope = now.0 == 'd'
                && after
                    .keys()
                    .any(|q| allows(q) && Path::new(q).starts_with(Path::new(p)));
            if !under_scope && !holds_scope {
                return Err(format!("{p}: new and outside the scope, kept: {now:?}"));
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(config(128))]

    /// Whatever a call does to the tree, what lies outside the scope is
    /// as it was once the guard has checked.
    #[test]
    fn the_write_guard_restores_what_lies_outside_the_scope(
        pre in proptest::collection::vec(0..TREE.len(), 0..8),
        changes in proptest::collection::vec(change(), 1..8),
    ) {
        prop_assert_eq!(guard_case(&pre, &changes), Ok(()));
    }
}
