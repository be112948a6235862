//! Programs that run another command: `timeout 5 rm f` runs `rm f`,
//! `sh -c 'rm f'` runs the script `rm f`, `find . -delete` deletes like
//! `rm`. The policy judges a wrapper *and* what it runs, so it must know,
//! for each wrapper, where in its words the inner command is. That
//! knowledge is this table: one [`Wrapper`] per program (matched on the
//! name it runs by, so `/usr/bin/timeout` is `timeout`), its options as
//! getopt reads them, the operands before the command, and how the rest
//! of its words run ([`Runs`]). Whatever a wrapper's words do not pin down
//! — an option the table does not know, a word only known when the line
//! runs, a command read from input — is [`Run::Unknown`]: a person
//! decides.

use super::Word;

/// Whether an option takes a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Arg {
    /// `-v`.
    No,
    /// `-k 5`, `-k5`, `--kill-after=5`, `--kill-after 5`.
    Value,
    /// Only attached: `-i{}`, `--replace={}`, or nothing.
    Optional,
}

/// What an option means for the command that runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Effect {
    /// Nothing the judge needs.
    Plain,
    /// With it, no command runs (`command -v`, `ionice -p`).
    NoRun,
    /// With it, what runs cannot be known from the words (why).
    Opaque(&'static str),
    /// Its value is a shell script that runs (`su -c`).
    Script,
    /// Its value is `NAME=VALUE`, set in the command's environment
    /// (`strace -E`).
    Assign,
    /// Its value names a variable the builtin sets at run time
    /// (`printf -v`).
    SetsVar,
    /// Its value (default `{}`) is replaced by input at run time
    /// (`xargs -I`).
    Replace,
    /// A shell's `-c`: its first operand is the script.
    ScriptOperand,
    /// A shell's `-s`/`-i`: it reads its commands from its input.
    Input,
}

/// One option of a wrapper: `-k` or `--kill-after`.
#[derive(Debug, Clone, Copy)]
pub(super) struct Opt {
    pub name: &'static str,
    pub arg: Arg,
    pub effect: Effect,
}

/// An option without a value that changes nothing the judge needs (`-v`).
pub(super) const fn flag(name: &'static str) -> Opt {
    Opt {
        name,
        arg: Arg::No,
        effect: Effect::Plain,
    }
}

/// An option with a value that changes nothing the judge needs (`-k 5`).
pub(super) const fn value(name: &'static str) -> Opt {
    Opt {
        name,
        arg: Arg::Value,
        effect: Effect::Plain,
    }
}

const fn optional(name: &'static str) -> Opt {
    Opt {
        name,
        arg: Arg::Optional,
        effect: Effect::Plain,
    }
}

/// An option taking `arg` whose meaning is `effect`.
pub(super) const fn with(name: &'static str, arg: Arg, effect: Effect) -> Opt {
    Opt { name, arg, effect }
}

const fn no_run(name: &'static str) -> Opt {
    with(name, Arg::No, Effect::NoRun)
}

/// What runs when a wrapper names no command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Absent {
    /// Nothing (it prints, or fails).
    Nothing,
    /// This command, with arguments from input (`xargs` runs `echo`).
    Command(&'static str),
    /// A shell that reads its commands from input (`sudo -s`, `chroot
    /// dir`).
    Input,
}

/// How a wrapper's words, after its options, run a command.
#[derive(Debug, Clone, Copy)]
pub(super) enum Runs {
    /// They are the command and its arguments (`timeout 5 rm f`).
    Command(Absent),
    /// The command and its first arguments; more come from its input
    /// (`xargs rm`), or replace a string in them (`xargs -I{} rm {}`).
    CommandWithInput,
    /// The command, or `-c SCRIPT` (`flock file -c 'rm f'`).
    CommandOrScript(&'static [&'static str]),
    /// Joined with spaces, a script (`eval`, `watch`).
    Joined,
    /// GNU parallel: the words before `:::` joined, a script with
    /// replacement strings (`{}`, `{.}`, …) filled in at run time.
    Parallel,
    /// A shell: `-c`'s script, a script file (a program of its own),
    /// or its input.
    Shell,
    /// `.`/`source`: a file of commands (a program of its own), unless
    /// it is the input.
    Source,
    /// `trap`: its first operand is a script run on a signal.
    Trap,
    /// `find`: `-exec`/`-execdir`/`-ok`/`-okdir … ;` run commands,
    /// `-delete` deletes (judged as `rm`).
    Find,
    /// Only what the options run (`su -c`).
    Options(Absent),
}

/// A program that runs a command.
#[derive(Debug, Clone, Copy)]
pub(super) struct Wrapper {
    /// The names it runs by.
    pub names: &'static [&'static str],
    /// Its options.
    pub opts: &'static [Opt],
    /// `+o`-style options too (shells).
    pub plus: bool,
    /// Options may follow operands (`su user -c …`); otherwise they end
    /// at the first operand, as every other wrapper's getopt does.
    pub permute: bool,
    /// Operands before the command (`timeout`'s duration).
    pub operands: usize,
    /// `NAME=VALUE` words before the command set its environment (`env`,
    /// `sudo`).
    pub assignments: bool,
    /// How the rest runs.
    pub runs: Runs,
}

impl Wrapper {
    const fn new(names: &'static [&'static str], opts: &'static [Opt], runs: Runs) -> Self {
        Self {
            names,
            opts,
            plus: false,
            permute: false,
            operands: 0,
            assignments: false,
            runs,
        }
    }

    const fn operands(mut self, n: usize) -> Self {
        self.operands = n;
        self
    }

    const fn assignments(mut self) -> Self {
        self.assignments = true;
        self
    }

    const fn plus(mut self) -> Self {
        self.plus = true;
        self
    }

    const fn permute(mut self) -> Self {
        self.permute = true;
        self
    }
}

const COMMAND: &[Opt] = &[flag("-p"), no_run("-v"), no_run("-V")];
const EXEC: &[Opt] = &[flag("-c"), flag("-l"), value("-a")];
const ENV: &[Opt] = &[
    flag("-"),
    flag("-i"),
    flag("--ignore-environment"),
    flag("-0"),
    flag("--null"),
    value("-u"),
    value("--unset"),
    value("-C"),
    value("--chdir"),
    with(
        "-S",
        Arg::Value,
        Effect::Opaque("`env -S` splits a string into a command"),
    ),
    with(
        "--split-string",
        Arg::Value,
        Effect::Opaque("`env -S` splits a string into a command"),
    ),
    flag("-v"),
    flag("--debug"),
    value("-a"),
    value("--argv0"),
    optional("--block-signal"),
    optional("--default-signal"),
    optional("--ignore-signal"),
    no_run("--list-signal-handling"),
];
const TIMEOUT: &[Opt] = &[
    flag("-f"),
    flag("--foreground"),
    flag("-p"),
    flag("--preserve-status"),
    flag("-v"),
    flag("--verbose"),
    value("-k"),
    value("--kill-after"),
    value("-s"),
    value("--signal"),
];
const NICE: &[Opt] = &[value("-n"), value("--adjustment")];
const STDBUF: &[Opt] = &[
    value("-i"),
    value("--input"),
    value("-o"),
    value("--output"),
    value("-e"),
    value("--error"),
];
const TIME: &[Opt] = &[
    flag("-p"),
    flag("--portability"),
    flag("-a"),
    flag("--append"),
    flag("-v"),
    flag("--verbose"),
    flag("-q"),
    flag("--quiet"),
    value("-f"),
    value("--format"),
    value("-o"),
    value("--output"),
];
const SETSID: &[Opt] = &[
    flag("-c"),
    flag("--ctty"),
    flag("-f"),
    flag("--fork"),
    flag("-w"),
    flag("--wait"),
];
const IONICE: &[Opt] = &[
    value("-c"),
    value("--class"),
    value("-n"),
    value("--classdata"),
    flag("-t"),
    flag("--ignore"),
    no_run("-p"),
    no_run("--pid"),
    no_run("-P"),
    no_run("--pgid"),
    no_run("-u"),
    no_run("--uid"),
];
const TASKSET: &[Opt] = &[
    flag("-a"),
    flag("--all-tasks"),
    flag("-c"),
    flag("--cpu-list"),
    no_run("-p"),
    no_run("--pid"),
];
const CHRT: &[Opt] = &[
    flag("-a"),
    flag("--all-tasks"),
    flag("-b"),
    flag("--batch"),
    flag("-d"),
    flag("--deadline"),
    flag("-f"),
    flag("--fifo"),
    flag("-i"),
    flag("--idle"),
    flag("-o"),
    flag("--other"),
    flag("-r"),
    flag("--rr"),
    flag("-R"),
    flag("--reset-on-fork"),
    flag("-v"),
    flag("--verbose"),
    value("-T"),
    value("--sched-runtime"),
    value("-P"),
    value("--sched-period"),
    value("-D"),
    value("--sched-deadline"),
    no_run("-p"),
    no_run("--pid"),
    no_run("-m"),
    no_run("--max"),
];
const FLOCK: &[Opt] = &[
    flag("-s"),
    flag("--shared"),
    flag("-x"),
    flag("-e"),
    flag("--exclusive"),
    flag("-u"),
    flag("--unlock"),
    flag("-n"),
    flag("--nb"),
    flag("--nonblock"),
    flag("-o"),
    flag("--close"),
    flag("-F"),
    flag("--no-fork"),
    flag("--verbose"),
    value("-w"),
    value("--wait"),
    value("--timeout"),
    value("-E"),
    value("--conflict-exit-code"),
];
const WATCH: &[Opt] = &[
    flag("-b"),
    flag("--beep"),
    flag("-c"),
    flag("--color"),
    flag("-C"),
    flag("--no-color"),
    optional("-d"),
    optional("--differences"),
    flag("-e"),
    flag("--errexit"),
    flag("-g"),
    flag("--chgexit"),
    value("-n"),
    value("--interval"),
    flag("-p"),
    flag("--precise"),
    flag("-t"),
    flag("--no-title"),
    flag("-w"),
    flag("--no-wrap"),
    flag("-x"),
    flag("--exec"),
    value("-q"),
    value("--equexit"),
    flag("-r"),
    flag("--no-rerun"),
];
const XARGS: &[Opt] = &[
    flag("-0"),
    flag("--null"),
    value("-a"),
    value("--arg-file"),
    value("-d"),
    value("--delimiter"),
    value("-E"),
    optional("-e"),
    optional("--eof"),
    with("-I", Arg::Value, Effect::Replace),
    with("-i", Arg::Optional, Effect::Replace),
    with("--replace", Arg::Optional, Effect::Replace),
    value("-L"),
    value("--max-lines"),
    optional("-l"),
    value("-n"),
    value("--max-args"),
    flag("-o"),
    flag("--open-tty"),
    flag("-p"),
    flag("--interactive"),
    value("-P"),
    value("--max-procs"),
    flag("-r"),
    flag("--no-run-if-empty"),
    value("-s"),
    value("--max-chars"),
    flag("-t"),
    flag("--verbose"),
    flag("-x"),
    flag("--exit"),
    no_run("--show-limits"),
];
const SUDO: &[Opt] = &[
    flag("-A"),
    flag("--askpass"),
    flag("-B"),
    flag("--bell"),
    flag("-b"),
    flag("--background"),
    flag("-E"),
    optional("--preserve-env"),
    flag("-H"),
    flag("--set-home"),
    flag("-n"),
    flag("--non-interactive"),
    flag("-P"),
    flag("--preserve-groups"),
    flag("-S"),
    flag("--stdin"),
    flag("-k"),
    flag("--reset-timestamp"),
    flag("-i"),
    flag("--login"),
    flag("-s"),
    flag("--shell"),
    value("-C"),
    value("--close-from"),
    value("-D"),
    value("--chdir"),
    value("-g"),
    value("--group"),
    value("--host"),
    value("-p"),
    value("--prompt"),
    value("-R"),
    value("--chroot"),
    value("-r"),
    value("--role"),
    value("-t"),
    value("--type"),
    value("-T"),
    value("--command-timeout"),
    value("-u"),
    value("--user"),
    value("-U"),
    value("--other-user"),
    with(
        "-e",
        Arg::No,
        Effect::Opaque("`sudo -e` runs the user's editor"),
    ),
    with(
        "--edit",
        Arg::No,
        Effect::Opaque("`sudo -e` runs the user's editor"),
    ),
    no_run("-h"),
    no_run("--help"),
    no_run("-l"),
    no_run("--list"),
    no_run("-v"),
    no_run("--validate"),
    no_run("-K"),
    no_run("--remove-timestamp"),
    no_run("-V"),
    no_run("--version"),
];
const DOAS: &[Opt] = &[
    flag("-n"),
    flag("-s"),
    value("-u"),
    with("-C", Arg::Value, Effect::NoRun),
    no_run("-L"),
];
const SU: &[Opt] = &[
    flag("-"),
    flag("-l"),
    flag("--login"),
    flag("-m"),
    flag("-p"),
    flag("--preserve-environment"),
    flag("-P"),
    flag("--pty"),
    flag("-f"),
    flag("--fast"),
    value("-g"),
    value("--group"),
    value("-G"),
    value("--supp-group"),
    value("-w"),
    value("--whitelist-environment"),
    with("-c", Arg::Value, Effect::Script),
    with("--command", Arg::Value, Effect::Script),
    with("--session-command", Arg::Value, Effect::Script),
    with(
        "-s",
        Arg::Value,
        Effect::Opaque("`su -s` names the program that runs"),
    ),
    with(
        "--shell",
        Arg::Value,
        Effect::Opaque("`su -s` names the program that runs"),
    ),
];
const BUSYBOX: &[Opt] = &[
    no_run("--list"),
    no_run("--list-full"),
    no_run("--install"),
    no_run("--help"),
];
const SHELL: &[Opt] = &[
    flag("-a"),
    flag("-b"),
    flag("-e"),
    flag("-f"),
    flag("-h"),
    flag("-k"),
    flag("-l"),
    flag("-m"),
    flag("-n"),
    flag("-p"),
    flag("-r"),
    flag("-t"),
    flag("-u"),
    flag("-v"),
    flag("-x"),
    flag("-B"),
    flag("-C"),
    flag("-E"),
    flag("-H"),
    flag("-P"),
    flag("-T"),
    value("-o"),
    value("-O"),
    with("-c", Arg::No, Effect::ScriptOperand),
    with("-i", Arg::No, Effect::Input),
    with("-s", Arg::No, Effect::Input),
    flag("--norc"),
    flag("--noprofile"),
    flag("--posix"),
    flag("--login"),
    flag("--restricted"),
    flag("--verbose"),
    flag("--noediting"),
    flag("--debugger"),
    no_run("--dump-po-strings"),
    no_run("--dump-strings"),
    no_run("--help"),
    no_run("--version"),
    with(
        "--rcfile",
        Arg::Value,
        Effect::Opaque("it runs a start-up file"),
    ),
    with(
        "--init-file",
        Arg::Value,
        Effect::Opaque("it runs a start-up file"),
    ),
];
const TRAP: &[Opt] = &[no_run("-l"), no_run("-p"), no_run("-P")];
const PARALLEL: &[Opt] = &[
    value("-j"),
    value("--jobs"),
    flag("-k"),
    flag("--keep-order"),
    flag("-v"),
    flag("--dry-run"),
    flag("-0"),
    flag("--null"),
    value("-n"),
    value("--max-args"),
    value("-N"),
    flag("-X"),
    flag("-m"),
    flag("--will-cite"),
    flag("--bar"),
    flag("--progress"),
    flag("--eta"),
    flag("--line-buffer"),
    flag("--tag"),
    flag("--group"),
    flag("-u"),
    flag("--ungroup"),
    flag("-q"),
    flag("--quote"),
    value("--halt"),
    value("--timeout"),
    value("--retries"),
    value("--joblog"),
    value("--colsep"),
    value("-d"),
    value("--delimiter"),
    value("-a"),
    value("--arg-file"),
    with("-I", Arg::Value, Effect::Replace),
];
const STRACE: &[Opt] = &[
    flag("-f"),
    flag("-F"),
    flag("-c"),
    flag("-C"),
    flag("-d"),
    flag("-D"),
    flag("-i"),
    flag("-k"),
    flag("-n"),
    flag("-q"),
    flag("-r"),
    flag("-t"),
    flag("-T"),
    flag("-v"),
    flag("-w"),
    flag("-x"),
    flag("-y"),
    flag("-z"),
    flag("-Z"),
    no_run("-V"),
    no_run("-h"),
    value("-a"),
    value("-b"),
    value("-e"),
    value("-I"),
    value("-o"),
    value("-O"),
    value("-s"),
    value("-S"),
    value("-u"),
    value("-U"),
    value("-X"),
    value("-P"),
    with("-p", Arg::Value, Effect::NoRun),
    with("--attach", Arg::Value, Effect::NoRun),
    with("-E", Arg::Value, Effect::Assign),
    with("--env", Arg::Value, Effect::Assign),
    flag("--follow-forks"),
    flag("--summary-only"),
    flag("--summary"),
    flag("--seccomp-bpf"),
    value("--output"),
    value("--trace"),
    value("--string-limit"),
    value("--user"),
];
const UNSHARE: &[Opt] = &[
    flag("-m"),
    flag("-u"),
    flag("-i"),
    flag("-n"),
    flag("-p"),
    flag("-U"),
    flag("-C"),
    flag("-T"),
    flag("-f"),
    flag("-r"),
    flag("-c"),
    optional("--mount"),
    optional("--uts"),
    optional("--ipc"),
    optional("--net"),
    optional("--pid"),
    optional("--user"),
    optional("--cgroup"),
    optional("--time"),
    flag("--fork"),
    flag("--map-root-user"),
    flag("--map-current-user"),
    flag("--map-auto"),
    flag("--keep-caps"),
    optional("--kill-child"),
    optional("--mount-proc"),
    value("-R"),
    value("--root"),
    value("-w"),
    value("--wd"),
    value("-S"),
    value("--setuid"),
    value("-G"),
    value("--setgid"),
    value("--propagation"),
    value("--setgroups"),
    value("--map-user"),
    value("--map-group"),
    value("--map-users"),
    value("--map-groups"),
    value("--monotonic"),
    value("--boottime"),
];
const CHROOT: &[Opt] = &[value("--userspec"), value("--groups"), flag("--skip-chdir")];

/// Every wrapper the policy sees through.
pub(super) const WRAPPERS: &[Wrapper] = &[
    Wrapper::new(&["command"], COMMAND, Runs::Command(Absent::Nothing)),
    Wrapper::new(&["exec"], EXEC, Runs::Command(Absent::Nothing)),
    Wrapper::new(&["builtin"], &[], Runs::Command(Absent::Nothing)),
    Wrapper::new(&["env"], ENV, Runs::Command(Absent::Nothing)).assignments(),
    Wrapper::new(&["timeout"], TIMEOUT, Runs::Command(Absent::Nothing)).operands(1),
    Wrapper::new(&["nice"], NICE, Runs::Command(Absent::Nothing)),
    Wrapper::new(&["nohup"], &[], Runs::Command(Absent::Nothing)),
    Wrapper::new(&["stdbuf"], STDBUF, Runs::Command(Absent::Nothing)),
    Wrapper::new(&["time"], TIME, Runs::Command(Absent::Nothing)),
    Wrapper::new(&["setsid"], SETSID, Runs::Command(Absent::Nothing)),
    Wrapper::new(&["ionice"], IONICE, Runs::Command(Absent::Nothing)),
    Wrapper::new(&["taskset"], TASKSET, Runs::Command(Absent::Nothing)).operands(1),
    Wrapper::new(&["chrt"], CHRT, Runs::Command(Absent::Nothing)).operands(1),
    Wrapper::new(
        &["flock"],
        FLOCK,
        Runs::CommandOrScript(&["-c", "--command"]),
    )
    .operands(1),
    Wrapper::new(&["watch"], WATCH, Runs::Joined),
    Wrapper::new(&["xargs"], XARGS, Runs::CommandWithInput),
    Wrapper::new(&["find"], &[], Runs::Find),
    Wrapper::new(&["sudo"], SUDO, Runs::Command(Absent::Input)).assignments(),
    Wrapper::new(&["doas"], DOAS, Runs::Command(Absent::Input)),
    Wrapper::new(&["su", "runuser"], SU, Runs::Options(Absent::Input)).permute(),
    Wrapper::new(&["busybox"], BUSYBOX, Runs::Command(Absent::Nothing)),
    Wrapper::new(
        &["sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "rbash"],
        SHELL,
        Runs::Shell,
    )
    .plus(),
    Wrapper::new(&["eval"], &[], Runs::Joined),
    Wrapper::new(&["trap"], TRAP, Runs::Trap),
    Wrapper::new(&["source", "."], &[], Runs::Source),
    Wrapper::new(&["parallel"], PARALLEL, Runs::Parallel),
    Wrapper::new(&["strace"], STRACE, Runs::Command(Absent::Nothing)),
    Wrapper::new(&["unshare"], UNSHARE, Runs::Command(Absent::Input)),
    Wrapper::new(&["chroot"], CHROOT, Runs::Command(Absent::Input)).operands(1),
];

/// The wrapper a program (by the name it runs as) is, if any.
pub(super) fn wrapper(program: &str) -> Option<&'static Wrapper> {
    WRAPPERS.iter().find(|w| w.names.contains(&program))
}

/// What a wrapper runs.
#[derive(Debug)]
pub(super) enum Run {
    /// A command with its words.
    Command(Vec<Word>),
    /// A shell script.
    Script(String),
    /// Something its words do not pin down (why).
    Unknown(String),
}

/// What a wrapper's words run and the variables they set for it.
#[derive(Debug, Default)]
pub(super) struct Inner {
    pub runs: Vec<Run>,
    /// `NAME`, and `VALUE` when known before the line runs.
    pub assigns: Vec<(String, Option<String>)>,
}

impl Inner {
    fn unknown(why: impl Into<String>) -> Self {
        Self {
            runs: vec![Run::Unknown(why.into())],
            assigns: Vec::new(),
        }
    }
}

/// The options of a builtin or wrapper, as getopt reads them.
#[derive(Debug, Default)]
pub(super) struct Given {
    /// The options, with their values.
    pub opts: Vec<(Opt, Option<Word>)>,
    /// Where the words after the options start.
    pub end: usize,
    /// Operands among the options (`permute` only).
    pub operands: Vec<Word>,
}

impl Given {
    pub fn has(&self, effect: Effect) -> bool {
        self.opts.iter().any(|(o, _)| o.effect == effect)
    }
}

fn only_known_at_run_time(w: &Word) -> String {
    format!("`{}` is only known when it runs", w.raw)
}

/// Read `args` as getopt would with `opts`: options until the first
/// operand (or everywhere when `permute`), `--` ends them. An option not
/// in `opts`, or a word only known at run time where an option may be,
/// is an error saying so.
pub(super) fn getopt(
    opts: &[Opt],
    plus: bool,
    permute: bool,
    args: &[Word],
) -> Result<Given, String> {
    let find = |name: &str| opts.iter().find(|o| o.name == name).copied();
    let unknown = |t: &str| format!("its option `{t}` is not one the rules know");
    let mut given = Given::default();
    let mut i = 0;
    while i < args.len() {
        let w = &args[i];
        let Some(t) = w.text.as_deref() else {
            return Err(only_known_at_run_time(w));
        };
        if t == "--" {
            i += 1;
            if permute {
                given.operands.extend(args[i..].iter().cloned());
                i = args.len();
            }
            break;
        }
        if let Some(o) = find(t).filter(|o| o.name == "-") {
            given.opts.push((o, None));
        } else if let Some(long) = t.strip_prefix("--") {
            let (name, attached) = match long.split_once('=') {
                Some((n, v)) => (n, Some(v)),
                None => (long, None),
            };
            let o = find(&format!("--{name}")).ok_or_else(|| unknown(t))?;
            let v = match (o.arg, attached) {
                (Arg::No, Some(_)) => return Err(unknown(t)),
                (Arg::No, None) | (Arg::Optional, None) => None,
                (_, Some(v)) => Some(Word::literal(v)),
                (Arg::Value, None) => {
                    i += 1;
                    Some(
                        args.get(i)
                            .cloned()
                            .ok_or_else(|| format!("`{t}` needs a value"))?,
                    )
                }
            };
            given.opts.push((o, v));
        } else if (t.starts_with('-') || (plus && t.starts_with('+'))) && t.len() > 1 {
            let cluster = &t[1..];
            for (k, c) in cluster.char_indices() {
                let o = find(&format!("-{c}")).ok_or_else(|| unknown(t))?;
                let rest = &cluster[k + c.len_utf8()..];
                match o.arg {
                    Arg::No => given.opts.push((o, None)),
                    Arg::Optional => {
                        given
                            .opts
                            .push((o, (!rest.is_empty()).then(|| Word::literal(rest))));
                        break;
                    }
                    Arg::Value => {
                        let v = if rest.is_empty() {
                            i += 1;
                            args.get(i)
                                .cloned()
                                .ok_or_else(|| format!("`-{c}` needs a value"))?
                        } else {
                            Word::literal(rest)
                        };
                        given.opts.push((o, Some(v)));
                        break;
                    }
                }
            }
        } else if permute {
            given.operands.push(w.clone());
        } else {
            break;
        }
        i += 1;
    }
    given.end = i;
    Ok(given)
}

/// `NAME=VALUE` in a word, when it is one: the name, and the value when
/// known before the line runs.
pub(super) fn assignment(w: &Word) -> Option<(String, Option<String>)> {
    match &w.text {
        Some(t) => t
            .split_once('=')
            .filter(|(n, _)| !n.is_empty())
            .map(|(n, v)| (n.to_owned(), Some(v.to_owned()))),
        // `X=$(…)`: the name is written, the value is not known.
        None => {
            let (n, _) = w.raw.split_once('=')?;
            let name = n.strip_suffix('+').unwrap_or(n);
            let ident = name
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            ident.then(|| (name.to_owned(), None))
        }
    }
}

/// A path a shell reads as its input rather than a file of its own.
fn is_input(path: &str) -> bool {
    path == "-"
        || path == "/dev/stdin"
        || path.starts_with("/dev/fd/")
        || (path.starts_with("/proc/") && path.contains("/fd/"))
}

impl Wrapper {
    /// What this wrapper's arguments (`args`: its words after its name)
    /// run.
    pub(super) fn inner(&self, args: &[Word]) -> Inner {
        if let Runs::Find = self.runs {
            return find(args);
        }
        let given = match getopt(self.opts, self.plus, self.permute, args) {
            Ok(g) => g,
            Err(why) => return Inner::unknown(why),
        };
        let mut inner = Inner::default();
        let mut replace = Vec::new();
        for (o, v) in &given.opts {
            match o.effect {
                Effect::NoRun => return Inner::default(),
                Effect::Opaque(why) => return Inner::unknown(why),
                Effect::Script => match v.as_ref().and_then(|v| v.text.clone()) {
                    Some(s) => inner.runs.push(Run::Script(s)),
                    None => return Inner::unknown("its script is only known when it runs"),
                },
                Effect::Assign => match v.as_ref().and_then(assignment) {
                    Some(a) => inner.assigns.push(a),
                    None => return Inner::unknown("it sets a variable only known when it runs"),
                },
                Effect::Replace => match v.as_ref().map(|v| v.text.clone()) {
                    Some(Some(r)) if !r.is_empty() => replace.push(r),
                    Some(Some(_)) | None => replace.push("{}".to_owned()),
                    Some(None) => {
                        return Inner::unknown("its replacement string is only known when it runs");
                    }
                },
                Effect::Plain | Effect::SetsVar | Effect::ScriptOperand | Effect::Input => {}
            }
        }
        let mut rest = &args[given.end..];
        for _ in 0..self.operands {
            match rest.first() {
                None => return inner,
                Some(w) if w.text.is_none() => return Inner::unknown(only_known_at_run_time(w)),
                Some(_) => rest = &rest[1..],
            }
        }
        if self.assignments {
            while let Some(w) = rest.first() {
                match assignment(w) {
                    Some(a) => inner.assigns.push(a),
                    None if w.text.is_none() => return Inner::unknown(only_known_at_run_time(w)),
                    None => break,
                }
                rest = &rest[1..];
            }
        }
        let absent = |inner: &mut Inner, a: Absent| match a {
            Absent::Nothing => {}
            Absent::Command(c) => inner.runs.push(Run::Command(vec![
                Word::literal(c),
                Word::runtime("{input}"),
            ])),
            Absent::Input => inner.runs.push(Run::Unknown(
                "it runs a shell that reads its commands from input".into(),
            )),
        };
        match self.runs {
            Runs::Command(a) => {
                if rest.is_empty() {
                    absent(&mut inner, a);
                } else {
                    inner.runs.push(Run::Command(rest.to_vec()));
                }
            }
            Runs::CommandWithInput => {
                if rest.is_empty() {
                    absent(&mut inner, Absent::Command("echo"));
                } else {
                    inner.runs.push(Run::Command(with_input(rest, &replace)));
                }
            }
            Runs::CommandOrScript(script) => match rest {
                [] => {}
                [c, s, ..] if c.text.as_deref().is_some_and(|t| script.contains(&t)) => {
                    match &s.text {
                        Some(s) => inner.runs.push(Run::Script(s.clone())),
                        None => return Inner::unknown("its script is only known when it runs"),
                    }
                }
                _ => inner.runs.push(Run::Command(rest.to_vec())),
            },
            Runs::Joined => {
                if !rest.is_empty() {
                    match joined(rest) {
                        Ok(s) => inner.runs.push(Run::Script(s)),
                        Err(why) => return Inner::unknown(why),
                    }
                }
            }
            Runs::Parallel => return parallel(rest, &replace),
            Runs::Shell => {
                if given.has(Effect::ScriptOperand) {
                    match rest.first().map(|w| &w.text) {
                        Some(Some(s)) => inner.runs.push(Run::Script(s.clone())),
                        Some(None) => {
                            return Inner::unknown("its script is only known when it runs");
                        }
                        None => {}
                    }
                } else if given.has(Effect::Input) {
                    return Inner::unknown("it reads its commands from input");
                } else {
                    return source(rest.first());
                }
            }
            Runs::Source => return source(rest.first()),
            Runs::Trap => {
                if let [action, _, ..] = rest {
                    match action.text.as_deref() {
                        Some("-") => {}
                        Some(s) => inner.runs.push(Run::Script(s.to_owned())),
                        None => return Inner::unknown("its action is only known when it runs"),
                    }
                }
            }
            Runs::Options(a) => {
                if inner.runs.is_empty() {
                    absent(&mut inner, a);
                }
            }
            Runs::Find => {}
        }
        inner
    }
}

/// A shell (or `.`) running the file `file`: a program of its own, unless
/// it is its input or only known at run time.
fn source(file: Option<&Word>) -> Inner {
    match file {
        None => Inner::unknown("it reads its commands from input"),
        Some(w) => match w.text.as_deref() {
            None => Inner::unknown(format!(
                "it runs the commands of `{}`, only known when it runs",
                w.raw
            )),
            Some(p) if is_input(p) => Inner::unknown("it reads its commands from input"),
            Some(_) => Inner::default(),
        },
    }
}

/// `xargs`'s command: its words, then words from input — or, with a
/// replacement string, its words with the string filled in from input.
fn with_input(words: &[Word], replace: &[String]) -> Vec<Word> {
    if replace.is_empty() {
        let mut w = words.to_vec();
        w.push(Word::runtime("{input}"));
        return w;
    }
    words
        .iter()
        .map(|w| match &w.text {
            Some(t) if replace.iter().any(|r| t.contains(r.as_str())) => Word::runtime(t),
            _ => w.clone(),
        })
        .collect()
}

/// Words joined with spaces, as `eval` and `watch` run them.
fn joined(words: &[Word]) -> Result<String, String> {
    let mut parts = Vec::with_capacity(words.len());
    for w in words {
        match &w.text {
            Some(t) => parts.push(t.as_str()),
            None => return Err(format!("it runs `{}`, only known when it runs", w.raw)),
        }
    }
    Ok(parts.join(" "))
}

/// A variable that is never set: what a replacement string becomes in a
/// script, so the word is only known at run time.
const RUNTIME: &str = "${__roost_filled_in_at_run_time}";

/// GNU parallel: the words before `:::`/`::::` joined, with replacement
/// strings (`{}`, `{.}`, `{/}`, `{//}`, `{/.}`, `{#}`, `{%}`, `{3}`, …
/// and `-I`'s) filled in at run time; `{= perl =}` runs Perl.
fn parallel(rest: &[Word], replace: &[String]) -> Inner {
    let end = rest
        .iter()
        .position(|w| matches!(w.text.as_deref(), Some(":::" | "::::" | ":::+" | "::::+")))
        .unwrap_or(rest.len());
    if end == 0 {
        return Inner::unknown("its commands come from its input");
    }
    let mut script = match joined(&rest[..end]) {
        Ok(s) => s,
        Err(why) => return Inner::unknown(why),
    };
    if script.contains("{=") {
        return Inner::unknown("`{= … =}` runs Perl");
    }
    for r in replace {
        script = script.replace(r.as_str(), RUNTIME);
    }
    let mut out = String::with_capacity(script.len());
    let mut s = script.as_str();
    while let Some(open) = s.find('{') {
        out.push_str(&s[..open]);
        let after = &s[open + 1..];
        let close = after.find('}');
        let is_replacement = close.is_some_and(|c| {
            let inner = after[..c].trim_start_matches(|ch: char| ch.is_ascii_digit());
            matches!(inner, "" | "." | "/" | "//" | "/." | "#" | "%")
        });
        match close {
            Some(c) if is_replacement => {
                out.push_str(RUNTIME);
                s = &after[c + 1..];
            }
            _ => {
                out.push('{');
                s = after;
            }
        }
    }
    out.push_str(s);
    Inner {
        runs: vec![Run::Script(out)],
        assigns: Vec::new(),
    }
}

/// `find`'s expression: `-exec`, `-execdir`, `-ok`, `-okdir` run the
/// words up to `;` or `+` (`{}` filled in at run time); `-delete` deletes
/// as `rm` does. A word only known at run time could be any of these.
fn find(args: &[Word]) -> Inner {
    let mut inner = Inner::default();
    if let Some(w) = args.iter().find(|w| w.text.is_none()) {
        return Inner::unknown(format!(
            "its expression has `{}`, only known when it runs",
            w.raw
        ));
    }
    let mut i = 0;
    while i < args.len() {
        match args[i].text.as_deref() {
            Some("-exec" | "-execdir" | "-ok" | "-okdir") => {
                let start = i + 1;
                let mut end = start;
                while end < args.len() && !matches!(args[end].text.as_deref(), Some(";" | "+")) {
                    end += 1;
                }
                let words: Vec<Word> = args[start..end]
                    .iter()
                    .map(|w| match &w.text {
                        Some(t) if t.contains("{}") => Word::runtime(t),
                        _ => w.clone(),
                    })
                    .collect();
                if !words.is_empty() {
                    inner.runs.push(Run::Command(words));
                }
                i = end;
            }
            Some("-delete") => inner.runs.push(Run::Command(vec![
                Word::literal("rm"),
                Word::runtime("{files find deletes}"),
            ])),
            _ => {}
        }
        i += 1;
    }
    inner
}
