//! How a diff and a call's arguments are shown on a terminal: made
//! visible (no control character of theirs reaches it) and, for a diff,
//! coloured. Shared by the event display and the questions put to a person.

use super::sanitize::{visible, visible_line};

/// Whether what is printed is coloured.
pub(crate) struct Style {
    /// Colour on.
    pub(crate) color: bool,
}

impl Style {
    /// `s` in colour `code`. The control characters of `s` are made visible
    /// first (a no-op for text already passed through [`visible`] or
    /// [`visible_line`]), so the only escape codes written are Roost's own.
    pub(crate) fn paint(&self, code: &str, s: &str) -> String {
        let s = visible(s);
        if self.color {
            format!("\x1b[{code}m{s}\x1b[0m")
        } else {
            s.into_owned()
        }
    }
}

/// The lines of a unified diff with control characters made visible and,
/// when `color`, additions green, removals red and hunk headers cyan.
pub fn painted_diff(diff: &str, color: bool) -> Vec<String> {
    let style = Style { color };
    diff.lines()
        .map(|l| {
            let l = visible_line(l);
            if l.starts_with('+') && !l.starts_with("+++") {
                style.paint("32", &l)
            } else if l.starts_with('-') && !l.starts_with("---") {
                style.paint("31", &l)
            } else if l.starts_with("@@") {
                style.paint("36", &l)
            } else {
                l.into_owned()
            }
        })
        .collect()
}

/// One line of arguments, cut for display. JSON escapes C0 controls in
/// strings but not DEL, C1 or bidi controls: those are made visible here.
pub fn short_args(args: &serde_json::Value) -> String {
    let s = args.to_string();
    let s = if s.chars().count() > 120 {
        format!("{}…", s.chars().take(120).collect::<String>())
    } else {
        s
    };
    visible_line(&s).into_owned()
}
