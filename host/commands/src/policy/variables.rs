//! Variables a line sets. A variable can make a program run anything —
//! `GIT_CONFIG_*`/`GIT_CONFIG_PARAMETERS` (`core.fsmonitor`, `core.pager`),
//! `LD_PRELOAD`, `BASH_ENV`, `ENV`, `PATH`, `GIT_SSH_COMMAND`, `PAGER`,
//! `EDITOR`, `PYTHONSTARTUP`, `NODE_OPTIONS`, the shell's own `PS4`,
//! `BASH_CMDS` … — so a line that sets one is not allowed on the strength
//! of its command names: a person decides. That holds however it is set:
//! before a command (`X=1 cmd`), alone (`X=1; cmd`: it may already be
//! exported), by `export`/`declare`/`local`/`readonly`/`typeset`, by
//! `env`/`sudo`/`strace -E`, as a loop variable, or from input (`read`,
//! `mapfile`, `printf -v`, `getopts`, `wait -p`).
//!
//! The one exception is [`INERT`]: a few variables no program reads as a
//! program, a path or code, set to a plain value known before the line
//! runs (`RUST_BACKTRACE=1 cargo test`).
//!
//! Alongside, the builtins that change what a name runs (`alias`,
//! `hash -p`, `enable -f`), that make one name stand for another
//! (`declare -n`) or that evaluate arithmetic (`let`, and a subscript in a
//! variable's name: `a[$(cmd)]`), which can run commands the parser does
//! not see: never allowed by rules either.

use super::Word;
use super::wrappers::{Arg, Effect, Opt, flag, getopt, value, with};

/// Variables that are inert with a plain value: no program runs, loads
/// or reads a file because of them. The list is short on purpose: a
/// variable missing from it only means a person decides.
pub(super) const INERT: &[&str] = &[
    "RUST_BACKTRACE",
    "RUST_LOG",
    "CARGO_TERM_COLOR",
    "NO_COLOR",
    "FORCE_COLOR",
    "CLICOLOR",
    "CLICOLOR_FORCE",
    "COLUMNS",
    "LINES",
    "TERM",
    "LANG",
    "LANGUAGE",
    "LC_ALL",
    "LC_CTYPE",
    "LC_MESSAGES",
    "LC_COLLATE",
    "LC_NUMERIC",
    "LC_TIME",
    "TZ",
    "CI",
    "NODE_ENV",
    "PYTHONUNBUFFERED",
    "PYTHONDONTWRITEBYTECODE",
    "PYTHONHASHSEED",
];

/// Whether setting `name` to `value` is inert: an [`INERT`] name, a value
/// known before the line runs, made of letters, digits and `._,:=+-@%`
/// (no path, no space, nothing a shell or a program expands).
pub(super) fn inert(name: &str, value: Option<&str>) -> bool {
    INERT.contains(&name)
        && value.is_some_and(|v| {
            v.chars()
                .all(|c| c.is_ascii_alphanumeric() || "._,:=+-@%".contains(c))
        })
}

/// Whether a loop variable named `name` stays the shell's own: a name of
/// lowercase letters, digits and `_` is not in a command's environment
/// (which holds only `PATH`, `HOME`, `LANG`, `TERM`, the profile's
/// variables and the proxy's `*_proxy`) and is not one the shell itself
/// acts on (those are uppercase), so `for f in *.rs; do wc -l "$f"; done`
/// changes nothing a program reads.
pub(super) fn shell_local(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && !name.ends_with("_proxy")
}

/// Where a builtin's operands name variables.
#[derive(Debug, Clone, Copy)]
enum Targets {
    /// `NAME[=VALUE]`: those with a value are set (`declare`, `export`).
    Declarations,
    /// Every operand is set from input (`read a b`).
    Every,
    /// The last operand is set from input (`mapfile lines`).
    Last,
    /// The second operand is set (`getopts ab: opt`).
    Second,
    /// Operands are names, set or not (`unset`): only their subscripts
    /// matter.
    Names,
    /// Operands are `NAME=VALUE` aliases (`alias`).
    Aliases,
    /// None: only options name variables (`printf -v`).
    None,
}

/// A builtin that sets variables or rebinds names.
#[derive(Debug, Clone, Copy)]
struct Setter {
    names: &'static [&'static str],
    opts: &'static [Opt],
    targets: Targets,
}

const fn sets(name: &'static str) -> Opt {
    with(name, Arg::Value, Effect::SetsVar)
}

const fn opaque(name: &'static str, arg: Arg, why: &'static str) -> Opt {
    with(name, arg, Effect::Opaque(why))
}

const NAMEREF: &str = "`-n` makes a name stand for another variable";
const DECLARE: &[Opt] = &[
    flag("-a"),
    flag("-A"),
    flag("-f"),
    flag("-F"),
    flag("-g"),
    flag("-i"),
    flag("-I"),
    flag("-l"),
    flag("-r"),
    flag("-t"),
    flag("-u"),
    flag("-x"),
    flag("-p"),
    opaque("-n", Arg::No, NAMEREF),
];
const EXPORT: &[Opt] = &[flag("-f"), flag("-n"), flag("-p")];
const READONLY: &[Opt] = &[flag("-a"), flag("-A"), flag("-f"), flag("-p")];
const READ: &[Opt] = &[
    flag("-e"),
    flag("-E"),
    flag("-r"),
    flag("-s"),
    sets("-a"),
    value("-d"),
    value("-i"),
    value("-n"),
    value("-N"),
    value("-p"),
    value("-t"),
    value("-u"),
];
const MAPFILE: &[Opt] = &[
    flag("-t"),
    value("-d"),
    value("-n"),
    value("-O"),
    value("-s"),
    value("-u"),
    value("-c"),
    opaque("-C", Arg::Value, "`mapfile -C` runs a callback"),
];
const PRINTF: &[Opt] = &[sets("-v")];
const WAIT: &[Opt] = &[flag("-n"), flag("-f"), sets("-p")];
const UNSET: &[Opt] = &[flag("-f"), flag("-v"), flag("-n")];
const ALIAS: &[Opt] = &[flag("-p")];
const HASH: &[Opt] = &[
    flag("-r"),
    flag("-d"),
    flag("-l"),
    flag("-t"),
    opaque(
        "-p",
        Arg::Value,
        "`hash -p` makes a name run another program",
    ),
];
const ENABLE: &[Opt] = &[
    flag("-a"),
    flag("-d"),
    flag("-n"),
    flag("-p"),
    flag("-s"),
    opaque("-f", Arg::Value, "`enable -f` loads a builtin from a file"),
];

const SETTERS: &[Setter] = &[
    Setter {
        names: &["declare", "typeset", "local"],
        opts: DECLARE,
        targets: Targets::Declarations,
    },
    Setter {
        names: &["export"],
        opts: EXPORT,
        targets: Targets::Declarations,
    },
    Setter {
        names: &["readonly"],
        opts: READONLY,
        targets: Targets::Declarations,
    },
    Setter {
        names: &["read"],
        opts: READ,
        targets: Targets::Every,
    },
    Setter {
        names: &["mapfile", "readarray"],
        opts: MAPFILE,
        targets: Targets::Last,
    },
    Setter {
        names: &["printf"],
        opts: PRINTF,
        targets: Targets::None,
    },
    Setter {
        names: &["wait"],
        opts: WAIT,
        targets: Targets::None,
    },
    Setter {
        names: &["getopts"],
        opts: &[],
        targets: Targets::Second,
    },
    Setter {
        names: &["unset"],
        opts: UNSET,
        targets: Targets::Names,
    },
    Setter {
        names: &["alias"],
        opts: ALIAS,
        targets: Targets::Aliases,
    },
    Setter {
        names: &["hash"],
        opts: HASH,
        targets: Targets::None,
    },
    Setter {
        names: &["enable"],
        opts: ENABLE,
        targets: Targets::None,
    },
];

/// What a builtin's words set, or why the rules cannot judge them.
#[derive(Debug, Default)]
pub(super) struct Set {
    /// Variables set: name, and value when known before the line runs.
    pub vars: Vec<(String, Option<String>)>,
    /// Why they cannot be judged, if so.
    pub opaque: Option<String>,
}

impl Set {
    fn opaque(why: impl Into<String>) -> Self {
        Self {
            vars: Vec::new(),
            opaque: Some(why.into()),
        }
    }
}

/// What the builtin `program` with `args` sets, if it is one that sets
/// variables or rebinds names.
pub(super) fn sets_of(program: &str, args: &[Word]) -> Option<Set> {
    if program == "let" {
        return Some(Set::opaque(
            "`let` evaluates arithmetic, which can run commands",
        ));
    }
    if program == "test" || program == "[" {
        // `test -v 'a[$(cmd)]'` evaluates the subscript.
        let bad = args.windows(2).any(|w| {
            w[0].text.as_deref() == Some("-v")
                && w[1].text.as_deref().is_none_or(|t| t.contains('['))
        });
        return bad.then(|| Set::opaque(SUBSCRIPT));
    }
    let setter = SETTERS.iter().find(|s| s.names.contains(&program))?;
    let plus = matches!(setter.targets, Targets::Declarations);
    let given = match getopt(setter.opts, plus, false, args) {
        Ok(g) => g,
        Err(why) => return Some(Set::opaque(format!("`{program}`: {why}"))),
    };
    let mut set = Set::default();
    for (o, v) in &given.opts {
        match (o.effect, v) {
            (Effect::Opaque(why), _) => return Some(Set::opaque(why)),
            (Effect::SetsVar, Some(v)) => match &v.text {
                Some(name) => set.vars.push((name.clone(), None)),
                None => return Some(Set::opaque(RUNTIME_NAME)),
            },
            _ => {}
        }
    }
    let operands = &args[given.end..];
    let name_of = |w: &Word| w.text.clone().ok_or(RUNTIME_NAME);
    let result: Result<(), &str> = (|| {
        match setter.targets {
            Targets::Declarations => {
                for w in operands {
                    match super::wrappers::assignment(w) {
                        Some((n, v)) => set
                            .vars
                            .push((n.strip_suffix('+').unwrap_or(&n).to_owned(), v)),
                        None => {
                            // A bare name: declared or exported, not set.
                            let n = name_of(w)?;
                            if n.contains('[') {
                                return Err(SUBSCRIPT);
                            }
                        }
                    }
                }
            }
            Targets::Every => {
                for w in operands {
                    set.vars.push((name_of(w)?, None));
                }
            }
            Targets::Last => {
                if let Some(w) = operands.last() {
                    set.vars.push((name_of(w)?, None));
                }
            }
            Targets::Second => {
                if let Some(w) = operands.get(1) {
                    set.vars.push((name_of(w)?, None));
                }
            }
            Targets::Names => {
                for w in operands {
                    if name_of(w)?.contains('[') {
                        return Err(SUBSCRIPT);
                    }
                }
            }
            Targets::Aliases => {
                if operands
                    .iter()
                    .any(|w| w.text.as_deref().is_none_or(|t| t.contains('=')))
                {
                    return Err("an alias can make a name run anything");
                }
            }
            Targets::None => {}
        }
        Ok(())
    })();
    if let Err(why) = result {
        return Some(Set::opaque(why));
    }
    if set.vars.iter().any(|(n, _)| n.contains('[')) {
        return Some(Set::opaque(SUBSCRIPT));
    }
    Some(set)
}

/// Why a subscript in a variable's name is not judged.
pub(super) const SUBSCRIPT: &str =
    "a subscript in a variable's name is evaluated as arithmetic, which can run commands";

const RUNTIME_NAME: &str = "it sets a variable whose name is only known when it runs";
