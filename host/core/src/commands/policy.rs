//! Which command lines may run, as data: `allowed_commands` and
//! `denied_commands`. A line is parsed as a shell would parse it (chains,
//! pipes, subshells, `$(…)`, backticks, redirections, here-documents,
//! continuations), and **every** command in it is judged: all allowed and
//! none denied, or it is not allowed. A rule is a prefix of whole words
//! (`npm test` allows `npm test -- --watch`, not `npm testify`), or, written
//! `=git status`, the exact command; `*` allows everything. For each
//! command the longest matching rule wins (an exact rule is longest; a tie
//! goes to the denial). What the parser cannot pin down — a command name
//! from a variable, an expansion that can run code, a parse error — is
//! never allowed by a rule: a person decides. Output redirections name the
//! files the line writes, which must lie inside the write scope.

use brush_parser::ast::{
    self, Command, CommandPrefixOrSuffixItem, CompoundCommand, CompoundList, IoFileRedirectKind,
    IoFileRedirectTarget, IoRedirect, Pipeline,
};
use brush_parser::word::{self, WordPiece, WordPieceWithSource};
use brush_parser::{Parser, ParserOptions};

/// Deepest nesting of substitutions and compound commands looked into; a
/// line nested deeper is not judged by the rules.
const MAX_NESTING: usize = 16;

/// One rule of `allowed_commands` or `denied_commands`.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Rule {
    /// Everything (`*`).
    Any,
    /// These first words.
    Prefix(Vec<String>),
    /// Exactly these words (`=…`).
    Exact(Vec<String>),
}

impl Rule {
    fn parse(text: &str) -> Option<Self> {
        let text = text.trim();
        if text == "*" {
            return Some(Self::Any);
        }
        let (exact, body) = match text.strip_prefix('=') {
            Some(rest) => (true, rest),
            None => (false, text),
        };
        let words = shell_words::split(body).ok()?;
        if words.is_empty() {
            return None;
        }
        Some(if exact {
            Self::Exact(words)
        } else {
            Self::Prefix(words)
        })
    }

    /// How strongly this rule matches `words` (more words: stronger;
    /// `None`: it does not). `dynamic` marks words whose value is only
    /// known when the line runs: they never match an allow rule, and
    /// always match a deny rule.
    fn strength(&self, words: &[Word], deny: bool) -> Option<usize> {
        // A name only known when the line runs matches nothing: the line
        // is for a person (see `Analysis::simple`).
        if words.first().is_some_and(|w| w.text.is_none()) {
            return None;
        }
        let same = |rule: &[String]| {
            rule.iter().zip(words).all(|(r, w)| match &w.text {
                Some(t) => t == r,
                None => deny,
            })
        };
        match self {
            Self::Any => Some(0),
            Self::Prefix(r) => (words.len() >= r.len() && same(r)).then_some(r.len()),
            Self::Exact(r) => (words.len() == r.len() && same(r)).then_some(usize::MAX),
        }
    }
}

/// The rules of a configuration.
#[derive(Debug, Clone, Default)]
pub struct CommandRules {
    allowed: Vec<(String, Rule)>,
    denied: Vec<(String, Rule)>,
}

/// A rule that does not parse.
#[derive(Debug, thiserror::Error)]
#[error("command rule `{0}` is not a command (give words, `=words` for an exact match, or `*`)")]
pub struct BadRule(pub String);

impl CommandRules {
    /// Rules from the config's lists.
    pub fn new(allowed: &[String], denied: &[String]) -> Result<Self, BadRule> {
        let parse = |list: &[String]| {
            list.iter()
                .map(|r| {
                    Rule::parse(r)
                        .map(|rule| (r.clone(), rule))
                        .ok_or_else(|| BadRule(r.clone()))
                })
                .collect::<Result<Vec<_>, _>>()
        };
        Ok(Self {
            allowed: parse(allowed)?,
            denied: parse(denied)?,
        })
    }

    /// What the rules say about one command's words.
    fn judge_one(&self, words: &[Word]) -> One {
        fn best<'r>(
            rules: &'r [(String, Rule)],
            words: &[Word],
            deny: bool,
        ) -> Option<(usize, &'r String)> {
            rules
                .iter()
                .filter_map(|(text, r)| r.strength(words, deny).map(|s| (s, text)))
                .max_by_key(|(s, _)| *s)
        }
        let allow = best(&self.allowed, words, false);
        let deny = best(&self.denied, words, true);
        match (allow, deny) {
            (_, Some((d, rule))) if allow.is_none_or(|(a, _)| d >= a) => One::Denied(rule.clone()),
            (Some(_), _) => One::Allowed,
            _ => One::Unlisted,
        }
    }

    /// Judge a whole line.
    pub fn judge(&self, line: &str) -> Judgement {
        let analysis = analyse(line);
        let mut unlisted = Vec::new();
        for c in &analysis.commands {
            match self.judge_one(&c.words) {
                One::Allowed => {}
                One::Denied(rule) => {
                    return Judgement {
                        verdict: Verdict::Denied {
                            command: c.shown(),
                            rule,
                        },
                        written: analysis.written,
                    };
                }
                One::Unlisted => unlisted.push(c.shown()),
            }
        }
        let verdict = if let Some(reason) = analysis.opaque.first() {
            Verdict::Unjudged {
                reason: reason.clone(),
            }
        } else if unlisted.is_empty() {
            Verdict::Allowed
        } else {
            Verdict::Unlisted { commands: unlisted }
        };
        Judgement {
            verdict,
            written: analysis.written,
        }
    }
}

enum One {
    Allowed,
    Denied(String),
    Unlisted,
}

/// What the rules make of a line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Every command in it is allowed and none denied.
    Allowed,
    /// A command in it is denied (the first one, by this rule).
    Denied {
        /// The command, as parsed.
        command: String,
        /// The rule that denies it.
        rule: String,
    },
    /// Some commands are on no list: a person decides.
    Unlisted {
        /// Those commands.
        commands: Vec<String>,
    },
    /// The line cannot be judged by rules (why): a person decides.
    Unjudged {
        /// Why.
        reason: String,
    },
}

/// The verdict on a line and the files its redirections write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Judgement {
    /// What the rules say.
    pub verdict: Verdict,
    /// Files its output redirections write, as written in the line
    /// (relative to the command's directory unless absolute).
    pub written: Vec<String>,
}

/// One word of a command: its value after quote removal when that is
/// known before the line runs.
#[derive(Debug, Clone)]
struct Word {
    text: Option<String>,
    raw: String,
}

/// One command of a line.
#[derive(Debug, Clone)]
struct Simple {
    words: Vec<Word>,
}

impl Simple {
    fn shown(&self) -> String {
        self.words
            .iter()
            .map(|w| w.text.clone().unwrap_or_else(|| w.raw.clone()))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// Every command a line runs, the files it writes, and what could not be
/// pinned down.
#[derive(Debug, Default)]
struct Analysis {
    commands: Vec<Simple>,
    written: Vec<String>,
    opaque: Vec<String>,
}

fn options() -> ParserOptions {
    ParserOptions::default()
}

fn analyse(line: &str) -> Analysis {
    let mut a = Analysis::default();
    a.script(line, 0);
    a
}

impl Analysis {
    fn opaque(&mut self, why: impl Into<String>) {
        self.opaque.push(why.into());
    }

    fn script(&mut self, text: &str, depth: usize) {
        if depth > MAX_NESTING {
            self.opaque("it nests too deeply to judge");
            return;
        }
        let mut parser = Parser::new(std::io::Cursor::new(text.as_bytes()), &options());
        match parser.parse_program() {
            Ok(program) => {
                for list in &program.complete_commands {
                    self.compound_list(list, depth);
                }
            }
            Err(e) => self.opaque(format!("it does not parse as a shell command ({e})")),
        }
    }
}

// The walk over the syntax tree; `depth` bounds the recursion.
impl Analysis {
    fn compound_list(&mut self, list: &CompoundList, depth: usize) {
        for item in &list.0 {
            let and_or = &item.0;
            self.pipeline(&and_or.first, depth);
            for next in &and_or.additional {
                match next {
                    ast::AndOr::And(p) | ast::AndOr::Or(p) => self.pipeline(p, depth),
                }
            }
        }
    }

    fn pipeline(&mut self, p: &Pipeline, depth: usize) {
        for c in &p.seq {
            self.command(c, depth);
        }
    }

    fn command(&mut self, c: &Command, depth: usize) {
        if depth > MAX_NESTING {
            self.opaque("it nests too deeply to judge");
            return;
        }
        let depth = depth + 1;
        match c {
            Command::Simple(s) => self.simple(s, depth),
            Command::Compound(cc, redirects) => {
                self.compound(cc, depth);
                if let Some(r) = redirects {
                    for io in &r.0 {
                        self.redirect(io, depth);
                    }
                }
            }
            Command::Function(f) => {
                self.compound(&f.body.0, depth);
                if let Some(r) = &f.body.1 {
                    for io in &r.0 {
                        self.redirect(io, depth);
                    }
                }
            }
            Command::ExtendedTest(..) => self.opaque("`[[ … ]]` tests are not judged by rules"),
        }
    }

    fn compound(&mut self, c: &CompoundCommand, depth: usize) {
        match c {
            CompoundCommand::BraceGroup(b) => self.compound_list(&b.list, depth),
            CompoundCommand::Subshell(s) => self.compound_list(&s.list, depth),
            CompoundCommand::ForClause(f) => {
                for w in f.values.iter().flatten() {
                    self.word(&w.value, depth);
                }
                self.compound_list(&f.body.list, depth);
            }
            CompoundCommand::CaseClause(c) => {
                self.word(&c.value.value, depth);
                for item in &c.cases {
                    for p in &item.patterns {
                        self.word(&p.value, depth);
                    }
                    if let Some(cmd) = &item.cmd {
                        self.compound_list(cmd, depth);
                    }
                }
            }
            CompoundCommand::IfClause(i) => {
                self.compound_list(&i.condition, depth);
                self.compound_list(&i.then, depth);
                for e in i.elses.iter().flatten() {
                    if let Some(c) = &e.condition {
                        self.compound_list(c, depth);
                    }
                    self.compound_list(&e.body, depth);
                }
            }
            CompoundCommand::WhileClause(w) | CompoundCommand::UntilClause(w) => {
                self.compound_list(&w.0, depth);
                self.compound_list(&w.1.list, depth);
            }
            CompoundCommand::Coprocess(c) => self.command(&c.body, depth),
            CompoundCommand::Arithmetic(_) | CompoundCommand::ArithmeticForClause(_) => {
                self.opaque("arithmetic commands are not judged by rules");
            }
        }
    }

    fn simple(&mut self, s: &ast::SimpleCommand, depth: usize) {
        let mut words = Vec::new();
        // Assignments and redirections before the name, then the name and
        // its arguments (with more redirections among them).
        for item in s.prefix.iter().flat_map(|p| p.0.iter()) {
            self.item(item, depth, &mut words);
        }
        if let Some(name) = &s.word_or_name {
            let w = self.word(&name.value, depth);
            words.push(w);
        }
        for item in s.suffix.iter().flat_map(|p| p.0.iter()) {
            self.item(item, depth, &mut words);
        }
        if words.is_empty() {
            // Only assignments or redirections: nothing runs by name.
            return;
        }
        if words.first().is_some_and(|w| w.text.is_none()) {
            self.opaque("its command name is only known when it runs");
        }
        self.commands.push(Simple { words });
    }

    fn item(&mut self, item: &CommandPrefixOrSuffixItem, depth: usize, words: &mut Vec<Word>) {
        match item {
            CommandPrefixOrSuffixItem::IoRedirect(io) => self.redirect(io, depth),
            CommandPrefixOrSuffixItem::Word(w) => words.push(self.word(&w.value, depth)),
            CommandPrefixOrSuffixItem::AssignmentWord(a, _) => match &a.value {
                ast::AssignmentValue::Scalar(w) => {
                    self.word(&w.value, depth);
                }
                ast::AssignmentValue::Array(items) => {
                    for (k, v) in items {
                        if let Some(k) = k {
                            self.word(&k.value, depth);
                        }
                        self.word(&v.value, depth);
                    }
                }
            },
            CommandPrefixOrSuffixItem::ProcessSubstitution(_, sub) => {
                self.compound_list(&sub.list, depth + 1);
            }
        }
    }

    fn redirect(&mut self, io: &IoRedirect, depth: usize) {
        match io {
            IoRedirect::File(_, kind, target) => {
                let writes = matches!(
                    kind,
                    IoFileRedirectKind::Write
                        | IoFileRedirectKind::Append
                        | IoFileRedirectKind::Clobber
                        | IoFileRedirectKind::ReadAndWrite
                        | IoFileRedirectKind::DuplicateOutput
                );
                match target {
                    IoFileRedirectTarget::Filename(w) => {
                        let w = self.word(&w.value, depth);
                        if writes {
                            self.written_to(w);
                        }
                    }
                    IoFileRedirectTarget::Duplicate(w) => {
                        let w = self.word(&w.value, depth);
                        // `>&2` duplicates a descriptor; `>&file` writes.
                        let fd = w
                            .text
                            .as_deref()
                            .is_some_and(|t| t == "-" || t.chars().all(|c| c.is_ascii_digit()));
                        if writes && !fd {
                            self.written_to(w);
                        }
                    }
                    IoFileRedirectTarget::Fd(_) => {}
                    IoFileRedirectTarget::ProcessSubstitution(_, sub) => {
                        self.compound_list(&sub.list, depth + 1);
                    }
                }
            }
            IoRedirect::OutputAndError(w, _) => {
                let w = self.word(&w.value, depth);
                self.written_to(w);
            }
            IoRedirect::HereString(_, w) => {
                self.word(&w.value, depth);
            }
            IoRedirect::HereDocument(_, doc) => {
                if doc.requires_expansion {
                    // An unquoted here-document expands like a
                    // double-quoted word.
                    self.word(
                        &format!("\"{}\"", doc.doc.value.replace('"', "\\\"")),
                        depth,
                    );
                }
            }
        }
    }

    fn written_to(&mut self, w: Word) {
        match w.text {
            Some(path) => self.written.push(path),
            None => self.opaque(format!(
                "it writes to `{}`, a path only known when it runs",
                w.raw
            )),
        }
    }

    /// A word's value when known before the line runs; the commands its
    /// substitutions run are judged too.
    fn word(&mut self, raw: &str, depth: usize) -> Word {
        let text = match word::parse(raw, &options()) {
            Ok(pieces) => self.pieces(&pieces, depth),
            Err(_) => {
                self.opaque(format!("the word `{raw}` does not parse"));
                None
            }
        };
        Word {
            text,
            raw: raw.to_owned(),
        }
    }

    fn pieces(&mut self, pieces: &[WordPieceWithSource], depth: usize) -> Option<String> {
        let mut out = Some(String::new());
        for p in pieces {
            let piece = match &p.piece {
                WordPiece::Text(t) | WordPiece::SingleQuotedText(t) => Some(t.clone()),
                WordPiece::EscapeSequence(e) => Some(e.strip_prefix('\\').unwrap_or(e).to_owned()),
                WordPiece::DoubleQuotedSequence(inner)
                | WordPiece::GettextDoubleQuotedSequence(inner) => self.pieces(inner, depth),
                WordPiece::CommandSubstitution(s) | WordPiece::BackquotedCommandSubstitution(s) => {
                    self.script(s, depth + 1);
                    None
                }
                WordPiece::ParameterExpansion(e) => {
                    if !matches!(e, word::ParameterExpr::Parameter { .. }) {
                        self.opaque("parameter expansions with operators are not judged by rules");
                    }
                    None
                }
                WordPiece::ArithmeticExpression(_) => {
                    self.opaque("arithmetic expansions are not judged by rules");
                    None
                }
                WordPiece::AnsiCQuotedText(_) | WordPiece::TildeExpansion(_) => None,
            };
            out = match (out, piece) {
                (Some(mut o), Some(p)) => {
                    o.push_str(&p);
                    Some(o)
                }
                _ => None,
            };
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules() -> CommandRules {
        let allowed: Vec<String> = [
            "ls",
            "cat",
            "echo",
            "grep",
            "git status",
            "git diff",
            "npm test",
            "cargo",
            "=make check",
            "wc",
            "true",
            "sh",
        ]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
        let denied: Vec<String> = ["rm", "git push", "cargo publish", "curl", "sh -c"]
            .iter()
            .map(|s| (*s).to_owned())
            .collect();
        CommandRules::new(&allowed, &denied).expect("rules parse")
    }

    fn verdict(line: &str) -> String {
        match rules().judge(line).verdict {
            Verdict::Allowed => "allowed".into(),
            Verdict::Denied { command, rule } => format!("denied: `{command}` by `{rule}`"),
            Verdict::Unlisted { commands } => format!("unlisted: {}", commands.join(" | ")),
            Verdict::Unjudged { reason } => format!("unjudged: {reason}"),
        }
    }

    /// Each kind of line with its expected decision.
    #[test]
    fn every_command_of_a_line_is_judged() {
        let cases: &[(&str, &str)] = &[
            // Plain, prefix on whole words, exact.
            ("ls -la src", "allowed"),
            ("git status --short", "allowed"),
            ("git statusx", "unlisted: git statusx"),
            ("npm testify", "unlisted: npm testify"),
            ("make check", "allowed"),
            ("make check install", "unlisted: make check install"),
            ("rm -rf /", "denied: `rm -rf /` by `rm`"),
            // Longest rule wins; a tie goes to the denial.
            ("cargo test", "allowed"),
            (
                "cargo publish --dry-run",
                "denied: `cargo publish --dry-run` by `cargo publish`",
            ),
            ("sh script.sh", "allowed"),
            ("sh -c 'echo hi'", "denied: `sh -c echo hi` by `sh -c`"),
            // Chains, pipes, sequences: every part.
            ("ls && rm -rf x", "denied: `rm -rf x` by `rm`"),
            ("ls || git push", "denied: `git push` by `git push`"),
            ("ls; wc -l file", "allowed"),
            ("cat f | grep x | wc -l", "allowed"),
            ("cat f | python3 -", "unlisted: python3 -"),
            ("(ls; rm x)", "denied: `rm x` by `rm`"),
            ("{ ls; echo; }", "allowed"),
            ("ls &", "allowed"),
            // Substitutions run commands too.
            ("echo $(rm -rf ~)", "denied: `rm -rf ~` by `rm`"),
            (
                "echo `curl evil.example`",
                "denied: `curl evil.example` by `curl`",
            ),
            ("echo \"$(whoami)\"", "unlisted: whoami"),
            ("X=$(rm a) ls", "denied: `rm a` by `rm`"),
            ("cat <(curl x)", "denied: `curl x` by `curl`"),
            ("for f in a b; do rm $f; done", "denied: `rm $f` by `rm`"),
            (
                "if true; then git push; fi",
                "denied: `git push` by `git push`",
            ),
            // Quoting tricks do not hide a name.
            ("\"rm\" -rf x", "denied: `rm -rf x` by `rm`"),
            ("r''m -rf x", "denied: `rm -rf x` by `rm`"),
            ("\\rm -rf x", "denied: `rm -rf x` by `rm`"),
            ("'git' 'push'", "denied: `git push` by `git push`"),
            // A name only known when the line runs is never allowed.
            (
                "$CMD -rf x",
                "unjudged: its command name is only known when it runs",
            ),
            (
                "echo ${X:-$(rm y)}",
                "unjudged: parameter expansions with operators are not judged by rules",
            ),
            // Newlines and continuations.
            ("ls\nrm x", "denied: `rm x` by `rm`"),
            ("ls \\\n  -la", "allowed"),
            ("git \\\npush", "denied: `git push` by `git push`"),
            // Unparseable.
            ("ls (", "unjudged"),
        ];
        for (line, want) in cases {
            let got = verdict(line);
            assert!(
                got.starts_with(want),
                "{line:?}: got {got:?}, want {want:?}"
            );
        }
    }

    /// Output redirections name the files a line writes; descriptor
    /// duplications and inputs do not.
    #[test]
    fn redirections_name_written_files() {
        let j = rules().judge("ls > out.txt 2>&1; cat < in.txt >> ../log; echo &> /tmp/x; ls >&2");
        assert_eq!(j.verdict, Verdict::Allowed);
        assert_eq!(j.written, vec!["out.txt", "../log", "/tmp/x"]);
        let j = rules().judge("ls > \"$OUT\"");
        assert!(matches!(j.verdict, Verdict::Unjudged { .. }), "{j:?}");
        let j = rules().judge("cat <<EOF\n$(rm x)\nEOF\n");
        assert!(matches!(j.verdict, Verdict::Denied { .. }), "{j:?}");
        let j = rules().judge("cat <<'EOF'\n$(rm x)\nEOF\n");
        assert_eq!(j.verdict, Verdict::Allowed);
    }

    /// `*` allows what no denial names; bad rules are refused.
    #[test]
    fn wildcards_and_bad_rules() {
        let r = CommandRules::new(&["*".into()], &["rm".into()]).expect("rules");
        assert_eq!(r.judge("anything at all").verdict, Verdict::Allowed);
        assert!(matches!(r.judge("rm x").verdict, Verdict::Denied { .. }));
        assert!(CommandRules::new(&["".into()], &[]).is_err());
        assert!(CommandRules::new(&["'unclosed".into()], &[]).is_err());
        // Nothing listed: every command is for a person.
        let none = CommandRules::default();
        assert!(matches!(none.judge("ls").verdict, Verdict::Unlisted { .. }));
    }
}
