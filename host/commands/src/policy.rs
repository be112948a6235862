//! Which command lines may run, as data: `allowed_commands` and
//! `denied_commands`. A line is parsed as a shell would parse it (chains,
//! pipes, subshells, `$(…)`, backticks, redirections, here-documents,
//! continuations), and **every** command in it is judged: all allowed and
//! none denied, or it is not allowed. A rule is a prefix of whole words
//! (`npm test` allows `npm test -- --watch`, not `npm testify`), or, written
//! `=git status`, the exact command; `*` allows everything. For each
//! command the longest matching rule wins (an exact rule is longest; a tie
//! goes to the denial).
//!
//! A deny rule matches a program by the name it runs as (`rm` denies
//! `/bin/rm` and `./rm`); an allow rule matches a path only if it names
//! that path (`git` does not allow `./git`, which is not the system's).
//! The judge sees through the programs that run another command
//! (the table in `policy/wrappers.rs`: `timeout 5 rm f`, `xargs rm`,
//! `find -delete`, `sh -c`, `eval`, …): both the wrapper and what it runs
//! are judged.
//!
//! What the parser cannot pin down — a command name from a variable, a
//! glob or a brace expansion, an expansion that can run code, a wrapper
//! whose inner command is only known at run time, a variable the line
//! sets (`policy/variables.rs`), a parse error — is never allowed by a
//! rule: a person decides. A denial still wins over all of these. Output
//! redirections name the files the line writes, which must lie inside the
//! write scope.
//!
//! The parser is another project's: lines known to trouble it are left to
//! a person unread (`policy/unreadable.rs`), and a host reads every line in
//! a bounded process of its own (`policy/isolated.rs`), so one it cannot
//! take costs a person's decision, not the host.
//!
//! This is a judge of the line, not of what programs do: a script, a
//! Makefile, a program's own configuration or its arguments (`git -c`,
//! `make CC=…`) can still run anything; the sandbox's write scope is the
//! guarantee, the rules a convenience.

pub mod isolated;
mod read_only;
mod unreadable;
mod variables;
mod wrappers;

use brush_parser::ast::{
    self, Command, CommandPrefixOrSuffixItem, CompoundCommand, CompoundList, IoFileRedirectKind,
    IoFileRedirectTarget, IoRedirect, Pipeline,
};
use brush_parser::word::{self, WordPiece, WordPieceWithSource};
use brush_parser::{Parser, ParserOptions};
use serde::{Deserialize, Serialize};

pub use isolated::{LineReader, ReadBounds};

/// Deepest nesting of substitutions and compound commands looked into; a
/// line nested deeper is not judged by the rules.
const MAX_NESTING: usize = 16;

/// Most `{` one word may hold for the judge to read it: the word parser
/// (brush's brace-expansion grammar) takes time exponential in unmatched
/// braces — seven times longer for every two more (found by the
/// command_policy_bash fuzz target: 16 braces took minutes). A word with
/// more is not judged by the rules: a person decides.
const MAX_BRACES: usize = 6;

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
        // A deny rule names a program by the name it runs as (`rm` denies
        // `/bin/rm`); an allow rule names it exactly (`git` is not `./git`).
        let same = |rule: &[String]| {
            rule.iter()
                .zip(words)
                .enumerate()
                .all(|(i, (r, w))| match &w.text {
                    Some(t) if deny && i == 0 => program(t) == program(r),
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

/// The name a program runs as: `/usr/bin/rm` and `./rm` run as `rm`.
fn program(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
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

    /// Whether a rule allows one command as it runs (its argument vector,
    /// as a trace of what ran shows it) and no rule denies it: the rules'
    /// own answer, without a line's parsing around it. An audit of what a
    /// line ran uses it (the command_policy_bash fuzz target checks every
    /// command bash runs for an allowed line).
    pub fn allows_command(&self, argv: &[String]) -> bool {
        let words: Vec<Word> = argv.iter().map(|a| Word::literal(a)).collect();
        matches!(self.judge_one(&words), One::Allowed)
    }

    /// Judge a whole line, read in this process (see
    /// [`CommandRules::judge_read`] for a host that serves others).
    pub fn judge(&self, line: &str) -> Judgement {
        self.judged(analysed(line))
    }

    /// Judge a whole line, read by `reader`: in a process of its own,
    /// within bounds, so a line the shell parser cannot take costs a
    /// person's decision, not the host.
    pub fn judge_read(&self, line: &str, reader: &LineReader) -> Judgement {
        self.judged(reader.analyse(line))
    }

    /// The verdict on a line read into `analysis`.
    fn judged(&self, analysis: Analysis) -> Judgement {
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
                        read_only: false,
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
        let read_only = analysis.opaque.is_empty()
            && analysis.written.iter().all(|w| read_only::is_sink(w))
            && analysis
                .commands
                .iter()
                .all(|c| read_only::reads_only(&c.words));
        Judgement {
            verdict,
            written: analysis.written,
            read_only,
        }
    }
}

/// A line read in this process; should the shell parser (another
/// project's) panic on it, the line is for a person and the host goes on.
fn analysed(line: &str) -> Analysis {
    match std::panic::catch_unwind(|| analyse(line)) {
        Ok(analysis) => analysis,
        Err(_) => {
            tracing::warn!("the shell parser panicked on a command line; left for a person");
            Analysis::unread("the shell parser could not read it")
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
    /// Whether the line provably only reads (`policy/read_only.rs`): every
    /// command in it a reader, no file written by redirection, nothing
    /// left to run time.
    pub read_only: bool,
}

/// One word of a command: its value after quote removal when that is
/// known before the line runs (one word, as written: no glob, no brace
/// expansion, no parameter).
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Word {
    text: Option<String>,
    raw: String,
}

impl Word {
    /// A word whose value is `text`.
    fn literal(text: &str) -> Self {
        Self {
            text: Some(text.to_owned()),
            raw: text.to_owned(),
        }
    }

    /// A word only known when the line runs, shown as `raw`.
    fn runtime(raw: &str) -> Self {
        Self {
            text: None,
            raw: raw.to_owned(),
        }
    }
}

/// One command of a line.
#[derive(Debug, Clone, Serialize, Deserialize)]
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
#[derive(Debug, Default, Serialize, Deserialize)]
struct Analysis {
    commands: Vec<Simple>,
    written: Vec<String>,
    opaque: Vec<String>,
    /// Variables the line sets: name, and value when known before it runs.
    assigned: Vec<(String, Option<String>)>,
}

fn options() -> ParserOptions {
    ParserOptions::default()
}

fn analyse(line: &str) -> Analysis {
    let mut a = Analysis::default();
    a.script(line, 0);
    let mut set: Vec<&str> = Vec::new();
    for (name, value) in &a.assigned {
        if !variables::inert(name, value.as_deref()) && !set.contains(&name.as_str()) {
            set.push(name);
        }
    }
    if !set.is_empty() {
        let names = set
            .iter()
            .map(|n| format!("`{n}`"))
            .collect::<Vec<_>>()
            .join(", ");
        let why = format!(
            "it sets {names}, and a variable can make a program run other commands \
             (only a few plain ones, such as `RUST_BACKTRACE=1`, are taken as inert)"
        );
        a.opaque(why);
    }
    a
}

impl Analysis {
    /// A line left unread, for a person (why).
    fn unread(why: impl Into<String>) -> Self {
        let mut a = Self::default();
        a.opaque(why);
        a
    }

    fn opaque(&mut self, why: impl Into<String>) {
        self.opaque.push(why.into());
    }

    /// The line sets `name` (to `value`, when known).
    fn assign(&mut self, name: &str, value: Option<String>) {
        if name.contains('[') {
            self.opaque(variables::SUBSCRIPT);
        }
        self.assigned.push((name.to_owned(), value));
    }

    fn script(&mut self, text: &str, depth: usize) {
        if depth > MAX_NESTING {
            self.opaque("it nests too deeply to judge");
            return;
        }
        if let Some(why) = unreadable::why(text) {
            self.opaque(why);
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
                if !variables::shell_local(&f.variable_name) {
                    self.assign(&f.variable_name, None);
                }
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
            self.item(item, depth, &mut words, true);
        }
        if let Some(name) = &s.word_or_name {
            let w = self.word(&name.value, depth);
            words.push(w);
        }
        for item in s.suffix.iter().flat_map(|p| p.0.iter()) {
            self.item(item, depth, &mut words, false);
        }
        if words.is_empty() {
            // Only assignments or redirections: nothing runs by name.
            return;
        }
        self.run(words, depth);
    }

    /// One command that runs: judged as it is, and, when it is a
    /// wrapper, what it runs too; the variables it sets are noted.
    fn run(&mut self, words: Vec<Word>, depth: usize) {
        if depth > MAX_NESTING {
            self.opaque("it nests too deeply to judge");
            return;
        }
        let Some(name) = words.first().and_then(|w| w.text.clone()) else {
            self.opaque("its command name is only known when it runs");
            self.commands.push(Simple { words });
            return;
        };
        let prog = program(&name);
        let args = &words[1..];
        if let Some(set) = variables::sets_of(prog, args) {
            if let Some(why) = set.opaque {
                self.opaque(why);
            }
            for (n, v) in set.vars {
                self.assign(&n, v);
            }
        }
        let inner = wrappers::wrapper(prog).map(|w| w.inner(args));
        self.commands.push(Simple { words });
        let Some(inner) = inner else {
            return;
        };
        for (n, v) in inner.assigns {
            self.assign(&n, v);
        }
        for r in inner.runs {
            match r {
                wrappers::Run::Command(ws) => self.run(ws, depth + 1),
                wrappers::Run::Script(s) => self.script(&s, depth + 1),
                wrappers::Run::Unknown(why) => {
                    self.opaque(format!(
                        "`{name}` runs a command the rules cannot see: {why}"
                    ));
                }
            }
        }
    }

    fn item(
        &mut self,
        item: &CommandPrefixOrSuffixItem,
        depth: usize,
        words: &mut Vec<Word>,
        prefix: bool,
    ) {
        match item {
            CommandPrefixOrSuffixItem::IoRedirect(io) => self.redirect(io, depth),
            CommandPrefixOrSuffixItem::Word(w) => words.push(self.word(&w.value, depth)),
            CommandPrefixOrSuffixItem::AssignmentWord(a, w) => {
                let value = match &a.value {
                    ast::AssignmentValue::Scalar(v) if prefix => self.word(&v.value, depth).text,
                    // After the name, the whole word is walked below.
                    ast::AssignmentValue::Scalar(_) => None,
                    ast::AssignmentValue::Array(items) => {
                        for (k, v) in items {
                            if let Some(k) = k {
                                self.word(&k.value, depth);
                            }
                            self.word(&v.value, depth);
                        }
                        None
                    }
                };
                if prefix {
                    // `X=… cmd` (or alone): set for the command, or for the
                    // shell, which may have it exported already.
                    let name = match &a.name {
                        ast::AssignmentName::VariableName(n) => n.clone(),
                        ast::AssignmentName::ArrayElementName(n, i) => {
                            self.word(i, depth);
                            format!("{n}[{i}]")
                        }
                    };
                    self.assign(&name, value);
                } else {
                    // After the name it is an argument (`make CC=…`,
                    // `export X=…`): what it sets, if anything, is the
                    // command's to say (see `run`).
                    match &a.value {
                        ast::AssignmentValue::Scalar(_) => words.push(self.word(&w.value, depth)),
                        ast::AssignmentValue::Array(_) => words.push(Word::runtime(&w.value)),
                    }
                }
            }
            CommandPrefixOrSuffixItem::ProcessSubstitution(kind, sub) => {
                self.compound_list(&sub.list, depth + 1);
                // A file name (`/dev/fd/63`) only known when it runs.
                words.push(Word::runtime(&format!("{kind}(…)")));
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
        if raw.matches('{').count() > MAX_BRACES {
            self.opaque(format!(
                "the word `{}` has more braces than the rules read",
                raw.chars().take(80).collect::<String>()
            ));
            return Word {
                text: None,
                raw: raw.to_owned(),
            };
        }
        let text = match word::parse(raw, &options()) {
            // A glob or a brace expansion becomes other words, or several.
            Ok(pieces) => self
                .pieces(&pieces, depth)
                .filter(|_| !expands(raw, &pieces)),
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
                    match e {
                        word::ParameterExpr::Parameter {
                            indirect: false,
                            parameter: word::Parameter::NamedWithIndex { .. },
                        } => self.opaque(variables::SUBSCRIPT),
                        word::ParameterExpr::Parameter { indirect: true, .. } => {
                            self.opaque("indirect expansions (`${!x}`) are not judged by rules");
                        }
                        word::ParameterExpr::Parameter { .. } => {}
                        _ => self
                            .opaque("parameter expansions with operators are not judged by rules"),
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

/// Whether an unquoted glob (`*`, `?`, `[…]`) or brace expansion
/// (`{a,b}`, `{1..3}`) in a word makes it other words when it runs.
fn expands(raw: &str, pieces: &[WordPieceWithSource]) -> bool {
    let mut bracket = false;
    for p in pieces {
        if let WordPiece::Text(t) = &p.piece {
            if t.contains(['*', '?']) || (bracket && t.contains(']')) {
                return true;
            }
            if let Some(i) = t.find('[') {
                if t[i..].contains(']') {
                    return true;
                }
                bracket = true;
            }
        }
    }
    matches!(
        word::parse_brace_expansions(raw, &options()),
        Ok(Some(parts)) if parts.iter().any(|p| matches!(p, word::BraceExpressionOrText::Expr(_)))
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each line goes to a person, for a reason that says `why`.
    fn assert_for_a_person<L: AsRef<str>>(rules: &CommandRules, lines: &[L], why: &str) {
        for line in lines {
            let line = line.as_ref();
            assert!(
                matches!(
                    rules.judge(line).verdict,
                    Verdict::Unjudged { ref reason } if reason.contains(why)
                ),
                "{line}"
            );
        }
    }

    /// A here-document delimiter with an expansion, or none, is for a
    /// person, and never reaches the parser (brush's tokenizer looped on
    /// both).
    #[test]
    fn an_unreadable_heredoc_delimiter_is_for_a_person() {
        let rules = CommandRules::new(&["echo".to_owned(), "cat".to_owned()], &["rm".to_owned()])
            .expect("rules");
        let expanding = ["cat<<$(   x${", "cat <<- ${x}\nhi\n${x}", "cat <<`a`"];
        assert_for_a_person(&rules, &expanding, "holds an expansion");
        // `<<<` then `<<`: the second is a here-document.
        assert_for_a_person(&rules, &["cat <<<<<<<<in$((  x"], "holds an expansion");
        let missing = [
            "a<<<$(b<<  ",
            "echo $(cat <<    ",
            "cat <<",
            "cat <<- ;",
            "a<<'' ",
            "a<<\"\"  ",
        ];
        assert_for_a_person(&rules, &missing, "without a delimiter");
        let unclosed = [
            "$(g <<   h ",
            "sort<<<$(f $(g <<   h<< w  $0~ ",
            "sort<<<$(findelsesortsh -cprintf!!$(findelsesortsh -cprintf!!!!!!$0 !!!!$0              hashhash<<             hashhash<< headwcls       $0$0fi$0$0 $0~ ",
        ];
        assert_for_a_person(&rules, &unclosed, "unclosed");
        // An arithmetic `$((` left open on the here-document's line: a
        // panic in brush's tokenizer at the body's end, whatever the body
        // closes (the ninth sitting's command_policy campaign; its find,
        // minimised, first).
        let open_on_its_line = [
            "<<EOF)$((@)\nEOF",
            "cat <<EOF $((1)\nEOF",
            "cat <<EOF $((1)\nx)\nEOF",
            "cat <<EOF $((1)) $((2)\nEOF",
            "cat <<A <<B $((1)\nA\nB",
        ];
        assert_for_a_person(&rules, &open_on_its_line, "parenthesis unclosed");
        // An expanded body on a line with a command substitution, nested
        // more than three deep: the parser's time grows threefold a level
        // (the ninth sitting's campaign: 65 s a judgement; minimised).
        let expanded = [
            "<<EOF\n|$((')'(!(''m$>$(\u{fffd} -z!('\\\"'$[>$(\u{fffd} !(\u{fffd} | '\\\"\u{fffd})i'g$(\u{fffd}( '\\\"))\nEOF",
            "cat <<EOF\n$(echo (((x))))\nEOF",
            "cat <<EOF\n$(date) `id`\nEOF",
            "cat <<EOF\n$[1] $[2]\nEOF",
        ];
        assert_for_a_person(&rules, &expanded, "body expands commands");
        // Quoted, the body is not expanded, and is read.
        for quoted in [
            "cat <<'EOF'\n$(echo (((x))))\nEOF",
            "cat <<\"EOF\"\n$(date) `id`\nEOF",
        ] {
            assert_eq!(rules.judge(quoted).verdict, Verdict::Allowed, "{quoted}");
        }
        // A here-document as an argument (`"$(cat <<'EOF'` … `)"`) opens
        // its parenthesis before the operator, and is read.
        assert_eq!(
            rules
                .judge("echo \"$(cat <<'EOF'\nhi (there\nEOF\n)\"")
                .verdict,
            Verdict::Allowed
        );
        assert_eq!(rules.judge("cat <<EOF\nhi\nEOF").verdict, Verdict::Allowed);
        assert_eq!(
            rules.judge("echo $((1 << 2)) $((1<<2))").verdict,
            Verdict::Unjudged {
                reason: "arithmetic expansions are not judged by rules".to_owned()
            }
        );
        assert_eq!(rules.judge("cat <<< $x").verdict, Verdict::Allowed);
    }

    /// One command as it ran is asked of the rules alone: its words are
    /// not parsed again (an argument that would send a line to a person
    /// does not matter here).
    #[test]
    fn a_command_as_it_ran_is_asked_of_the_rules() {
        let rules = CommandRules::new(
            &["echo".to_owned(), "git status".to_owned()],
            &["rm".to_owned()],
        )
        .expect("rules");
        let argv = |words: &[&str]| words.iter().map(|w| (*w).to_owned()).collect::<Vec<_>>();
        assert!(rules.allows_command(&argv(&[
            "echo",
            "66666666666666666666666",
            "((((((((((((((("
        ])));
        assert!(rules.allows_command(&argv(&["git", "status", "--short"])));
        assert!(!rules.allows_command(&argv(&["git", "push"])));
        assert!(!rules.allows_command(&argv(&["./git", "status"])));
        assert!(!rules.allows_command(&argv(&["rm", "-rf", "x"])));
        assert!(!rules.allows_command(&argv(&["/bin/rm", "x"])));
        assert!(!rules.allows_command(&[]));
    }

    /// A line of several subscripted expansions is for a person, unparsed
    /// (the parser is exponential in unclosed subscripts).
    #[test]
    fn a_line_of_subscripts_is_for_a_person() {
        let rules = CommandRules::new(&["echo".to_owned()], &["rm".to_owned()]).expect("rules");
        let lines = [
            format!("echo {}", "${a[}".repeat(12)),
            format!("echo a[{}", "${a[} ".repeat(4)),
            // 14 s in an optimised build (the campaign's last find).
            "while[[trap.alias${aliasexportenv[[BASH_ENV=>(trap. aliasshopt${ alias[aliasBASH_ENV=coproc$0$0./}finddone[[$0$0$0}exportaliasshopt${aliasexportenv[[BASH_ENV=>(trap. aliasshopt${ alias[aliasBASH_ENV=coproc$0$0./}finddone[[$0$0$0}finddone[[then.$0-c".to_owned(),
        ];
        assert_for_a_person(&rules, &lines, "subscripted expansions");
        // Brackets opened in patterns (the ninth sitting's campaign: 14 s
        // a judgement for eleven, with `$[` and a `$(`).
        let patterns = [
            "echo ${a%[} ${a%[} ${a%[}",
            "echo ${a//[^0-9]/} ${b#[ab]} ${c%%[x]*}",
        ];
        assert_for_a_person(&rules, &patterns, "bracket patterns");
        // Two are read (and, having operators, left to a person by the
        // rules, not unread).
        assert_eq!(
            rules.judge("echo ${a//[^0-9]/} ${b#[ab]}").verdict,
            Verdict::Unjudged {
                reason: "parameter expansions with operators are not judged by rules".to_owned()
            }
        );
        assert_for_a_person(&rules, &["echo ${a[0]}${a[1]}"], "subscript");
        assert_eq!(
            rules.judge("echo ${a}${b}${c}[x]").verdict,
            Verdict::Allowed
        );
    }

    /// A line holding a NUL is for a person, unparsed (no shell reads past
    /// it; the tokenizer panicked on one).
    #[test]
    fn a_line_with_a_nul_is_for_a_person() {
        let rules = CommandRules::new(&["echo".to_owned()], &["rm".to_owned()]).expect("rules");
        let found = "\0$(nbui\n\0\u{90}\0< st&args\nsh -c\n\0rmcat <<EOF&&&&&& <EOF&&&&&&&\"]\"\0&&\"Z\"x)\nEOF";
        assert_for_a_person(&rules, &[found, "echo a\0; rm x"], "NUL");
    }

    /// A number too large for the parser (a descriptor beyond `i32`, a
    /// brace sequence or a tilde beyond 64 bits) is for a person: the
    /// parser panicked on them.
    #[test]
    fn an_oversized_number_is_for_a_person() {
        let rules = CommandRules::new(&["echo".to_owned()], &["rm".to_owned()]).expect("rules");
        let lines = [
            "echo 99999999999>x",
            "echo hi 2147483648<x",
            "echo a&&3000000000>>x",
            "echo {1..99999999999999999999}",
            "echo ~+99999999999999999999",
            "echo ~-99999999999999999999/x",
        ];
        assert_for_a_person(&rules, &lines, "larger than the rules read");
        assert_eq!(rules.judge("echo hi 2>x").verdict, Verdict::Allowed);
        assert_eq!(rules.judge("echo 2147483647 x").verdict, Verdict::Allowed);
        assert_eq!(
            rules.judge("echo 1700000000000 {1..3}").verdict,
            Verdict::Allowed
        );
    }

    /// A line of deeply nested parentheses is judged at once, for a
    /// person (the parser backtracked exponentially on them).
    #[test]
    fn deeply_nested_parentheses_are_for_a_person() {
        let rules = CommandRules::new(&["echo".to_owned()], &["rm".to_owned()]).expect("rules");
        let lines = [
            format!("echo a; {}", "((".repeat(14)),
            format!("echo {}", "( ".repeat(40)),
            format!("((((((echo{}", "(".repeat(40)),
            // A here-document whose body opens `$(` and `!(` and never
            // closes them, ten deep (a campaign's find, minimised).
            "<<EOF\n|'$(!('\\\"'|''$(xz!(x | '\\\"'$(x() =rd(x^xx$(x -z!(x -z!(x | '\\\"'xx.tr()() =:Word(xoxxxxxw:\"@)\nEOF".to_owned(),
        ];
        assert_for_a_person(&rules, &lines, "parentheses");
        assert_eq!(
            rules.judge("(echo a) && (echo b); echo '(('").verdict,
            Verdict::Allowed
        );
        assert_eq!(
            rules.judge("(echo $(echo $(echo a)))").verdict,
            Verdict::Allowed
        );
    }

    /// A word of many unmatched braces is judged at once, for a person
    /// (the word parser is exponential in them: 16 took minutes); a deny
    /// rule still wins.
    #[test]
    fn a_word_of_many_braces_is_for_a_person() {
        let rules = CommandRules::new(&["echo".to_owned()], &["rm".to_owned()]).expect("rules");
        let line = format!("echo {}\\{}", "{".repeat(4), "{".repeat(40));
        assert_for_a_person(&rules, &[line], "more braces");
        let line = format!("rm {}", "{".repeat(40));
        assert!(matches!(rules.judge(&line).verdict, Verdict::Denied { .. }));
        // Everyday brace expansions are read as before.
        assert!(!matches!(
            rules.judge("echo {a,b}{c,d}{e,f}").verdict,
            Verdict::Unjudged { reason } if reason.contains("more braces")
        ));
    }

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
        verdict_under(&rules(), line)
    }

    fn verdict_under(rules: &CommandRules, line: &str) -> String {
        match rules.judge(line).verdict {
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

    fn check(rules: &CommandRules, cases: &[(&str, &str)]) {
        let mut wrong = Vec::new();
        for (line, want) in cases {
            let got = verdict_under(rules, line);
            if !got.starts_with(want) {
                wrong.push(format!("{line:?}: got {got:?}, want {want:?}"));
            }
        }
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    }

    fn everything_but_rm() -> CommandRules {
        CommandRules::new(&["*".into()], &["rm".into(), "git push".into()]).expect("rules")
    }

    /// Under `allowed_commands = ["*"]`, a denied program is denied
    /// however it is spelled or wrapped: by path, and through every
    /// wrapper in the table — both the wrapper and what it runs are
    /// judged.
    #[test]
    fn a_denial_sees_through_paths_and_wrappers() {
        let d = "denied: `rm";
        let cases: &[(&str, &str)] = &[
            // Paths: a deny rule matches the name a program runs as.
            ("/bin/rm f", "denied: `/bin/rm f` by `rm`"),
            ("/usr/bin/rm -rf x", "denied: `/usr/bin/rm -rf x` by `rm`"),
            ("./rm f", "denied: `./rm f` by `rm`"),
            (
                "/usr/bin/git push",
                "denied: `/usr/bin/git push` by `git push`",
            ),
            ("rmdir x", "allowed"),
            // Shell builtins that run a command.
            ("command rm f", "denied: `rm f` by `rm`"),
            ("command -p rm f", d),
            ("command -- rm f", d),
            ("exec rm f", d),
            ("exec -a name rm f", d),
            ("builtin rm f", d),
            ("eval rm f", d),
            ("eval 'rm f'", d),
            ("trap 'rm f' EXIT", d),
            ("trap -- 'rm f' EXIT", d),
            // env: options and assignments.
            ("env rm f", d),
            ("/usr/bin/env rm f", d),
            ("env -i rm f", d),
            ("env - rm f", d),
            ("env -u HOME -C /tmp rm f", d),
            ("env --chdir=/tmp -- rm f", d),
            ("env X=1 rm f", d),
            // Runners with options and operands.
            ("timeout 5 rm f", d),
            ("timeout -s KILL 5 rm f", d),
            ("timeout --signal=KILL -k1 --preserve-status 5 rm f", d),
            ("nice rm f", d),
            ("nice -n 5 rm f", d),
            ("nice --adjustment=5 rm f", d),
            ("nohup rm f", d),
            ("stdbuf -oL -e 0 rm f", d),
            ("time rm f", d),
            ("command time -p -o /dev/null rm f", d),
            ("setsid -f rm f", d),
            ("ionice -c3 rm f", d),
            ("ionice -c 2 -n 7 rm f", d),
            ("taskset 0x1 rm f", d),
            ("taskset -c 0 rm f", d),
            ("chrt -f 1 rm f", d),
            ("chrt --idle 0 rm f", d),
            ("flock /tmp/lock rm f", d),
            ("flock -w 5 /tmp/lock -c 'rm f'", d),
            ("watch rm f", d),
            ("watch -n 1 -x rm f", d),
            ("strace -f -o /dev/null rm f", d),
            ("strace -E X=1 rm f", d),
            ("unshare -r rm f", d),
            ("unshare --mount --map-root-user rm f", d),
            ("chroot / rm f", d),
            ("chroot --skip-chdir / rm f", d),
            ("busybox rm f", d),
            // Privilege wrappers.
            ("sudo rm f", d),
            ("sudo -u root -E rm f", d),
            ("sudo X=1 rm f", d),
            ("doas -u root rm f", d),
            ("su -c 'rm f'", d),
            ("su - root -c 'rm f'", d),
            ("runuser -u nobody -c 'rm f'", "unjudged"),
            // Input-driven: xargs, find, parallel.
            ("echo f | xargs rm", "denied: `rm {input}` by `rm`"),
            ("xargs -0 -n1 rm < list", d),
            ("xargs -I{} rm {}", d),
            ("xargs -i rm {}", d),
            ("xargs --replace=X rm X", d),
            (
                "find . -name f -delete",
                "denied: `rm {files find deletes}` by `rm`",
            ),
            ("find . -exec rm {} \\;", d),
            ("find . -execdir rm -f {} +", d),
            ("find . -ok rm {} ';'", d),
            ("find . -name x -okdir rm {} \\;", d),
            ("parallel rm ::: f", d),
            ("parallel 'rm {}' ::: f", d),
            ("parallel -j2 rm {.} ::: f.c", d),
            // Shells: their scripts, recursively.
            ("sh -c 'rm f'", d),
            ("bash -c 'rm f'", d),
            ("bash -ec 'rm f'", d),
            ("bash -e -o pipefail -c 'rm f'", d),
            ("bash +e -c 'rm f' name arg", d),
            ("dash -c 'rm f'", d),
            ("zsh -c 'ls; rm f'", d),
            ("sh -c 'sh -c \"rm f\"'", d),
            ("bash -c 'echo $(rm f)'", d),
            ("xargs sh -c 'rm \"$@\"' _", d),
            ("find . -exec bash -c 'rm x' \\;", d),
            // Wrappers of wrappers.
            ("timeout 5 sudo nice -n 1 env X=1 rm f", d),
            ("command exec busybox rm f", d),
            ("sudo git push", "denied: `git push` by `git push`"),
            (
                "echo push | xargs git",
                "denied: `git {input}` by `git push`",
            ),
            // A deny still wins over an assignment.
            ("GIT_CONFIG_COUNT=1 rm f", d),
            ("X=1 git push", "denied: `git push`"),
        ];
        check(&everything_but_rm(), cases);
    }

    /// A wrapper whose inner command cannot be determined is never
    /// allowed by rules; what runs nothing (`command -v`) and a script
    /// file run by a shell (a program of its own) are judged as they are.
    #[test]
    fn a_wrapper_hiding_its_command_goes_to_a_person() {
        let u = "unjudged";
        let cases: &[(&str, &str)] = &[
            // Unknown options, and words only known at run time.
            (
                "xargs --frobnicate rm",
                "unjudged: `xargs` runs a command the rules cannot see: its option `--frobnicate` is not one the rules know",
            ),
            ("timeout $T rm f", u),
            ("nice -10 rm f", u),
            ("env -S 'rm f'", u),
            ("env \"$V\" rm f", u),
            ("sudo -e /etc/hosts", u),
            ("su -s /bin/rm root", u),
            ("mapfile -C 'rm f' x", u),
            // Commands read from input or known at run time.
            (
                "echo 'rm f' | sh",
                "unjudged: `sh` runs a command the rules cannot see: it reads its commands from input",
            ),
            ("bash -s < script", u),
            ("bash <(echo rm f)", u),
            ("sh /dev/stdin <<< 'rm f'", u),
            (". /dev/stdin <<< 'rm f'", u),
            ("source <(echo rm f)", u),
            ("sh -c \"$SCRIPT\"", u),
            ("eval \"$X\"", u),
            ("eval $(cat f)", u),
            ("su", u),
            ("sudo -s", u),
            ("doas -s", u),
            ("chroot /srv", u),
            ("unshare -r", u),
            ("parallel ::: 'rm f'", u),
            ("parallel {} f ::: rm", u),
            ("parallel 'rm {= s/x/y/ =}' ::: f", u),
            (
                "xargs -I{} {} f",
                "unjudged: its command name is only known when it runs",
            ),
            ("find . -exec {} \\;", u),
            ("find $DIR -delete", u),
            ("find . -name * -print", u),
            ("trap \"$ACTION\" EXIT", u),
            // Names only known at run time: globs and brace expansions.
            (
                "/bin/r? f",
                "unjudged: its command name is only known when it runs",
            ),
            ("/bin/r[m] f", u),
            ("{rm,f}", u),
            ("timeout {5,rm} f", u),
            // Builtins that rebind names or evaluate arithmetic.
            (
                "hash -p /bin/rm ls; ls f",
                "unjudged: `hash -p` makes a name run another program",
            ),
            (
                "alias ls='rm f'",
                "unjudged: an alias can make a name run anything",
            ),
            ("enable -f ./x.so rm", u),
            ("let 'x=a[$(id)]'", u),
            ("echo ${a[$(id)]}", u),
            ("echo ${!ref}", u),
            ("[ -v 'a[$(id)]' ]", u),
            ("unset 'a[$(id)]'", u),
            // Too deep.
            (
                &format!("{}ls", "nice ".repeat(MAX_NESTING + 2)),
                "unjudged: it nests too deeply to judge",
            ),
            // Nothing runs, or a program runs a file: judged as it is.
            ("command -v rm", "allowed"),
            ("command -V rm", "allowed"),
            ("ionice -p 1", "allowed"),
            ("sudo -l", "allowed"),
            ("env", "allowed"),
            ("xargs", "allowed"),
            ("nohup", "allowed"),
            ("sh script.sh", "allowed"),
            ("bash -e ./run_tests.sh arg", "allowed"),
            (". ./env.sh", "allowed"),
            ("trap - EXIT", "allowed"),
            ("trap -p", "allowed"),
            ("find . -name '*.rs' -print", "allowed"),
            ("timeout 5 cargo test", "allowed"),
            ("[ -f x ] && echo yes", "allowed"),
            ("ls *.rs", "allowed"),
        ];
        check(&everything_but_rm(), cases);
    }

    /// A line that sets a variable is not allowed on the strength of its
    /// command names, however the variable is set; a few inert variables
    /// with plain values are the exception; a denial still wins.
    #[test]
    fn a_line_that_sets_variables_goes_to_a_person() {
        let u = "unjudged: it sets";
        let cases: &[(&str, &str)] = &[
            (
                "GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.fsmonitor GIT_CONFIG_VALUE_0='rm f' git status",
                "unjudged: it sets `GIT_CONFIG_COUNT`, `GIT_CONFIG_KEY_0`, `GIT_CONFIG_VALUE_0`, and a variable can make a program run other commands",
            ),
            (
                "GIT_CONFIG_PARAMETERS=\"'core.pager'='rm f'\" git diff",
                "unjudged: it sets `GIT_CONFIG_PARAMETERS`",
            ),
            ("LD_PRELOAD=./x.so ls", "unjudged: it sets `LD_PRELOAD`"),
            ("BASH_ENV=./x.sh sh script.sh", u),
            ("ENV=./x.sh sh script.sh", u),
            ("PATH=./bin:$PATH git status", "unjudged: it sets `PATH`"),
            ("GIT_SSH_COMMAND='rm f' git status", u),
            ("PAGER='rm f' git diff", u),
            ("EDITOR='rm f' git status", u),
            ("PYTHONSTARTUP=x.py cat f", u),
            ("NODE_OPTIONS='--require ./x.js' npm test", u),
            // Before, alone, exported, declared: all the same.
            ("PATH=./bin; git status", "unjudged: it sets `PATH`"),
            ("export PAGER='rm f'; git diff", "unjudged: it sets `PAGER`"),
            // Exporting what is not set here sets nothing.
            ("export PAGER; git diff", "unlisted: export PAGER"),
            ("declare -x GIT_DIR=x; git status", u),
            ("typeset GIT_DIR=x; git status", u),
            ("readonly GIT_DIR=x; git status", u),
            ("f() { local GIT_DIR=x; git status; }; f", u),
            ("PS4='$(rm f)'; set -x; ls", u),
            ("BASH_CMDS[ls]=/bin/rm; ls f", "unjudged"),
            ("declare -n x=PATH; x=./bin; git status", "unjudged"),
            // Through env, sudo, strace.
            (
                "env GIT_SSH_COMMAND='rm f' git status",
                "unjudged: it sets `GIT_SSH_COMMAND`",
            ),
            ("env -i PATH=./bin git status", u),
            // From a loop or input.
            (
                "for PATH in ./bin; do git status; done",
                "unjudged: it sets `PATH`",
            ),
            (
                "for http_proxy in x; do git status; done",
                "unjudged: it sets `http_proxy`",
            ),
            // A lowercase loop variable stays the shell's own.
            ("for f in a b; do wc -l \"$f\"; done", "allowed"),
            (
                "read PATH <<< ./bin; git status",
                "unjudged: it sets `PATH`",
            ),
            (
                "printf -v PATH %s ./bin; git status",
                "unjudged: it sets `PATH`",
            ),
            ("mapfile -t PATH < f; ls", u),
            ("getopts ab PATH; ls", u),
            // Inert with a plain value.
            ("RUST_BACKTRACE=1 cargo test", "allowed"),
            ("NO_COLOR=1 LANG=C.UTF-8 ls", "allowed"),
            ("RUST_LOG=my_crate=debug,hyper=info cargo test", "allowed"),
            ("LANG=../../tmp/x ls", "unjudged: it sets `LANG`"),
            ("TZ=/tmp/zone ls", u),
            ("RUST_BACKTRACE=$X cargo test", u),
            // A denial still wins.
            (
                "GIT_CONFIG_COUNT=1 git push",
                "denied: `git push` by `git push`",
            ),
            (
                "RUST_BACKTRACE=$(rm f) cargo test",
                "denied: `rm f` by `rm`",
            ),
            ("a[$(rm x)]=1", "denied: `rm x` by `rm`"),
            // An argument is not an assignment, and exact rules see it.
            ("make check CC='rm f'", "unlisted: make check CC=rm f"),
        ];
        check(&rules(), cases);
    }

    /// An allow rule allows a path only if it names it; a wrapper and
    /// what it runs must both be allowed.
    #[test]
    fn an_allow_needs_the_path_and_both_wrapper_and_inner() {
        let r = CommandRules::new(
            &[
                "timeout".into(),
                "xargs".into(),
                "ls".into(),
                "git status".into(),
                "/opt/tools/fmt".into(),
            ],
            &["git push".into()],
        )
        .expect("rules");
        let cases: &[(&str, &str)] = &[
            ("git status", "allowed"),
            ("./git status", "unlisted: ./git status"),
            ("/usr/bin/git status", "unlisted: /usr/bin/git status"),
            ("/opt/tools/fmt src", "allowed"),
            ("fmt src", "unlisted: fmt src"),
            ("timeout 5 ls", "allowed"),
            ("timeout 5 git status", "allowed"),
            ("timeout 5 python3 x.py", "unlisted: python3 x.py"),
            ("nice ls", "unlisted: nice ls"),
            ("timeout 5 git push", "denied: `git push` by `git push`"),
            ("echo . | xargs ls", "unlisted: echo ."),
            ("xargs ls < dirs", "allowed"),
            // Arguments from input may be `push`.
            ("xargs git < args", "denied: `git {input}` by `git push`"),
            ("xargs -I{} git status {} < args", "allowed"),
        ];
        check(&r, cases);
    }
}
