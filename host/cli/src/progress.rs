//! Progress while a component compiles: a JavaScript or Python component
//! takes tens of seconds the first time (minutes with a debug build of
//! roost), and silence looks like a hang. On a terminal a spinner counts
//! the seconds; elsewhere a line says when it starts, another every
//! [`STILL_EVERY`] while it runs, and one when it ends.

use std::collections::HashMap;
use std::io::IsTerminal;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use super::line::notice;
use super::sanitize::visible_line;
use roost_sandbox::plugins::CompileWatch;

/// How often a log (not a terminal) is told a compile is still running.
const STILL_EVERY: Duration = Duration::from_secs(30);
/// How often the terminal's line is redrawn.
const TICK: Duration = Duration::from_millis(250);
/// The spinner's frames.
const FRAMES: &[char] = &['|', '/', '-', '\\'];

/// One compile under way.
struct Running {
    since: Instant,
    /// Set (under its lock) when the compile ends: the ticker never
    /// writes after that, and wakes at once.
    done: Arc<(Mutex<bool>, Condvar)>,
}

/// Shows compiles on stderr.
#[derive(Default)]
pub struct CompileProgress {
    running: Mutex<HashMap<String, Running>>,
}

impl CompileProgress {
    /// Shared, for an engine builder.
    pub fn shared() -> Arc<dyn CompileWatch> {
        Arc::new(Self::default())
    }
}

/// `12.3 MB` for `bytes`.
fn size(bytes: usize) -> String {
    format!("{}.{} MB", bytes / 1_000_000, bytes % 1_000_000 / 100_000)
}

/// What a compile of `name` (`bytes` long) is, in a line: honest about
/// what it costs and that it happens once.
fn describe(name: &str, bytes: usize) -> String {
    let build = if cfg!(debug_assertions) {
        // A debug build runs wasmtime's compiler pipeline unoptimized.
        "; this debug build of roost compiles more slowly than a release one"
    } else {
        ""
    };
    format!(
        "compiling {name} ({}) for this machine: once, later runs load it from the cache{build}",
        size(bytes)
    )
}

/// The terminal's line: spinner frame `frame`, `what`, the seconds since
/// `since`.
fn draw(what: &str, frame: usize, since: Instant) {
    let secs = since.elapsed().as_secs();
    let spin = FRAMES.get(frame % FRAMES.len()).copied().unwrap_or('-');
    super::line::to_stderr(&format!("\r\x1b[2K{spin} {what} … {secs} s"));
    super::line::spinner_drawn(true);
}

/// Wait on `done` up to `wait`; whether the compile ended.
fn ended(done: &(Mutex<bool>, Condvar), wait: Duration) -> bool {
    let Ok(guard) = done.0.lock() else {
        return true;
    };
    match done
        .1
        .wait_timeout_while(guard, wait, |finished| !*finished)
    {
        Ok((finished, _)) => *finished,
        Err(_) => true,
    }
}

impl CompileWatch for CompileProgress {
    fn started(&self, component: &str, bytes: usize) {
        let name = visible_line(component).into_owned();
        let what = describe(&name, bytes);
        let done = Arc::new((Mutex::new(false), Condvar::new()));
        let since = Instant::now();
        let ticker = Arc::clone(&done);
        if std::io::stderr().is_terminal() {
            // The first frame now, before the compile starts (on a line
            // of its own); the rest from a ticker.
            super::line::before_stderr();
            draw(&what, 0, since);
            std::thread::spawn(move || {
                let mut frame = 1usize;
                while !ended(&ticker, TICK) {
                    // Drawn under the lock `finished` takes: never after it.
                    let Ok(finished) = ticker.0.lock() else { break };
                    if *finished {
                        break;
                    }
                    draw(&what, frame, since);
                    frame = frame.wrapping_add(1);
                }
            });
        } else {
            notice!("{what} …");
            std::thread::spawn(move || {
                while !ended(&ticker, STILL_EVERY) {
                    // Checked under the lock: nothing after the end line.
                    let Ok(finished) = ticker.0.lock() else { break };
                    if *finished {
                        break;
                    }
                    notice!(
                        "still compiling {name}: {} s so far",
                        since.elapsed().as_secs()
                    );
                }
            });
        }
        if let Ok(mut r) = self.running.lock() {
            r.insert(component.to_owned(), Running { since, done });
        }
    }

    fn finished(&self, component: &str, ok: bool) {
        let Some(run) = self
            .running
            .lock()
            .ok()
            .and_then(|mut r| r.remove(component))
        else {
            return;
        };
        if let Ok(mut d) = run.done.0.lock() {
            *d = true;
            run.done.1.notify_all();
        }
        let secs = run.since.elapsed().as_secs();
        let name = visible_line(component);
        if ok {
            notice!("compiled {name} in {secs} s");
        } else {
            notice!("compiling {name} failed after {secs} s");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_says_what_it_costs() {
        let line = describe("hello-py", 38_250_000);
        assert!(line.starts_with("compiling hello-py (38.2 MB) for this machine: once"));
        assert_eq!(line.contains("debug build"), cfg!(debug_assertions));
    }

    #[test]
    fn a_finished_compile_ends_the_wait_at_once() {
        let done = (Mutex::new(true), Condvar::new());
        assert!(ended(&done, Duration::from_secs(60)));
        let running = (Mutex::new(false), Condvar::new());
        assert!(!ended(&running, Duration::from_millis(1)));
    }
}
