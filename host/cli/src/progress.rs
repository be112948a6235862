//! Progress while a component compiles: a JavaScript or Python component
//! takes up to a minute the first time, and silence looks like a hang. On
//! a terminal a line counts the seconds; elsewhere a line says when it
//! starts and when it ends.

use std::collections::HashMap;
use std::io::IsTerminal;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::line::notice;
use super::sanitize::visible_line;
use roost_sandbox::plugins::CompileWatch;

/// One compile under way.
struct Running {
    since: Instant,
    /// Set (under its lock) when the compile ends: the ticker never
    /// writes after that.
    done: Arc<Mutex<bool>>,
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

impl CompileWatch for CompileProgress {
    fn started(&self, component: &str, bytes: usize) {
        let name = visible_line(component).into_owned();
        let what = format!(
            "compiling {name} ({}; once — later runs load it from the cache)",
            size(bytes)
        );
        let done = Arc::new(Mutex::new(false));
        if std::io::stderr().is_terminal() {
            let (done, what) = (Arc::clone(&done), what.clone());
            let since = Instant::now();
            std::thread::spawn(move || {
                loop {
                    {
                        let finished = done.lock().map_or(true, |d| *d);
                        if finished {
                            break;
                        }
                        let secs = since.elapsed().as_secs();
                        super::line::to_stderr(&format!("\r\x1b[2K{what}… {secs} s"));
                        super::line::spinner_drawn(true);
                    }
                    std::thread::sleep(Duration::from_millis(500));
                }
            });
        } else {
            notice!("{what}…");
        }
        if let Ok(mut r) = self.running.lock() {
            r.insert(
                component.to_owned(),
                Running {
                    since: Instant::now(),
                    done,
                },
            );
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
        if let Ok(mut d) = run.done.lock() {
            *d = true;
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
