//! One terminal, two streams: the model's text streams to stdout a piece at
//! a time (often mid-line), while notices, log lines, questions and the
//! spinner go to stderr. Anything written to stderr first ends the line
//! stdout left open and clears the spinner, so a notice never lands in the
//! middle of the model's sentence.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

/// Stdout's last write did not end with a newline.
static STDOUT_MID_LINE: AtomicBool = AtomicBool::new(false);
/// The spinner is on stderr's current line.
static SPINNER_SHOWN: AtomicBool = AtomicBool::new(false);

/// Record what was just written to stdout.
pub fn wrote_stdout(text: &str) {
    if let Some(last) = text.chars().last() {
        STDOUT_MID_LINE.store(last != '\n', Ordering::SeqCst);
    }
}

/// Whether stdout's last write left a line open.
pub fn stdout_mid_line() -> bool {
    STDOUT_MID_LINE.load(Ordering::SeqCst)
}

/// Record that the spinner was drawn (or erased) on stderr.
pub fn spinner_drawn(shown: bool) {
    SPINNER_SHOWN.store(shown, Ordering::SeqCst);
}

/// Make room for a line on stderr: erase the spinner and end the line
/// stdout left open.
pub fn before_stderr() {
    if SPINNER_SHOWN.swap(false, Ordering::SeqCst) {
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r\x1b[2K");
        let _ = err.flush();
    }
    // A line left open is ended whether stdout is the terminal or shares
    // a file with stderr (`2>&1`): a notice never joins the model's line.
    if STDOUT_MID_LINE.swap(false, Ordering::SeqCst) {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out);
        let _ = out.flush();
    }
}

/// `eprintln!` that first makes room (see [`before_stderr`]) and never
/// panics: a closed stderr (`2>&-`, a reader that went away) must not
/// kill a task.
macro_rules! notice {
    ($($arg:tt)*) => {{
        $crate::line::before_stderr();
        $crate::line::to_stderr(&format!("{}\n", format_args!($($arg)*)));
    }};
}
pub(crate) use notice;

/// `println!` that never panics: `roost … | head -1` closes stdout early,
/// and the task (and the command) go on without it.
macro_rules! outln {
    () => {
        $crate::line::to_stdout("\n")
    };
    ($($arg:tt)*) => {
        $crate::line::to_stdout(&format!("{}\n", format_args!($($arg)*)))
    };
}
pub(crate) use outln;

/// Write `text` to stdout; an error (a closed pipe) is ignored.
pub fn to_stdout(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes());
    let _ = out.flush();
    wrote_stdout(text);
}

/// Write `text` to stderr; an error (a closed pipe) is ignored.
pub fn to_stderr(text: &str) {
    let mut err = std::io::stderr().lock();
    let _ = err.write_all(text.as_bytes());
    let _ = err.flush();
}

/// Stderr for the log subscriber: each log line first makes room.
pub struct LogWriter;

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for LogWriter {
    type Writer = std::io::Stderr;

    fn make_writer(&'a self) -> Self::Writer {
        before_stderr();
        std::io::stderr()
    }
}

/// Columns to fit a listing or a status line in: `$COLUMNS`, else 100.
pub fn terminal_width() -> usize {
    std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.trim().parse::<usize>().ok())
        .filter(|c| *c >= 40)
        .unwrap_or(100)
}

/// `text` in at most `room` characters: whole when it fits, else cut at
/// the last word boundary that leaves room for an ellipsis (mid-word only
/// when its first word alone is too long).
pub fn fit(text: &str, room: usize) -> String {
    if text.chars().count() <= room {
        return text.to_owned();
    }
    let keep = room.saturating_sub(1);
    let head: String = text.chars().take(keep).collect();
    let next_is_space = text.chars().nth(keep).is_some_and(char::is_whitespace);
    let cut = if next_is_space {
        head.trim_end()
    } else {
        match head.rfind(char::is_whitespace) {
            Some(at) if !head[..at].trim_end().is_empty() => head[..at].trim_end(),
            _ => head.as_str(),
        }
    };
    let cut = cut.trim_end_matches([',', ';', ':', '.', '-', '(']);
    format!("{cut}…")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fits_at_a_word_boundary() {
        assert_eq!(fit("short", 10), "short");
        assert_eq!(
            fit("Edit an existing file with one", 20),
            "Edit an existing…"
        );
        assert_eq!(fit("Read a file, then more", 13), "Read a file…");
        assert_eq!(fit("abcdefghijkl", 5), "abcd…");
        assert!(fit("Edit an existing file", 12).chars().count() <= 12);
    }

    #[test]
    fn tracks_whether_stdout_is_mid_line() {
        wrote_stdout("partial");
        assert!(STDOUT_MID_LINE.load(Ordering::SeqCst));
        wrote_stdout("");
        assert!(
            STDOUT_MID_LINE.load(Ordering::SeqCst),
            "nothing written, nothing changes"
        );
        wrote_stdout("end\n");
        assert!(!STDOUT_MID_LINE.load(Ordering::SeqCst));
    }
}
