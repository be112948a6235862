//! Terminal safety: text that came from a model, a plugin, a hook, the
//! store, the trace or the file system is shown on the terminal, never
//! interpreted by it.
//!
//! Every control character a terminal could act on (C0 controls such as
//! ESC, BEL, backspace and carriage return, DEL, and the C1 controls
//! U+0080–U+009F, which include the one-character CSI U+009B) and every
//! Unicode bidi control (which can make text read differently from what it
//! is) is replaced by a visible escape: ESC as `\e`, other C0 controls and
//! DEL as `\x07`-style, C1 and bidi controls as `\u{9b}`-style. Printable
//! text, including non-ASCII letters and emoji, is left as it is.
//!
//! The output of these functions contains no character they would change,
//! so applying them twice changes nothing.

use std::borrow::Cow;
use std::fmt::Write as _;

/// `s` made safe to print where several lines are expected: newlines and
/// tabs are kept, every other control character and every bidi control is
/// replaced by a visible escape (`\e`, `\x07`, `\u{9b}`, `\u{202e}`).
///
/// Borrows `s` when nothing needs changing.
pub fn visible(s: &str) -> Cow<'_, str> {
    escape(s, false)
}

/// Like [`visible`], for single-line contexts (tool names, file names,
/// argument summaries): a newline is shown as the two characters `\n` too.
/// Tabs are kept.
///
/// Borrows `s` when nothing needs changing.
pub fn visible_line(s: &str) -> Cow<'_, str> {
    escape(s, true)
}

/// JSON text (from `serde_json`) made safe for a terminal and still the
/// same JSON: serde_json escapes C0 controls but leaves DEL, the C1
/// controls and bidi controls raw, and those can only occur inside strings,
/// so each becomes its `\uXXXX` escape. The parsed value is unchanged.
///
/// Borrows `json` when nothing needs changing.
pub fn json_text(json: &str) -> Cow<'_, str> {
    // A raw newline is only ever whitespace between tokens (serde escapes
    // the ones in strings), as pretty-printed JSON has.
    let unsafe_char = |c: char| (c.is_control() && c != '\n') || is_bidi_control(c);
    let Some(first) = json.find(unsafe_char) else {
        return Cow::Borrowed(json);
    };
    let (clean, rest) = json.split_at(first);
    let mut out = String::with_capacity(json.len() + 16);
    out.push_str(clean);
    for c in rest.chars() {
        if unsafe_char(c) {
            // Writing to a String cannot fail.
            let _ = write!(out, "\\u{:04x}", u32::from(c));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// Unicode bidi controls: ALM, LRM, RLM, LRE…RLO, LRI…PDI.
fn is_bidi_control(c: char) -> bool {
    matches!(
        c,
        '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
    )
}

fn needs_escape(c: char, one_line: bool) -> bool {
    match c {
        '\t' => false,
        '\n' => one_line,
        // `is_control` is exactly C0, DEL and C1 (general category Cc).
        c => c.is_control() || is_bidi_control(c),
    }
}

fn escape(s: &str, one_line: bool) -> Cow<'_, str> {
    let Some(first) = s.find(|c| needs_escape(c, one_line)) else {
        return Cow::Borrowed(s);
    };
    let (clean, rest) = s.split_at(first);
    let mut out = String::with_capacity(s.len() + 16);
    out.push_str(clean);
    for c in rest.chars() {
        if !needs_escape(c, one_line) {
            out.push(c);
            continue;
        }
        // Writing to a String cannot fail.
        let _ = match c {
            '\x1b' => write!(out, "\\e"),
            '\n' => write!(out, "\\n"),
            c if u32::from(c) < 0x80 => write!(out, "\\x{:02x}", u32::from(c)),
            c => write!(out, "\\u{{{:x}}}", u32::from(c)),
        };
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_stays_exact_and_terminal_safe() {
        let v = serde_json::json!({"t": "a\u{1b}[2J\u{9b}31m\u{7f}\u{202e}z\n", "n": 1});
        let raw = serde_json::to_string(&v).expect("json");
        let safe = json_text(&raw);
        assert!(
            !safe.chars().any(|c| c.is_control() || is_bidi_control(c)),
            "{safe}"
        );
        let back: serde_json::Value = serde_json::from_str(&safe).expect("still JSON");
        assert_eq!(back, v);
        assert!(matches!(json_text("{\"a\":1}"), Cow::Borrowed(_)));
    }

    #[test]
    fn plain_text_passes_unchanged_and_borrowed() {
        for s in [
            "",
            "hello world",
            "two\nlines\twith a tab\n",
            "héllo wörld ñ 日本語 Ελληνικά русский",
            "emoji 🦀👍🏽 and ZWJ 👨‍👩‍👧",
            "backslash \\e stays \\x07",
            "1 | fn main() {}\n2 | }",
        ] {
            assert!(matches!(visible(s), Cow::Borrowed(b) if b == s), "{s:?}");
        }
        assert!(matches!(visible_line("a\tb 🦀"), Cow::Borrowed("a\tb 🦀")));
    }

    #[test]
    fn screen_clear_is_shown() {
        assert_eq!(visible("a\x1b[2Jb"), "a\\e[2Jb");
        assert_eq!(visible("\x1b[2J\x1b[H"), "\\e[2J\\e[H");
    }

    #[test]
    fn osc_52_clipboard_write_is_shown() {
        assert_eq!(
            visible("x\x1b]52;c;cHduZWQ=\x07y"),
            "x\\e]52;c;cHduZWQ=\\x07y"
        );
        // OSC ended by ST (ESC \).
        assert_eq!(visible("\x1b]52;c;AA==\x1b\\"), "\\e]52;c;AA==\\e\\");
    }

    #[test]
    fn osc_0_window_title_is_shown() {
        assert_eq!(visible("\x1b]0;pwned\x07"), "\\e]0;pwned\\x07");
    }

    #[test]
    fn c1_controls_are_shown() {
        assert_eq!(visible("\u{9b}31mred"), "\\u{9b}31mred");
        assert_eq!(visible("\u{80}\u{9d}\u{9f}"), "\\u{80}\\u{9d}\\u{9f}");
        // Just outside C1: printable.
        assert_eq!(visible("\u{a0}é"), "\u{a0}é");
    }

    #[test]
    fn carriage_return_backspace_del_and_other_c0_are_shown() {
        assert_eq!(visible("safe\rEVIL"), "safe\\x0dEVIL");
        assert_eq!(visible("abc\x08\x08\x08xyz"), "abc\\x08\\x08\\x08xyz");
        assert_eq!(visible("del\x7f"), "del\\x7f");
        assert_eq!(visible("\0\x01\x0b\x0c\x1f"), "\\x00\\x01\\x0b\\x0c\\x1f");
    }

    #[test]
    fn bidi_controls_are_shown() {
        assert_eq!(visible("file\u{202e}txt.exe"), "file\\u{202e}txt.exe");
        for (c, shown) in [
            ('\u{202a}', "\\u{202a}"),
            ('\u{202b}', "\\u{202b}"),
            ('\u{202c}', "\\u{202c}"),
            ('\u{202d}', "\\u{202d}"),
            ('\u{2066}', "\\u{2066}"),
            ('\u{2067}', "\\u{2067}"),
            ('\u{2068}', "\\u{2068}"),
            ('\u{2069}', "\\u{2069}"),
            ('\u{200e}', "\\u{200e}"),
            ('\u{200f}', "\\u{200f}"),
            ('\u{061c}', "\\u{61c}"),
        ] {
            assert_eq!(visible(&c.to_string()), shown);
            assert_eq!(visible_line(&c.to_string()), shown);
        }
    }

    #[test]
    fn one_line_variant_shows_newlines_too() {
        assert_eq!(visible_line("a\nb"), "a\\nb");
        assert_eq!(visible_line("a\tb"), "a\tb");
        assert_eq!(visible_line("name\x1b[2J\r\n"), "name\\e[2J\\x0d\\n");
        assert_eq!(visible("a\nb"), "a\nb");
    }

    #[test]
    fn output_is_safe_and_stable() {
        let evil =
            "ok \x1b[2J \x1b]52;c;cHduZWQ=\x07 \x1b]0;t\x07 \u{9b}31m \r\x08\x7f \u{202e} 🦀\n";
        for shown in [visible(evil), visible_line(evil)] {
            assert!(
                !shown
                    .chars()
                    .any(|c| (c.is_control() && c != '\n' && c != '\t') || is_bidi_control(c)),
                "{shown:?}"
            );
            assert!(shown.contains("🦀"));
            assert_eq!(visible(&shown), shown);
        }
        let line = visible_line(evil);
        assert!(!line.contains('\n'));
        assert_eq!(visible_line(&line), line);
    }

    #[test]
    fn split_escape_sequence_stays_harmless() {
        // A stream can cut an escape sequence between deltas.
        let joined = format!("{}{}", visible("abc\x1b"), visible("[2Jdef"));
        assert_eq!(joined, "abc\\e[2Jdef");
    }
}
