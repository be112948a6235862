//! The command-policy judge against bash itself. A line (raw input, or
//! built from a vocabulary of shell tokens by the input's bytes) is judged
//! under a fixed set of rules; when the judge allows it, the line runs as
//! Roost runs a command — `bash -c LINE` — in a throwaway bubblewrap
//! sandbox (read-only system, empty workspace, no network), every `execve`
//! traced by strace, with every bash builtin disabled (so a builtin, too,
//! is looked up, and one bash cannot find is handed to a
//! `command_not_found_handle` that traces its words).
//!
//! Must hold: **every command bash runs for an allowed line is itself
//! allowed by the rules** (each traced command judged on its own). A
//! denied line is never run here, as `execute_command` never runs one.
//!
//! Not seen: the builtins of a second shell a line starts (`sh -c`'s own
//! `cd`), which run no program.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

use roost_commands::policy::{CommandRules, Verdict};

use crate::input::Input;

/// The rules every line is judged by: a realistic allow list with the
/// wrappers the judge sees through, and deny rules under them.
pub const ALLOWED: &[&str] = &[
    "echo", "printf", "cat", "ls", "true", "false", "grep", "head", "wc", "sort", "test",
    "timeout", "env", "xargs", "find", "nice", "sh -c", "bash -c", "=pwd", "cd", "exit",
];
/// Denied under the allow list.
pub const DENIED: &[&str] = &["rm", "sh -c rm", "find -delete", "xargs rm", "curl", "cp"];

/// Tokens a line is built from (one per input byte).
const TOKENS: &[&str] = &[
    " ",
    " ",
    " ",
    "echo",
    "printf",
    "cat",
    "ls",
    "true",
    "false",
    "grep",
    "head",
    "wc",
    "sort",
    "test",
    "timeout 1",
    "env",
    "xargs",
    "find",
    "nice",
    "sh -c",
    "bash -c",
    "pwd",
    "cd",
    "exit",
    "rm",
    "curl",
    "cp",
    "eval",
    "exec",
    "command",
    "builtin",
    "source",
    ".",
    "trap",
    "alias",
    "set",
    "export",
    "unset",
    "declare",
    "local",
    "shopt",
    "enable",
    "hash",
    "type",
    "read",
    "mapfile",
    "coproc",
    "time",
    "function",
    "f",
    "f()",
    "x",
    "x=",
    "PATH=",
    "IFS=",
    "BASH_ENV=",
    "-exec",
    "-delete",
    "{}",
    "\\;",
    ";",
    "&&",
    "||",
    "|",
    "|&",
    "&",
    "\n",
    "(",
    ")",
    "{",
    "}",
    "$(",
    "`",
    "<(",
    ">(",
    "\"",
    "'",
    "\\",
    "$'",
    "${",
    "$",
    "=",
    "#",
    "<<",
    "<<<",
    "EOF",
    ">",
    ">>",
    "2>&1",
    "<",
    "*",
    "?",
    "[",
    "]",
    "~",
    "!",
    "if",
    "then",
    "else",
    "fi",
    "for",
    "in",
    "do",
    "done",
    "while",
    "case",
    "esac",
    ";;",
    "$((",
    "))",
    "((",
    "[[",
    "]]",
    "$x",
    "$IFS",
    "$@",
    "$0",
    "$$",
    "a",
    "b",
    "-c",
    "-n",
    "-e",
    "--",
    "1",
    "0",
    "/",
    "./",
    "/usr/bin/",
    "\\n",
    "%s",
    "x.txt",
    ",",
    "$PATH",
    "!!",
    "^",
    "@(",
    "+(",
    ":",
];

static JUDGED: AtomicU64 = AtomicU64::new(0);
static RAN: AtomicU64 = AtomicU64::new(0);

struct Oracle {
    rules: CommandRules,
    dir: PathBuf,
}

fn oracle() -> &'static Oracle {
    static ORACLE: OnceLock<Oracle> = OnceLock::new();
    ORACLE.get_or_init(|| {
        let allowed: Vec<String> = ALLOWED.iter().map(|s| (*s).to_owned()).collect();
        let denied: Vec<String> = DENIED.iter().map(|s| (*s).to_owned()).collect();
        let rules = match CommandRules::new(&allowed, &denied) {
            Ok(r) => r,
            Err(e) => panic!("the oracle's rules: {e}"),
        };
        let dir = crate::scratch::fresh("bash-oracle");
        let prelude =
            "command_not_found_handle() { /.roost-missing \"$@\"; }\nenable -n $(compgen -b)\n";
        if let Err(e) = std::fs::create_dir_all(dir.join("out"))
            .and_then(|()| std::fs::write(dir.join("out/prelude.sh"), prelude))
        {
            panic!("cannot write the prelude: {e}");
        }
        Oracle { rules, dir }
    })
}

/// The line the input stands for: its bytes as text (first byte even), or
/// its bytes as tokens.
pub fn line_of(data: &[u8]) -> String {
    let mut input = Input::new(data);
    let mode = input.byte();
    let rest = input.rest();
    if mode.is_multiple_of(2) {
        return String::from_utf8_lossy(rest).into_owned();
    }
    rest.iter()
        .filter_map(|b| TOKENS.get(usize::from(*b) % TOKENS.len()))
        .copied()
        .collect()
}

/// The target.
pub fn run(data: &[u8]) {
    let line = line_of(data);
    if line.len() > 2000 || line.contains('\0') {
        return;
    }
    let o = oracle();
    let judged = JUDGED.fetch_add(1, Ordering::Relaxed) + 1;
    let allowed = o.rules.judge(&line).verdict == Verdict::Allowed;
    let ran = RAN.fetch_add(u64::from(allowed), Ordering::Relaxed) + u64::from(allowed);
    if judged.is_multiple_of(1000) {
        record(judged, ran);
    }
    if !allowed {
        return;
    }
    let Some(commands) = trace(&o.dir, &line) else {
        return;
    };
    for words in commands {
        if words.is_empty() {
            continue;
        }
        assert!(
            o.rules.allows_command(&words),
            "the judge allowed {line:?}, but bash ran {words:?}, which the rules do not allow"
        );
    }
}

/// Counts for FUZZING.md, written where `ROOST_FUZZ_STATS` says.
fn record(judged: u64, ran: u64) {
    if let Some(path) = std::env::var_os("ROOST_FUZZ_STATS") {
        let _ = std::fs::write(path, format!("{{\"judged\":{judged},\"ran\":{ran}}}\n"));
    }
}

/// Run `line` as Roost would, traced; every command bash ran (its words),
/// or `None` when the run did not finish (killed at its bound).
fn trace(dir: &Path, line: &str) -> Option<Vec<Vec<String>>> {
    let ws = dir.join("ws");
    let out = dir.join("out");
    let _ = std::fs::remove_dir_all(&ws);
    let _ = std::fs::create_dir_all(&ws);
    let log = out.join("trace");
    let _ = std::fs::remove_file(&log);
    let s = |p: &Path| p.to_string_lossy().into_owned();
    let status = Command::new("timeout")
        .args(["-s", "KILL", "5", "bwrap", "--ro-bind", "/usr", "/usr"])
        .args([
            "--symlink",
            "usr/bin",
            "/bin",
            "--symlink",
            "usr/lib",
            "/lib",
        ])
        .args([
            "--symlink",
            "usr/lib64",
            "/lib64",
            "--symlink",
            "usr/sbin",
            "/sbin",
        ])
        .args([
            "--ro-bind",
            "/etc",
            "/etc",
            "--dev",
            "/dev",
            "--proc",
            "/proc",
        ])
        .args([
            "--tmpfs",
            "/tmp",
            "--bind",
            &s(&ws),
            "/ws",
            "--bind",
            &s(&out),
            "/out",
        ])
        .args([
            "--chdir",
            "/ws",
            "--unshare-all",
            "--die-with-parent",
            "--new-session",
        ])
        .args([
            "--clearenv",
            "--setenv",
            "PATH",
            "/usr/bin:/bin",
            "--setenv",
            "HOME",
            "/ws",
        ])
        .args(["--setenv", "BASH_ENV", "/out/prelude.sh", "--"])
        .args([
            "/usr/bin/strace",
            "-f",
            "-qq",
            "-v",
            "-xx",
            "-s",
            "4096",
            "--seccomp-bpf",
        ])
        .args([
            "-e",
            "trace=execve",
            "-e",
            "signal=none",
            "-o",
            "/out/trace",
        ])
        .args(["/bin/bash", "-c", line])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    match status {
        Ok(s) if s.code().is_some() => {}
        Ok(_) => return None,
        Err(e) => panic!("cannot run the oracle (bwrap and strace installed?): {e}"),
    }
    let text = std::fs::read(&log).ok()?;
    let text = String::from_utf8_lossy(&text);
    let mut commands = Vec::new();
    let mut first = true;
    for l in text.lines() {
        let Some(argv) = execve_argv(l) else {
            continue;
        };
        if first {
            first = false;
            continue;
        }
        let words = match argv.split_first() {
            Some((head, rest)) if head == "/.roost-missing" => rest.to_vec(),
            _ => argv,
        };
        commands.push(words);
    }
    if first {
        panic!("the trace of {line:?} holds no execve: is strace working?");
    }
    Some(commands)
}

/// The argv of one `execve` line of `strace -xx` (every string in hex).
pub fn execve_argv(l: &str) -> Option<Vec<String>> {
    let at = l.find("execve(\"")?;
    let rest = l.get(at + "execve(\"".len()..)?;
    let close = rest.find('"')?;
    let rest = rest.get(close..)?;
    let open = rest.find('[')?;
    let rest = rest.get(open + 1..)?;
    let end = rest.find(']')?;
    let list = rest.get(..end)?;
    let mut argv = Vec::new();
    for item in list.split(", ") {
        let item = item.trim().trim_matches('"');
        if item.is_empty() && list.is_empty() {
            break;
        }
        argv.push(unhex(item)?);
    }
    Some(argv)
}

fn unhex(s: &str) -> Option<String> {
    let mut bytes = Vec::new();
    let mut rest = s;
    while !rest.is_empty() {
        let hex = rest.strip_prefix("\\x")?;
        let (h, tail) = hex.split_at_checked(2)?;
        bytes.push(u8::from_str_radix(h, 16).ok()?);
        rest = tail;
    }
    Some(String::from_utf8_lossy(&bytes).into_owned())
}
