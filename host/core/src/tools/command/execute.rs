//! `execute_command(command, cwd?, timeout_s?)`: a native command in the
//! OS sandbox (see [`crate::commands`]). Its policy decides what the
//! approval gate needs: a line a rule denies never runs, a line every
//! rule allows is approved like any `command` call, any other line needs
//! a person whatever the policy. Files its redirections write must lie in
//! the write scope. It writes only the call's write roots (the intent's,
//! without intents the workspace), which the write session leases and
//! guards like any mutating call; the files it changed are listed with
//! their hashes, in its result and in the trace.

use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};

use crate::call::change_set::TreeChanges;
use crate::commands::proxy::{Attempt, Proxy};
use crate::commands::{
    self, Capture, Captured, CommandHost, Confinement, Ended, Held, Plan, Profile, Verdict,
};
use crate::events::TaskEvent;
use crate::tools::HOST;
use crate::tools::executor::{Invocation, Needs, Outcome, ToolExecutor};
use crate::turn::{RunState, TaskError};
use roost_protocol::{ErrorCode, ToolGroup, ToolSpec};
use roost_sandbox::capability::dirfd::DirFd;
use roost_sandbox::capability::{RelPath, TreeChange, Workspace};

/// Name of the tool that runs a command.
pub const NAME: &str = "execute_command";

/// Most changed files named in a result.
const MAX_NAMED: usize = 200;

/// The `execute_command` tool.
pub(super) struct ExecuteCommand {
    spec: ToolSpec,
    host: Arc<CommandHost>,
}

/// The call's arguments.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    command: String,
    #[serde(default)]
    cwd: Option<String>,
    #[serde(default)]
    timeout_s: Option<u64>,
}

impl Args {
    fn parse(v: &Value) -> Result<Self, String> {
        let a: Self = serde_json::from_value(v.clone()).map_err(|e| e.to_string())?;
        if a.command.trim().is_empty() {
            return Err("`command` is empty".into());
        }
        if a.command.contains('\0') {
            return Err("`command` contains a NUL byte".into());
        }
        Ok(a)
    }
}

impl ExecuteCommand {
    pub(super) fn new(host: Arc<CommandHost>) -> Self {
        Self {
            spec: ToolSpec {
                name: NAME.into(),
                description: "Run a shell command (bash) in the workspace, in a sandbox: the file system is \
                    read-only except where you may write, /tmp is private, the network is off unless the \
                    command profile allows it. You get the exit code, the output (its head and tail when \
                    long: read_command_output pages the whole) and the files the command changed. \
                    Prefer a command that finishes on its own (no watch modes, no servers left running)."
                    .into(),
                args_schema: json!({
                    "type": "object",
                    "properties": {
                        "command": {"type": "string", "minLength": 1, "description": "The command line."},
                        "cwd": {"type": "string", "description": "Workspace-relative directory to run it in (default: the workspace)."},
                        "timeout_s": {"type": "integer", "minimum": 1, "description": "Seconds before it is killed (at most the host's limit)."}
                    },
                    "required": ["command"],
                    "additionalProperties": false
                }),
                group: ToolGroup::Command,
                destructive: true,
                path_args: vec!["cwd".into()],
                annotations: Default::default(),
            },
            host,
        }
    }

    /// The profile this task's commands run under.
    fn profile(&self, state: &RunState) -> Result<&Profile, commands::ProfileError> {
        self.host.profiles.get(
            state
                .command_profile()
                .unwrap_or(&self.host.default_profile),
        )
    }

    /// Why a file the line's redirections write may not be written, if
    /// it may not: outside the workspace (but the private `/tmp` and
    /// `/dev/null`), outside the scope, or under a profile that writes
    /// nothing.
    fn write_refused(&self, state: &RunState, cwd: &str, path: &str) -> Option<String> {
        // The streams, bash's sockets (the network is the sandbox's to
        // refuse), and the private /tmp.
        if matches!(path, "/dev/null" | "/dev/stdout" | "/dev/stderr")
            || ["/dev/fd/", "/dev/tcp/", "/dev/udp/", "/tmp/"]
                .iter()
                .any(|p| path.starts_with(p))
        {
            return None;
        }
        if path.starts_with('/') || path.starts_with('~') {
            return Some(format!(
                "the command writes `{path}`, outside the workspace (only its private /tmp is writable there); \
                 give workspace-relative paths"
            ));
        }
        let Some(rel) = lexical_join(cwd, path) else {
            return Some(format!(
                "the command writes `{path}`, which leaves the workspace"
            ));
        };
        if let Ok(p) = self.profile(state)
            && !p.writes_scope
        {
            return Some(format!(
                "the command writes `{rel}`, but its profile `{}` writes nothing",
                p.name
            ));
        }
        if let Some(b) = &state.bound
            && !b.allows(&rel)
        {
            return Some(format!(
                "the command writes `{rel}`, outside the scope of the task that started this one"
            ));
        }
        if let Some((intent, scope)) = &state.intent
            && !scope.allows(&rel)
        {
            return Some(format!(
                "the command writes `{rel}`, outside the owned scope of {}",
                intent.id
            ));
        }
        None
    }
}

/// `cwd/path` normalised without touching the disk; `None` when it climbs
/// out of the workspace.
fn lexical_join(cwd: &str, path: &str) -> Option<String> {
    let mut parts: Vec<&str> = Vec::new();
    for p in cwd.split('/').chain(path.split('/')) {
        match p {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            other => parts.push(other),
        }
    }
    Some(if parts.is_empty() {
        ".".to_owned()
    } else {
        parts.join("/")
    })
}

#[async_trait::async_trait]
impl ToolExecutor for ExecuteCommand {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn kind(&self) -> crate::tools::ToolKind {
        crate::tools::ToolKind::Command
    }

    fn provider(&self) -> &str {
        HOST
    }

    /// A line the policy proves read-only, or one run under a profile
    /// that writes nothing, runs with the workspace mounted read-only
    /// (its write roots empty): it needs no lease, guard or checkpoint.
    /// Without an OS sandbox nothing holds a command to that, so every
    /// command mutates.
    fn mutates(&self, state: &RunState, args: &Value) -> bool {
        if self.host.confinement == Confinement::None {
            return true;
        }
        if self.profile(state).is_ok_and(|p| !p.writes_scope) {
            return false;
        }
        match Args::parse(args) {
            Ok(a) => !self.host.judge(&a.command).read_only,
            Err(_) => true,
        }
    }

    fn needs(&self, state: &RunState, args: &Value) -> Needs {
        let a = match Args::parse(args) {
            Ok(a) => a,
            Err(e) => return Needs::Refused(Box::new(Outcome::mistake(e))),
        };
        let judged = self.host.judge(&a.command);
        if let Verdict::Denied { command, rule } = &judged.verdict {
            return Needs::Refused(Box::new(Outcome::error(
                ErrorCode::PermissionDenied,
                format!(
                    "`{command}` is denied by the rule `{rule}` (denied_commands): this command never runs; \
                     do the work another way or ask the user"
                ),
            )));
        }
        let cwd = a.cwd.as_deref().unwrap_or(".");
        for w in &judged.written {
            if let Some(why) = self.write_refused(state, cwd, w) {
                return Needs::Refused(Box::new(Outcome::error(ErrorCode::PermissionDenied, why)));
            }
        }
        match judged.verdict {
            Verdict::Allowed | Verdict::Denied { .. } => Needs::Approval(ToolGroup::Command),
            Verdict::Unlisted { commands } => Needs::Person(
                ToolGroup::Command,
                format!("not in allowed_commands: {}", commands.join("; ")),
            ),
            Verdict::Unjudged { reason } => Needs::Person(
                ToolGroup::Command,
                format!("the command rules cannot judge this line: {reason}"),
            ),
        }
    }

    async fn run(&self, call: Invocation<'_>) -> Result<Outcome, TaskError> {
        let ws = &call.ctx.ws;
        // Each step goes on, or ends the call with the outcome it gives.
        let steps = async {
            let a = Args::parse(call.args).map_err(|e| Box::new(Outcome::mistake(e)))?;
            self.check_host()?;
            let setting = self.setting(&call, &a)?;
            let opened = WriteRoots::open(ws, &setting, call.write_roots)?;
            let capture = self.start_capture(&call)?;
            let limit = self.time_limit(&a);
            let net = self.network(&setting.profile);
            let cmd = self.sandboxed_command(&a.command, ws, &setting, &opened, &net, limit)?;
            let (ended, captured, attempts) = self
                .run_sandboxed(&call, cmd, limit, capture, net.proxy)
                .await?;
            let report = Report {
                line: &a.command,
                setting: &setting,
                ended,
                limit,
                captured,
                attempts,
                changes: call.changes.tree(ws),
            };
            Ok::<_, Box<Outcome>>(report.into_outcome(self.host.warning().is_some()))
        };
        Ok(steps.await.unwrap_or_else(|refused| *refused))
    }
}

/// The profile a command runs under and the directory it runs in.
struct Setting {
    profile: Profile,
    /// The working directory, workspace-relative.
    cwd_rel: RelPath,
    /// The workspace on the host.
    root: PathBuf,
    /// The working directory on the host.
    cwd: PathBuf,
}

/// The write roots a command may change, opened by handle: bubblewrap
/// binds the directories opened here, never a path that could be
/// swapped meanwhile.
struct WriteRoots {
    /// The handles of the call's write roots (none under a profile that
    /// writes nothing).
    dirs: Vec<DirFd>,
    /// Every writable directory on the host: the roots, then the
    /// profile's own.
    writable: Vec<PathBuf>,
}

impl WriteRoots {
    /// Open the call's write roots (making those the scope names but that
    /// do not exist yet, so the command can write there).
    fn open(ws: &Workspace, setting: &Setting, write_roots: &[PathBuf]) -> Step<Self> {
        let mut dirs = Vec::new();
        let mut writable = Vec::new();
        if setting.profile.writes_scope {
            for r in write_roots {
                let rel = RelPath::parse(&r.to_string_lossy()).map_err(internal)?;
                dirs.push(ws.ensure_dir_fd(&rel).map_err(internal)?);
                writable.push(setting.root.join(rel.to_path()));
            }
        }
        writable.extend(setting.profile.write.iter().cloned());
        Ok(Self { dirs, writable })
    }

    /// The directories the sandbox binds by handle: the workspace
    /// read-only, each write root writable.
    fn held<'a>(&'a self, ws: &'a Workspace, root: &'a Path) -> Vec<Held<'a>> {
        let mut held = vec![Held {
            fd: ws.root().as_fd(),
            at: root,
            writable: false,
        }];
        held.extend(self.dirs.iter().zip(&self.writable).map(|(d, at)| Held {
            fd: d.as_fd(),
            at,
            writable: true,
        }));
        held
    }
}

/// The command's environment, and the proxy its network goes through
/// (with the bridge program that serves it inside the sandbox).
struct Network {
    env: Vec<(String, String)>,
    proxy: Option<(Proxy, PathBuf)>,
}

/// A step's value, or the outcome that ends the call.
type Step<T> = Result<T, Box<Outcome>>;

/// An internal failure that ends the call.
fn internal(e: impl std::fmt::Display) -> Box<Outcome> {
    Box::new(Outcome::error(ErrorCode::Internal, e.to_string()))
}

impl ExecuteCommand {
    /// Refuse the call when this host cannot run commands at all.
    fn check_host(&self) -> Step<()> {
        self.host.confinement.check().map_err(|why| {
            Box::new(Outcome::error(
                ErrorCode::PermissionDenied,
                format!("commands cannot run on this host: {why}"),
            ))
        })
    }

    /// Resolve the task's profile and the command's working directory.
    fn setting(&self, call: &Invocation<'_>, a: &Args) -> Step<Setting> {
        let profile = self.profile(call.state).map_err(internal)?.clone();
        let ws = &call.ctx.ws;
        let cwd_rel = ws
            .normalize(a.cwd.as_deref().unwrap_or("."))
            .map_err(|e| Box::new(Outcome::mistake(format!("`cwd`: {e}"))))?;
        if ws.dir(&cwd_rel).is_err() {
            return Err(Box::new(Outcome::mistake(format!(
                "`cwd`: `{}` is not a directory of the workspace",
                cwd_rel.as_string()
            ))));
        }
        let root = ws.host_path().to_path_buf();
        let cwd = root.join(cwd_rel.to_path());
        Ok(Setting {
            profile,
            cwd_rel,
            root,
            cwd,
        })
    }

    /// Start keeping the command's output, for the result and for
    /// `read_command_output`.
    fn start_capture(&self, call: &Invocation<'_>) -> Step<Capture> {
        self.host
            .outputs
            .start(&call.ctx.task.id, call.call_id, self.host.limits)
            .map_err(internal)
    }

    /// The time the command may run: the one asked, at most the host's.
    fn time_limit(&self, a: &Args) -> Duration {
        a.timeout_s
            .map(Duration::from_secs)
            .map_or(self.host.timeout, |t| t.min(self.host.timeout))
    }

    /// The environment under `profile`, and the profile's origins
    /// through the host's filtering proxy (the sandbox has no other way
    /// out).
    fn network(&self, profile: &Profile) -> Network {
        let mut env = self.host.environment(profile);
        // The command continues the call's trace (W3C's variable for a
        // process's parent context).
        if let Some(parent) = crate::telemetry::spans::traceparent() {
            env.push(("TRACEPARENT".to_owned(), parent));
        }
        let confined = self.host.confinement != Confinement::None;
        let proxy = match (&self.host.bridge, profile.network.is_empty() || !confined) {
            (Some(bridge), false) => {
                match Proxy::start(&std::env::temp_dir(), profile.network.clone()) {
                    Ok(p) => Some((p, bridge.clone())),
                    Err(e) => {
                        tracing::warn!("the command's network proxy cannot start: {e}");
                        None
                    }
                }
            }
            _ => None,
        };
        if proxy.is_some() {
            let url = format!("http://127.0.0.1:{}", commands::sandbox::PROXY_PORT);
            for k in [
                "HTTP_PROXY",
                "HTTPS_PROXY",
                "http_proxy",
                "https_proxy",
                "ALL_PROXY",
                "all_proxy",
            ] {
                env.push((k.to_owned(), url.clone()));
            }
            env.push(("NO_PROXY".to_owned(), String::new()));
            env.push(("no_proxy".to_owned(), String::new()));
        }
        Network { env, proxy }
    }

    /// Plan the sandbox the line runs in and make its command.
    fn sandboxed_command(
        &self,
        line: &str,
        ws: &Workspace,
        setting: &Setting,
        opened: &WriteRoots,
        net: &Network,
        limit: Duration,
    ) -> Step<tokio::process::Command> {
        let held = opened.held(ws, &setting.root);
        let hidden = self.host.hidden_for(&setting.root);
        let plan = Plan {
            visible: &[],
            line,
            cwd: &setting.cwd,
            workspace: &setting.root,
            writable: &opened.writable,
            profile: &setting.profile,
            hidden: &hidden,
            env: &net.env,
            proxy: net.proxy.as_ref().map(|(p, b)| (p.socket(), b.as_path())),
            held: &held,
            binds: &[],
        };
        self.host
            .confinement
            .command(&plan, limit.as_secs())
            .map_err(|e| {
                Box::new(Outcome::error(
                    ErrorCode::PermissionDenied,
                    format!("commands cannot run on this host: {e}"),
                ))
            })
    }

    /// Run the command to its end, streaming its output live; then stop
    /// the proxy and keep what the command printed and reached for.
    async fn run_sandboxed(
        &self,
        call: &Invocation<'_>,
        cmd: tokio::process::Command,
        limit: Duration,
        mut capture: Capture,
        proxy: Option<(Proxy, PathBuf)>,
    ) -> Step<(Ended, Captured, Vec<Attempt>)> {
        let events = call.ctx.events;
        let call_id = call.call_id.to_owned();
        let ended = commands::run(
            cmd,
            limit,
            &mut capture,
            |chunk| {
                let id = call_id.clone();
                async move {
                    events.publish(TaskEvent::CommandOutput { id, chunk }).await;
                }
            },
            call.ctx.control.cancelled(),
        )
        .await;
        let captured = capture.finish();
        let attempts = proxy.map(|(p, _)| p.finish()).unwrap_or_default();
        let ended = ended.map_err(|e| {
            Box::new(Outcome::error(
                ErrorCode::Internal,
                format!("the command could not be started: {e}"),
            ))
        })?;
        Ok((ended, captured, attempts))
    }
}

/// What a finished command did, for the model and for the trace.
struct Report<'a> {
    line: &'a str,
    setting: &'a Setting,
    ended: Ended,
    limit: Duration,
    captured: Captured,
    attempts: Vec<Attempt>,
    /// What changed under its write roots.
    changes: &'a TreeChanges,
}

impl Report<'_> {
    /// The call's outcome: the result text (an error when the command was
    /// killed) and the changed files with their trace line.
    fn into_outcome(self, unconfined: bool) -> Outcome {
        crate::telemetry::spans::note(|| {
            let mut attrs = vec![
                opentelemetry::KeyValue::new(
                    "roost.command.profile",
                    self.setting.profile.name.clone(),
                ),
                opentelemetry::KeyValue::new("roost.command.ended", self.ended.to_string()),
            ];
            if let Ended::Exited(code) = self.ended {
                attrs.push(opentelemetry::KeyValue::new(
                    "roost.command.exit_code",
                    i64::from(code),
                ));
            }
            attrs
        });
        let text = self.text();
        let detail = self.detail(unconfined);
        let mut outcome = match self.ended {
            Ended::TimedOut => Outcome::error(
                ErrorCode::LimitExceeded,
                format!(
                    "{text}The command ran past its {} s limit and was killed (with everything it started).",
                    self.limit.as_secs()
                ),
            ),
            Ended::Cancelled => Outcome::error(
                ErrorCode::Internal,
                format!("{text}The task was stopped; the command was killed."),
            ),
            Ended::Exited(_) | Ended::Signalled(_) => Outcome::ok(text),
        };
        outcome.detail = Some(detail);
        outcome
    }

    /// The result text: the line, its output, how it ended, the files it
    /// changed and the origins it was refused.
    fn text(&self) -> String {
        let (ended, captured) = (self.ended, &self.captured);
        let mut text = format!("$ {}\n", self.line);
        if captured.text.is_empty() {
            text.push_str("(no output)\n");
        } else {
            text.push_str(&captured.text);
            if !captured.text.ends_with('\n') {
                text.push('\n');
            }
        }
        text.push_str(&format!(
            "[{ended}; in {}; profile {}; output {} bytes, id {}]\n",
            self.setting.cwd_rel.as_string(),
            self.setting.profile.name,
            captured.total,
            captured.id
        ));
        self.list_changes(&mut text);
        let refused: Vec<&str> = self
            .attempts
            .iter()
            .filter(|a| !a.allowed)
            .map(|a| a.origin.as_str())
            .collect();
        if !refused.is_empty() {
            text.push_str(&format!(
                "Network refused (not in profile `{}`): {}\n",
                self.setting.profile.name,
                refused.join(", ")
            ));
        }
        if self.changes.truncated {
            text.push_str("(more files than the host lists: changes past them are not shown)\n");
        }
        text
    }

    /// Name the changed files (the first [`MAX_NAMED`]) with their hashes.
    fn list_changes(&self, text: &mut String) {
        let changes = &self.changes.changes;
        if changes.is_empty() {
            return;
        }
        text.push_str(&format!("Files changed ({}):\n", changes.len()));
        for ((path, change), f) in changes.iter().zip(&self.changes.files).take(MAX_NAMED) {
            let word = match change {
                TreeChange::Created => "created",
                TreeChange::Modified => "modified",
                TreeChange::Removed => "removed",
            };
            match &f.sha256_after {
                Some(h) => text.push_str(&format!(
                    "  {word} {path} sha256:{}\n",
                    &h[..16.min(h.len())]
                )),
                None => text.push_str(&format!("  {word} {path}\n")),
            }
        }
        if changes.len() > MAX_NAMED {
            text.push_str(&format!("  … and {} more\n", changes.len() - MAX_NAMED));
        }
    }

    /// The trace's line: what ran where, how it ended, what it changed
    /// and reached for.
    fn detail(&self, unconfined: bool) -> String {
        let mut detail = format!(
            "command `{}` in {} under profile {}{}: {}; {} file(s) changed",
            self.line,
            self.setting.cwd_rel.as_string(),
            self.setting.profile.name,
            if unconfined { " (unconfined)" } else { "" },
            self.ended,
            self.changes.changes.len()
        );
        if !self.attempts.is_empty() {
            detail.push_str("; network: ");
            detail.push_str(
                &self
                    .attempts
                    .iter()
                    .map(|a| {
                        format!(
                            "{} {}",
                            if a.allowed { "allowed" } else { "refused" },
                            a.origin
                        )
                    })
                    .collect::<Vec<_>>()
                    .join(", "),
            );
        }
        detail
    }
}

#[cfg(test)]
mod tests {
    use super::lexical_join;

    #[test]
    fn paths_are_joined_without_the_disk() {
        assert_eq!(lexical_join(".", "out.txt").as_deref(), Some("out.txt"));
        assert_eq!(lexical_join("src", "../a/b").as_deref(), Some("a/b"));
        assert_eq!(lexical_join("src", "./x/../y").as_deref(), Some("src/y"));
        assert_eq!(lexical_join(".", "../up"), None);
        assert_eq!(lexical_join("a", "../../up"), None);
    }
}
