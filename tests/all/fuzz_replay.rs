//! Every fuzz target keeps passing its seeds and every input its
//! campaigns kept (`fuzz/seeds/<target>`, `fuzz/kept/<target>`): each one
//! through the target's `run` — the production parser and what must hold
//! of its result — in the build the suite already makes. A crash a
//! campaign found and fixed stays fixed here on every test run. Then a
//! smoke: 512 mutants of those inputs per target (byte flips, inserts,
//! cuts, repeats and splices, from a fixed seed, so every run mutates
//! alike), without coverage guidance — what keeps the targets building and
//! running in CI's one build. The campaigns themselves (`scripts/fuzz.sh`,
//! libFuzzer with coverage) are FUZZING.md's.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

/// The inputs of `target`, seeds first, each folder in name order.
fn inputs(target: &str) -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz");
    let mut out = Vec::new();
    for dir in ["seeds", "kept"] {
        let Ok(entries) = std::fs::read_dir(root.join(dir).join(target)) else {
            continue;
        };
        let mut files: Vec<PathBuf> = entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.is_file())
            .collect();
        files.sort();
        out.extend(files);
    }
    out
}

/// Mutants made per target.
const MUTANTS: usize = 512;

/// A fixed-seed xorshift: the same mutants on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self, below: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        usize::try_from(self.0 % u64::try_from(below.max(1)).expect("fits")).expect("fits")
    }
}

/// One mutant of `input` (with `other` for a splice).
fn mutate(rng: &mut Rng, input: &[u8], other: &[u8]) -> Vec<u8> {
    let mut out = input.to_vec();
    for _ in 0..=rng.next(4) {
        let at = rng.next(out.len() + 1);
        match rng.next(5) {
            0 if !out.is_empty() => {
                let i = at.min(out.len() - 1);
                out[i] ^= 1 << rng.next(8);
            }
            1 => out.insert(at, u8::try_from(rng.next(256)).expect("byte")),
            2 => {
                let end = (at + rng.next(16)).min(out.len());
                out.drain(at..end);
            }
            3 => {
                let end = (at + rng.next(32)).min(out.len());
                let chunk = out[at..end].to_vec();
                out.splice(at..at, chunk);
            }
            _ => {
                let from = rng.next(other.len() + 1);
                out.truncate(at);
                out.extend_from_slice(&other[from..]);
            }
        }
    }
    out
}

/// Run every input of `target` through `run`, then [`MUTANTS`] mutants of
/// them; name each that panics (a failing mutant is written under
/// `target/fuzz-replay/` to replay).
fn replay(target: &str, run: fn(&[u8])) {
    let all = inputs(target);
    assert!(!all.is_empty(), "{target}: no seeds (fuzz/seeds/{target})");
    let data: Vec<Vec<u8>> = all
        .iter()
        .map(|p| std::fs::read(p).expect("input"))
        .collect();
    let fails = |input: &[u8]| catch_unwind(AssertUnwindSafe(|| run(input))).is_err();
    let failed: Vec<String> = all
        .iter()
        .zip(&data)
        .filter(|(_, d)| fails(d))
        .map(|(p, _)| p.display().to_string())
        .collect();
    assert!(
        failed.is_empty(),
        "{target}: {} of {} inputs fail (replay one with `cargo fuzz run {target} FILE --fuzz-dir fuzz`): {failed:?}",
        failed.len(),
        all.len()
    );
    let mut rng = Rng(0x5eed_0048 ^ u64::try_from(target.len()).expect("fits"));
    for n in 0..MUTANTS {
        let input = &data[rng.next(data.len())];
        let other = &data[rng.next(data.len())];
        let mutant = mutate(&mut rng, input, other);
        if fails(&mutant) {
            let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/fuzz-replay");
            std::fs::create_dir_all(&dir).expect("dir");
            let file = dir.join(format!("{target}-{n}"));
            std::fs::write(&file, &mutant).expect("write");
            panic!(
                "{target}: mutant {n} fails; it is {} (`cargo fuzz run {target} {} --fuzz-dir fuzz`)",
                file.display(),
                file.display()
            );
        }
    }
}

macro_rules! targets {
    ($($name:ident),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                replay(stringify!($name), roost_tests::fuzz::$name::run);
            }
        )*
    };
}

targets!(
    acp,
    command_policy,
    command_policy_bash,
    config_toml,
    error_body,
    http_api,
    intents,
    mcp_client,
    mcp_config,
    mcp_server,
    modes,
    plugin_manifest,
    registry,
    skill_manifest,
    sse_stream,
    tool_args,
);

/// Every target of the fuzz crate is replayed above.
#[test]
fn every_target_is_replayed() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/fuzz_targets");
    let mut names: Vec<String> = std::fs::read_dir(root)
        .expect("fuzz_targets")
        .flatten()
        .filter_map(|e| {
            e.path()
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
        })
        .collect();
    names.sort();
    let replayed = [
        "acp",
        "command_policy",
        "command_policy_bash",
        "config_toml",
        "error_body",
        "http_api",
        "intents",
        "mcp_client",
        "mcp_config",
        "mcp_server",
        "modes",
        "plugin_manifest",
        "registry",
        "skill_manifest",
        "sse_stream",
        "tool_args",
    ];
    assert_eq!(names, replayed);
}
