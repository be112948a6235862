//! One terminal, two streams: the model's text streams to stdout a piece at
//! a time (often mid-line), while notices, log lines, questions and the
//! spinner go to stderr. Anything written to stderr first ends the line
//! stdout left open and clears the spinner, so a notice never lands in the
//! middle of the model's sentence.

use std::io::{IsTerminal, Write};
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

/// Record that the spinner was drawn (or erased) on stderr.
pub fn spinner_drawn(shown: bool) {
    SPINNER_SHOWN.store(shown, Ordering::SeqCst);
}

/// Make room for a line on stderr: erase the spinner and, when stdout is a
/// terminal left mid-line, end that line. (Redirected stdout is left as
/// the model wrote it.)
pub fn before_stderr() {
    if SPINNER_SHOWN.swap(false, Ordering::SeqCst) {
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r\x1b[2K");
        let _ = err.flush();
    }
    if STDOUT_MID_LINE.swap(false, Ordering::SeqCst) && std::io::stdout().is_terminal() {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out);
        let _ = out.flush();
    }
}

/// `eprintln!` that first makes room (see [`before_stderr`]).
macro_rules! notice {
    ($($arg:tt)*) => {{
        $crate::line::before_stderr();
        eprintln!($($arg)*);
    }};
}
pub(crate) use notice;

/// Stderr for the log subscriber: each log line first makes room.
pub struct LogWriter;

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for LogWriter {
    type Writer = std::io::Stderr;

    fn make_writer(&'a self) -> Self::Writer {
        before_stderr();
        std::io::stderr()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
