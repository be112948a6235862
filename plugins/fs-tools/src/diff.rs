//! `apply_diff`: Roo Code's SEARCH/REPLACE blocks.
//!
//! ```text
//! <<<<<<< SEARCH
//! :start_line:10
//! -------
//! old lines
//! =======
//! new lines
//! >>>>>>> REPLACE
//! ```
//!
//! Each block's search text is found exactly first (nearest `:start_line:`
//! when given), then with whitespace-tolerant line matching (indentation is
//! carried over to the replacement). All blocks apply or none do.

use roost_sdk::{Output, ToolError, ToolResult};
use serde::Deserialize;

use crate::text::{join, line_ending, read_text, write_text};

pub const DESCRIPTION: &str = "Edit an existing file with one or more SEARCH/REPLACE blocks. Each block:\n\
<<<<<<< SEARCH\n:start_line:<line where the search text starts>\n-------\n<exact existing lines>\n=======\n\
<replacement lines>\n>>>>>>> REPLACE\n\
The search text must match the file (whitespace differences are tolerated); read the file first. \
Several blocks may be given in one diff; they are applied in order and either all apply or none do. \
A marker line inside content must be escaped with a leading backslash (e.g. \\=======).";

/// Arguments of `apply_diff`.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DiffArgs {
    /// Workspace-relative path of the file.
    pub path: String,
    /// One or more SEARCH/REPLACE blocks.
    pub diff: String,
}

/// One parsed block.
#[derive(Debug, PartialEq)]
pub struct Block {
    pub start_line: Option<usize>,
    pub search: Vec<String>,
    pub replace: Vec<String>,
}

fn is_marker(line: &str, marker: &str) -> bool {
    line.trim_end() == marker
}

fn unescape(line: &str) -> String {
    for m in ["<<<<<<< SEARCH", "=======", ">>>>>>> REPLACE", "-------"] {
        if let Some(rest) = line.strip_prefix('\\')
            && rest.trim_end() == m
        {
            return rest.to_owned();
        }
    }
    line.to_owned()
}

/// Parse the blocks of a diff.
pub fn parse(diff: &str) -> Result<Vec<Block>, String> {
    let mut blocks = Vec::new();
    let mut lines = diff.lines().peekable();
    let mut n = 0usize;
    while let Some(line) = lines.next() {
        if !is_marker(line, "<<<<<<< SEARCH") {
            continue;
        }
        n += 1;
        let mut start_line = None;
        while let Some(l) = lines.peek() {
            let t = l.trim();
            if let Some(v) = t.strip_prefix(":start_line:") {
                start_line = Some(
                    v.trim()
                        .parse::<usize>()
                        .map_err(|_| format!("block {n}: invalid :start_line: value {v:?}"))?,
                );
                lines.next();
            } else if t.starts_with(":end_line:") {
                lines.next();
            } else if t == "-------" {
                lines.next();
                break;
            } else {
                break;
            }
        }
        let mut search = Vec::new();
        let mut found_sep = false;
        for l in lines.by_ref() {
            if is_marker(l, "=======") {
                found_sep = true;
                break;
            }
            if is_marker(l, ">>>>>>> REPLACE") || is_marker(l, "<<<<<<< SEARCH") {
                return Err(format!(
                    "block {n}: missing '=======' between the search and replace parts"
                ));
            }
            search.push(unescape(l));
        }
        if !found_sep {
            return Err(format!(
                "block {n}: missing '=======' between the search and replace parts"
            ));
        }
        let mut replace = Vec::new();
        let mut closed = false;
        for l in lines.by_ref() {
            if is_marker(l, ">>>>>>> REPLACE") {
                closed = true;
                break;
            }
            if is_marker(l, "=======") || is_marker(l, "<<<<<<< SEARCH") {
                return Err(format!(
                    "block {n}: unexpected marker {l:?} before '>>>>>>> REPLACE'"
                ));
            }
            replace.push(unescape(l));
        }
        if !closed {
            return Err(format!("block {n}: missing '>>>>>>> REPLACE'"));
        }
        if search.iter().all(|s| s.trim().is_empty()) {
            return Err(format!(
                "block {n}: the SEARCH part is empty; to add lines use insert_content, to rewrite a file use write_to_file"
            ));
        }
        blocks.push(Block {
            start_line,
            search,
            replace,
        });
    }
    if blocks.is_empty() {
        return Err(
            "no SEARCH/REPLACE blocks found: each block starts with '<<<<<<< SEARCH'".into(),
        );
    }
    Ok(blocks)
}

fn normalize(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn leading_ws(s: &str) -> &str {
    &s[..s.len() - s.trim_start().len()]
}

/// Where a block matched and whether it was exact.
struct Match {
    at: usize,
    exact: bool,
}

fn find(lines: &[String], block: &Block) -> Option<Match> {
    let n = block.search.len();
    if n > lines.len() {
        return None;
    }
    let hint = block.start_line.map(|l| l.saturating_sub(1));
    let pick = |cands: Vec<usize>| -> Option<usize> {
        match hint {
            Some(h) => cands.into_iter().min_by_key(|&c| c.abs_diff(h)),
            None => cands.into_iter().next(),
        }
    };
    let exact: Vec<usize> = (0..=lines.len() - n)
        .filter(|&i| lines[i..i + n] == block.search[..])
        .collect();
    if let Some(at) = pick(exact) {
        return Some(Match { at, exact: true });
    }
    let wanted: Vec<String> = block.search.iter().map(|s| normalize(s)).collect();
    let norm: Vec<String> = lines.iter().map(|s| normalize(s)).collect();
    let loose: Vec<usize> = (0..=lines.len() - n)
        .filter(|&i| norm[i..i + n] == wanted[..])
        .collect();
    pick(loose).map(|at| Match { at, exact: false })
}

/// The window most similar to the search text, for the error message.
fn closest(lines: &[String], block: &Block) -> Option<(usize, f32)> {
    let n = block.search.len().min(lines.len());
    if n == 0 {
        return None;
    }
    let wanted = block.search.join("\n");
    (0..=lines.len() - n)
        .map(|i| {
            (
                i,
                similar::TextDiff::from_lines(&lines[i..i + n].join("\n"), &wanted).ratio(),
            )
        })
        .max_by(|a, b| a.1.total_cmp(&b.1))
}

/// Re-indent replacement lines when the search matched with different
/// indentation: swap the search's base indent for the file's.
fn reindent(replace: &[String], search_first: &str, file_first: &str) -> Vec<String> {
    let from = leading_ws(search_first);
    let to = leading_ws(file_first);
    replace
        .iter()
        .map(|l| match l.strip_prefix(from) {
            Some(rest) if !l.trim().is_empty() => format!("{to}{rest}"),
            _ => l.clone(),
        })
        .collect()
}

/// Apply `blocks` to `lines`; returns the changed line count or an error
/// describing the first block that did not match.
pub fn apply(lines: &mut Vec<String>, blocks: &[Block]) -> Result<usize, String> {
    let mut changed = 0usize;
    // Lines the blocks applied so far added and removed: a later block's
    // `:start_line:` (the model's number, any size) moves by the
    // difference, in checked arithmetic, and never below line 1.
    let (mut added, mut removed) = (0usize, 0usize);
    for (i, b) in blocks.iter().enumerate() {
        let adjusted = Block {
            start_line: b
                .start_line
                .map(|l| l.saturating_add(added).saturating_sub(removed).max(1)),
            search: b.search.clone(),
            replace: b.replace.clone(),
        };
        let Some(m) = find(lines, &adjusted) else {
            let mut msg = format!(
                "block {} of {}: no sufficiently similar match found{} for the SEARCH text:\n{}\n",
                i + 1,
                blocks.len(),
                b.start_line
                    .map_or(String::new(), |l| format!(" near line {l}")),
                b.search.join("\n")
            );
            if let Some((at, ratio)) = closest(lines, &adjusted) {
                let end = (at + b.search.len()).min(lines.len());
                msg.push_str(&format!(
                    "\nBest match ({:.0}% similar) at lines {}-{}:\n{}\n",
                    ratio * 100.0,
                    at + 1,
                    end,
                    lines[at..end].join("\n")
                ));
            }
            msg.push_str("\nRead the file again with read_file and copy the exact lines into SEARCH. No block was applied.");
            return Err(msg);
        };
        let replacement = if m.exact {
            b.replace.clone()
        } else {
            reindent(&b.replace, &b.search[0], &lines[m.at])
        };
        changed += b.search.len().max(replacement.len());
        added = added.saturating_add(replacement.len());
        removed = removed.saturating_add(b.search.len());
        lines.splice(m.at..m.at + b.search.len(), replacement);
    }
    Ok(changed)
}

pub fn apply_diff(a: DiffArgs) -> ToolResult {
    let blocks = parse(&a.diff).map_err(ToolError::invalid_args)?;
    let file = read_text(&a.path)?;
    let eol = line_ending(&file.text);
    let trailing = file.text.ends_with('\n');
    let mut lines: Vec<String> = file.text.lines().map(str::to_owned).collect();
    let changed =
        apply(&mut lines, &blocks).map_err(|m| ToolError::not_found(format!("{}: {m}", a.path)))?;
    write_text(&a.path, &file.path, &join(&lines, eol, trailing))?;
    Ok(Output::text(format!(
        "Applied {} block(s) to {} ({changed} lines changed).",
        blocks.len(),
        a.path
    ))
    .with_data(
        serde_json::json!({"path": a.path, "blocks": blocks.len(), "lines_changed": changed}),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Vec<String> {
        s.lines().map(str::to_owned).collect()
    }

    #[test]
    fn parses_blocks_with_and_without_start_line() {
        let d = "<<<<<<< SEARCH\n:start_line:2\n-------\nb\n=======\nB\n>>>>>>> REPLACE\n\n<<<<<<< SEARCH\nc\n=======\nC\n>>>>>>> REPLACE\n";
        let b = parse(d).expect("parses");
        assert_eq!(b.len(), 2);
        assert_eq!(b[0].start_line, Some(2));
        assert_eq!(b[1].search, vec!["c"]);
    }

    #[test]
    fn exact_then_whitespace_tolerant() {
        let mut lines = v("fn a() {\n    let x = 1;\n}\n");
        let blocks =
            parse("<<<<<<< SEARCH\n  let   x = 1;\n=======\n  let x = 2;\n>>>>>>> REPLACE")
                .expect("parses");
        apply(&mut lines, &blocks).expect("applies");
        assert_eq!(lines[1], "    let x = 2;");
    }

    #[test]
    fn any_start_line_the_model_writes_is_taken_without_overflow() {
        let mut lines: Vec<String> = ["a", "b", "c", "d"].iter().map(|s| s.to_string()).collect();
        let d = format!(
            "<<<<<<< SEARCH\n:start_line:1\n-------\na\nb\n=======\nab\n>>>>>>> REPLACE\n\n\
             <<<<<<< SEARCH\n:start_line:{}\n-------\nd\n=======\nD\n>>>>>>> REPLACE\n",
            usize::MAX
        );
        let blocks = parse(&d).expect("parses");
        assert_eq!(blocks[1].start_line, Some(usize::MAX));
        apply(&mut lines, &blocks).expect("applies");
        assert_eq!(lines, ["ab", "c", "D"]);
        // A start line of 0 after lines were removed stays at line 1.
        let mut lines: Vec<String> = ["a", "b", "c"].iter().map(|s| s.to_string()).collect();
        let d = "<<<<<<< SEARCH\n:start_line:1\n-------\na\nb\n=======\n>>>>>>> REPLACE\n\n\
                 <<<<<<< SEARCH\n:start_line:0\n-------\nc\n=======\nC\n>>>>>>> REPLACE\n";
        apply(&mut lines, &parse(d).expect("parses")).expect("applies");
        assert_eq!(lines, ["C"]);
    }

    #[test]
    fn start_line_picks_the_nearest_duplicate() {
        let mut lines = v("x\ny\nx\ny\n");
        let blocks =
            parse("<<<<<<< SEARCH\n:start_line:3\n-------\nx\n=======\nz\n>>>>>>> REPLACE")
                .expect("parses");
        apply(&mut lines, &blocks).expect("applies");
        assert_eq!(lines, v("x\ny\nz\ny\n"));
    }

    #[test]
    fn missing_block_reports_closest_and_applies_nothing() {
        let mut lines = v("alpha\nbeta\ngamma\n");
        let blocks = parse(
            "<<<<<<< SEARCH\nalpha\n=======\nALPHA\n>>>>>>> REPLACE\n<<<<<<< SEARCH\nbetta\n=======\nB\n>>>>>>> REPLACE",
        )
        .expect("parses");
        let mut copy = lines.clone();
        let err = apply(&mut copy, &blocks).expect_err("second block fails");
        assert!(err.contains("block 2 of 2"), "{err}");
        assert!(err.contains("Best match"), "{err}");
        lines.truncate(3);
        assert_eq!(lines, v("alpha\nbeta\ngamma\n"));
    }

    #[test]
    fn malformed_diffs_are_rejected() {
        assert!(parse("no blocks").is_err());
        assert!(parse("<<<<<<< SEARCH\na\n>>>>>>> REPLACE").is_err());
        assert!(parse("<<<<<<< SEARCH\na\n=======\nb\n").is_err());
        assert!(parse("<<<<<<< SEARCH\n\n=======\nb\n>>>>>>> REPLACE").is_err());
    }

    #[test]
    fn escaped_markers_are_content() {
        let b = parse("<<<<<<< SEARCH\n\\=======\n=======\nx\n>>>>>>> REPLACE").expect("parses");
        assert_eq!(b[0].search, vec!["======="]);
    }
}
