//! Driving one run of a task on the terminal: its header, its events and
//! questions in order, and Ctrl-C or SIGTERM turned into a clean cancel
//! (the task stops between steps, ends `aborted`, and resumes). Shared by
//! `roost run`, `roost resume` and the interactive session.

use super::line::{notice, outln};
use std::sync::Arc;

use anyhow::Context;
use tokio::sync::mpsc;

use super::interact::Terminal;
use super::render::{self, Asker, Format};
use super::sanitize::visible_line;
use roost_core::engine::{Engine, describe_endpoint};
use roost_core::session::{Owner, Session};
use roost_core::task::TaskOutcome;

/// How a driven run ended.
#[derive(Debug)]
pub enum Ended {
    /// The run's outcome, and the signal that cancelled it, if one did.
    Outcome(TaskOutcome, Option<Signal>),
    /// A second interrupt: the person left while the cancel finished the
    /// current call (the task is interrupted and resumes).
    Left,
}

/// What stopped a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    /// Ctrl-C (SIGINT, or Ctrl-C at a question in a session).
    Interrupt,
    /// SIGTERM.
    Terminate,
}

/// One run of a task, as the terminal shows it.
pub struct Drive<'a> {
    /// The engine it runs in.
    pub engine: &'a Arc<Engine>,
    /// Its id (created or prepared, not started).
    pub id: &'a str,
    /// Events as NDJSON.
    pub json: bool,
    /// Who answers its questions.
    pub terminal: Terminal,
    /// Interrupts besides SIGINT (Ctrl-C typed at a session's question,
    /// where the line editor owns the keyboard).
    pub interrupts: Option<&'a mut mpsc::UnboundedReceiver<()>>,
}

impl Drive<'_> {
    /// Print the header, start the task and follow it to its outcome.
    pub async fn run(self) -> anyhow::Result<Ended> {
        let Drive {
            engine,
            id,
            json,
            terminal,
            interrupts,
        } = self;
        let format = if json { Format::Json } else { Format::Text };
        let session = Session::new(engine, Owner::Host);
        if !json {
            header(&session, id).await;
        }
        let events = session.live(id).await?;
        let (stop, stopped) = tokio::sync::oneshot::channel();
        let display = session.display();
        let asker = Asker {
            engine: Arc::clone(engine),
            responder: Arc::new(terminal),
        };
        let renderer = tokio::spawn(render::render(
            events.subscribe(),
            format,
            stopped,
            Some(asker),
            display,
        ));
        // Both handlers are installed before the task starts, so a signal
        // that comes early is not missed.
        use tokio::signal::unix::{SignalKind, signal};
        let mut interrupt = signal(SignalKind::interrupt()).context("cannot watch for Ctrl-C")?;
        let mut terminate = signal(SignalKind::terminate()).context("cannot watch for SIGTERM")?;
        let mut typed = interrupts;
        let mut signalled = None;
        session.start(id).await?;
        let outcome = loop {
            let typed_interrupt = async {
                match typed.as_mut() {
                    Some(rx) => rx.recv().await,
                    None => std::future::pending().await,
                }
            };
            let got = tokio::select! {
                o = session.wait(id) => break o?,
                _ = interrupt.recv() => Signal::Interrupt,
                Some(()) = typed_interrupt => Signal::Interrupt,
                _ = terminate.recv(), if signalled.is_none() => Signal::Terminate,
            };
            if got == Signal::Interrupt && signalled.is_some() {
                // A second Ctrl-C while the cancel finishes the current
                // call: leave now. The task stays interrupted (its history
                // is durable) and `roost resume` continues it.
                notice!(
                    "leaving now; task {id} is interrupted and `roost resume {id}` continues it"
                );
                let _ = stop.send(());
                return Ok(Ended::Left);
            }
            if signalled.is_none() {
                signalled = Some(got);
                if got == Signal::Interrupt {
                    notice!("cancelling after the current step (Ctrl-C again leaves at once)…");
                    session.cancel(id, "interrupted (Ctrl-C)").await?;
                } else {
                    session.cancel(id, "interrupted (SIGTERM)").await?;
                }
            }
        };
        let _ = stop.send(());
        let _ = tokio::time::timeout(std::time::Duration::from_secs(2), renderer).await;
        Ok(Ended::Outcome(outcome, signalled))
    }
}

/// The task's header: id, mode, endpoint and workspace, before anything
/// it does.
async fn header(session: &Session<'_>, id: &str) {
    let Ok(listed) = session.task(id).await else {
        return;
    };
    let t = listed.task;
    let endpoint = endpoint_text(&t.provider, &t.base_url, &t.model);
    let line = format!(
        "task {} · mode {} · {} · {}",
        visible_line(&t.id),
        visible_line(&t.mode),
        visible_line(&endpoint),
        visible_line(&t.workspace)
    );
    if std::io::IsTerminal::is_terminal(&std::io::stdout()) {
        outln!("\x1b[2m{line}\x1b[0m");
    } else {
        outln!("{line}");
    }
}

/// Which model the task talks to, for its header: a scripted transcript
/// calls none (its `model` is only a label, and it has no URL).
fn endpoint_text(provider: &str, base_url: &str, model: &str) -> String {
    if provider == "scripted" {
        "a scripted transcript (no model is called)".to_owned()
    } else if base_url.is_empty() {
        format!("{provider} {model}")
    } else {
        describe_endpoint(provider, base_url, model)
    }
}
