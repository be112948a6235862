//! Lines the shell parser is not trusted with. brush-parser (0.4, the
//! newest) loops, panics or allocates without end on some lines a model
//! could write; the fuzz campaigns found each of these (FUZZING.md). Such
//! a line is left to a person before it reaches the parser.

/// How deep a line may nest parentheses before it is left to a person
/// unread: the parser backtracks exponentially on unclosed ones (`((` × 12
/// took 5.7 s in a debug build, × 14 took 87 s; found by the
/// command_policy fuzz targets). In a here-document's body, unclosed `$(`
/// and `!(` twelve deep took 6 s a judgement optimised, ten deep 0.7 s,
/// eight 0.14 s (the eighth sitting's command_policy campaign). Everyday
/// lines nest two or three deep.
const MAX_PARENS: usize = 8;

/// How deep a line may nest parentheses when it has a here-document whose
/// body is expanded (its delimiter unquoted) and a command substitution:
/// brush re-reads such a body, and its time grows about threefold with
/// each level (a 490-byte line: 0.03 s two deep, 0.22 s four, 1.3 s six,
/// 65 s eight with more substitutions; the ninth sitting's command_policy
/// campaign). `"$(cat <<EOF` … `EOF` … `)"` nests one deep. Two
/// substitutions or more on such a line are not read at all: a 575-byte
/// line of 33 (`$(`, `$[`, backquotes) took 23 s a judgement, the same
/// line with any one or two of them left 0.03 s (the same campaign).
const MAX_PARENS_EXPANDED_HEREDOC: usize = 3;

/// How many expansions holding a `[` (a subscript, `${name[`, or a
/// bracket in a pattern, `${a%[`) a line may have before it is left to a
/// person unparsed (the parser is exponential in unclosed ones).
const MAX_SUBSCRIPTED: usize = 2;

/// The longest line judged: a line runs as one argument (`bash -c
/// LINE`), and Linux takes no argument longer than 128 KiB
/// (`MAX_ARG_STRLEN`, with its NUL), so a longer line could not run.
pub(super) const MAX_LINE: usize = 128 * 1024 - 1;

/// Why `text` is not handed to the parser, if it is not.
pub(super) fn why(text: &str) -> Option<String> {
    if text.len() > MAX_LINE {
        return Some(format!(
            "it is longer than a command line may be ({} bytes; Linux runs none over 128 KiB)",
            text.len()
        ));
    }
    if let Some(why) = unread_heredoc(text) {
        return Some(why);
    }
    if text.contains('\0') {
        // No shell sees past a NUL (a command line is a C string), and
        // brush's tokenizer panicked on one (the command_policy
        // campaign): what would run is not what is read.
        return Some("it holds a NUL character, where a shell's command line ends".to_owned());
    }
    if subscripted_expansions(text) > MAX_SUBSCRIPTED {
        // Subscripts are for a person anyway (`${a[…]}` can run code);
        // the parser is exponential in unclosed ones (`${a[}` × 4 took
        // 1.2 s optimised, a 200-byte line 46 s: found by the
        // command_policy_bash campaign), and in brackets opened in
        // patterns (`${a%[` × 11 with `$[` and a `$(`: 14 s, the ninth
        // sitting's command_policy campaign), so such a line is not parsed.
        return Some(
            "it has subscripted expansions or bracket patterns, which the rules do not read"
                .to_owned(),
        );
    }
    if parens(text).0 > MAX_PARENS {
        return Some("it nests parentheses deeper than the rules read".to_owned());
    }
    oversized_number(text)
        .map(|number| format!("it holds the number `{number}`, larger than the rules read"))
}

/// Why a here-document (`<<WORD`, `<<-WORD`) in the text is not handed to
/// the parser, if one is not: its delimiter holds a `$` or a backtick, or
/// it has none, or it lies in a `$(` the line never closes, or its body is
/// expanded on a line with two command substitutions or more (`$(`, `$[`,
/// backquotes), or with one and parentheses more than three deep, or the
/// rest of its line leaves a parenthesis open. Bash takes an expanding delimiter literally and refuses a
/// missing one, but brush's tokenizer (0.4) loops on both, allocating
/// without end (`a<<$(  x${`; `$(x<<` and `a<<'' ` followed by spaces:
/// found by the command_policy_bash fuzz target, 1.4 GB in 30 s, 1.8 GB in
/// one allocation). A delimiter empty once unquoted (`<<''`, which bash
/// reads as "until an empty line") counts as none.
fn unread_heredoc(text: &str) -> Option<String> {
    let mut rest = text;
    while let Some(at) = rest.find("<<") {
        let after = rest.get(at + 2..).unwrap_or_default();
        rest = after;
        if let Some(string) = after.strip_prefix('<') {
            // `<<<`, a here-string: its word is an ordinary word; what
            // follows may be another operator (`<<<<<x` is `<<<` `<<x`).
            rest = string;
            continue;
        }
        let word = after
            .strip_prefix('-')
            .unwrap_or(after)
            .trim_start_matches([' ', '\t']);
        let end = word
            .find(|c: char| c.is_whitespace() || ";&|<>()".contains(c))
            .unwrap_or(word.len());
        let delimiter = word.get(..end).unwrap_or_default();
        // Empty once its quotes are taken away (`<<''`) counts as none.
        if delimiter.replace(['\'', '"', '\\'], "").is_empty() {
            return Some("it has a here-document without a delimiter".to_owned());
        }
        if delimiter.contains(['$', '`']) {
            return Some(format!(
                "its here-document delimiter `{delimiter}` holds an expansion, which the rules do not read"
            ));
        }
        // A here-document in a `$(` the line never closes: a parse error
        // for bash, and an endless allocation for brush's tokenizer
        // (`$(g <<   h `: 4 GB, the campaign's last find).
        if text.matches("$(").count() > text.matches(')').count() {
            return Some("it has a here-document inside an unclosed `$(`".to_owned());
        }
        // The rest of the here-document's line leaving a parenthesis open
        // (`cat <<EOF $((1)`, then the body): brush's tokenizer (0.4)
        // panics at the body's end, whatever the body closes (the ninth
        // sitting's command_policy campaign). `$(cat <<'EOF'`, the usual
        // way to pass a here-document as an argument, leaves none open
        // after its delimiter.
        let line = word.get(end..).unwrap_or_default();
        let line = line.split('\n').next().unwrap_or_default();
        if parens(line).1 > 0 {
            return Some(
                "it has a here-document on a line that leaves a parenthesis unclosed".to_owned(),
            );
        }
        let quoted = delimiter.contains(['\'', '"', '\\']);
        // Counted after the operator: where its body is (`<<` in `$((1 <<
        // 2))` is a shift, with no body after it).
        let substitutions =
            after.matches("$(").count() + after.matches("$[").count() + after.matches('`').count();
        if !quoted
            && (substitutions > 1
                || substitutions == 1 && parens(text).0 > MAX_PARENS_EXPANDED_HEREDOC)
        {
            return Some(
                "it has a here-document whose body expands commands, with more substitutions or deeper parentheses than the rules read"
                    .to_owned(),
            );
        }
    }
    None
}

/// A number in the text too large for the parser, if there is one.
/// brush-parser 0.4 unwraps numbers it reads: a redirection's descriptor
/// into an `i32` (`99999999999>x`), a brace sequence's ends into an `i64`
/// (`{1..99999999999999999999}`), a directory-stack tilde into a `usize`
/// (`~+99999999999999999999`), and panics on a larger one (the first two
/// found by the command_policy_bash fuzz target). Runs of digits are looked
/// at wherever they are: a false alarm only sends the line to a person.
fn oversized_number(text: &str) -> Option<&str> {
    let bytes = text.as_bytes();
    let mut start = None;
    for (i, b) in bytes
        .iter()
        .enumerate()
        .chain(std::iter::once((bytes.len(), &b' ')))
    {
        if b.is_ascii_digit() {
            start.get_or_insert(i);
            continue;
        }
        if let Some(from) = start.take() {
            let digits = text.get(from..i).unwrap_or_default();
            let fd = matches!(b, b'<' | b'>') && digits.parse::<i32>().is_err();
            if fd || digits.parse::<i64>().is_err() {
                return Some(digits);
            }
        }
    }
    None
}

/// How many parameter expansions in the text hold a `[` before their
/// closing `}` (or the end): a subscript (`${name[`, `${ name[`) or a
/// bracket in a pattern (`${a%[x]}`, `${a//[^0-9]/}`), closed or not.
fn subscripted_expansions(text: &str) -> usize {
    text.match_indices("${")
        .filter(|(at, _)| {
            text.get(at + 2..)
                .is_some_and(|rest| rest.split('}').next().unwrap_or_default().contains('['))
        })
        .count()
}

/// The deepest nesting of parentheses in the text, and how many are still
/// open at its end (a `)` with none open is passed over), counted on the
/// bytes (quotes too: a false alarm only sends the line to a person).
fn parens(text: &str) -> (usize, usize) {
    let (mut depth, mut deepest) = (0usize, 0usize);
    for b in text.bytes() {
        match b {
            b'(' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b')' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    (deepest, depth)
}
