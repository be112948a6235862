//! Which commands only read: a line made of them alone (and writing no
//! file by redirection) takes no write lease, no write guard and no
//! checkpoint, and runs with the workspace mounted read-only — so a
//! judgement that is wrong makes the command fail to write, never write
//! unguarded. The table is conservative: a program that can write through
//! an option (`sed -i`, `sort -o`, `find -delete`, `awk`'s `print >`) is
//! not on it, or only with the options that cannot.

use super::Word;

/// Programs that never write files, whatever their arguments (the
/// programs that run another command are judged here by their own effect;
/// what they run is judged as a command of its own).
const READERS: &[&str] = &[
    "[",
    "basename",
    "cat",
    "cmp",
    "comm",
    "command",
    "cut",
    "date",
    "df",
    "diff",
    "dirname",
    "du",
    "echo",
    "egrep",
    "env",
    "false",
    "fgrep",
    "file",
    "grep",
    "head",
    "hostname",
    "id",
    "jq",
    "ls",
    "md5sum",
    "nice",
    "nl",
    "od",
    "printf",
    "pwd",
    "readlink",
    "realpath",
    "rg",
    "sha1sum",
    "sha256sum",
    "sha512sum",
    "sleep",
    "stat",
    "tail",
    "test",
    "time",
    "timeout",
    "tr",
    "tree",
    "true",
    "type",
    "uname",
    "uniq",
    "wc",
    "which",
    "whoami",
];

/// `git` subcommands that only read the repository.
const GIT_READERS: &[&str] = &[
    "blame",
    "describe",
    "diff",
    "grep",
    "log",
    "ls-files",
    "rev-parse",
    "shortlog",
    "show",
    "status",
];

/// `find` actions that write or run something.
const FIND_WRITERS: &[&str] = &[
    "-delete", "-exec", "-execdir", "-ok", "-okdir", "-fprint", "-fprint0", "-fprintf", "-fls",
];

/// Files a redirection may write without writing anything.
const SINKS: &[&str] = &["/dev/null", "/dev/stdout", "/dev/stderr"];

/// Whether the command `words` provably only reads: its name is known
/// before it runs, found on the `PATH` (no `/`), and on the table (with
/// the arguments that keep it there).
pub(super) fn reads_only(words: &[Word]) -> bool {
    let Some(name) = words.first().and_then(|w| w.text.as_deref()) else {
        return false;
    };
    if name.contains('/') {
        return false;
    }
    let args = || words[1..].iter().map(|w| w.text.as_deref());
    match name {
        "git" => git_reads_only(&words[1..]),
        "find" => args().all(|a| a.is_some_and(|a| !FIND_WRITERS.contains(&a))),
        "sort" => args().all(|a| a.is_some_and(|a| !short_or_long(a, 'o', "--output"))),
        // `uniq IN OUT` writes OUT.
        "uniq" => {
            args().all(|a| a.is_some())
                && args().flatten().filter(|a| !a.starts_with('-')).count() <= 1
        }
        // `tree -o FILE` writes FILE.
        "tree" => args().all(|a| a.is_some_and(|a| !short_or_long(a, 'o', "--output"))),
        // `file -C` compiles a magic file into the working directory.
        "file" => args().all(|a| a.is_some_and(|a| !short_or_long(a, 'C', "--compile"))),
        _ => READERS.contains(&name),
    }
}

/// Whether argument `a` is the short option `short` (alone, in a cluster
/// like `-uo`, or with its value attached) or the long option `long`.
fn short_or_long(a: &str, short: char, long: &str) -> bool {
    if a.starts_with(long) {
        return true;
    }
    match a.strip_prefix('-') {
        Some(cluster) if !cluster.starts_with('-') => cluster.contains(short),
        _ => false,
    }
}

/// `git [-C dir] [--no-pager] SUBCOMMAND …` with a reading subcommand and
/// no option that could run a program or write (`-c`, `--output`).
fn git_reads_only(args: &[Word]) -> bool {
    let mut rest = args.iter().map(|w| w.text.as_deref());
    loop {
        match rest.next() {
            Some(Some("--no-pager" | "--no-optional-locks")) => {}
            Some(Some(sub)) if !sub.starts_with('-') => {
                return GIT_READERS.contains(&sub)
                    && rest.all(|a| {
                        a.is_some_and(|a| {
                            !(a.starts_with("--output") || a.starts_with("--ext-diff"))
                        })
                    });
            }
            _ => return false,
        }
    }
}

/// Whether a redirection's target writes nothing.
pub(super) fn is_sink(path: &str) -> bool {
    SINKS.contains(&path)
}

#[cfg(test)]
mod tests {
    use super::super::CommandRules;

    fn read_only(line: &str) -> bool {
        CommandRules::default().judge(line).read_only
    }

    /// Reading lines are proved so; anything that writes, runs an unknown
    /// program, or cannot be pinned down is not.
    #[test]
    fn only_lines_of_readers_are_read_only() {
        for line in [
            "ls -la",
            "sleep 5 && ls",
            "echo started; sleep 1; ls src",
            "git status --short",
            "git --no-pager log -3 --oneline",
            "grep -rn foo src | head -5 > /dev/null",
            "find . -name '*.rs'",
            "cat a.txt | sort | uniq -c",
            "timeout 5 cat a.txt",
            "uniq -c in.txt",
            "tree -L 2 src",
            "file src/main.rs",
        ] {
            assert!(read_only(line), "{line}");
        }
        for line in [
            "touch x",
            "ls > listing.txt",
            "echo hi >> notes.md",
            "sed -i s/a/b/ f",
            "sort -o out.txt in.txt",
            "sort -uo out.txt in.txt",
            "uniq in.txt out.txt",
            "tree -o listing.txt",
            "file -C -m magic",
            "find . -delete",
            "find . -exec rm {} +",
            "git commit -m x",
            "git -c core.pager=evil log",
            "git diff --output=x",
            "./ls",
            "$CMD",
            "ls $(touch x)",
            "timeout 5 rm a",
            "bash -c 'rm -rf src'",
            "cargo test",
        ] {
            assert!(!read_only(line), "{line}");
        }
    }
}
