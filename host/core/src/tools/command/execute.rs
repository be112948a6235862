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
use std::path::PathBuf;
use std::sync::Arc;

use serde::Deserialize;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::commands::proxy::Proxy;
use crate::commands::{self, CommandHost, Confinement, Ended, Held, Plan, Profile, Verdict};
use crate::events::TaskEvent;
use crate::intents::FileChange;
use crate::tools::HOST;
use crate::tools::executor::{Invocation, Needs, Outcome, ToolExecutor};
use crate::turn::{RunState, TaskError};
use roost_protocol::{ErrorCode, ToolGroup, ToolSpec};
use roost_sandbox::capability::{RelPath, TreeChange, TreeStat, Workspace};

/// Name of the tool that runs a command.
pub const NAME: &str = "execute_command";

/// Most entries listed under the write roots to see what a command changed.
const MAX_LISTED: usize = 200_000;
/// Most changed files named in a result.
const MAX_NAMED: usize = 200;
/// Largest file hashed.
const MAX_HASHED: u64 = 1 << 30;

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

/// The SHA-256 of the workspace file `rel`, when it is a regular file
/// small enough.
fn sha256(ws: &Workspace, rel: &str) -> Option<String> {
    let rel = RelPath::parse(rel).ok()?;
    let mut f = ws.open_file(&rel).ok()??;
    let size = f.metadata().ok()?.len();
    if size > MAX_HASHED {
        return None;
    }
    let mut h = Sha256::new();
    std::io::copy(&mut f, &mut h).ok()?;
    Some(format!("{:x}", h.finalize()))
}

#[async_trait::async_trait]
impl ToolExecutor for ExecuteCommand {
    fn spec(&self) -> &ToolSpec {
        &self.spec
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
            Ok(a) => !self.host.rules.judge(&a.command).read_only,
            Err(_) => true,
        }
    }

    fn needs(&self, state: &RunState, args: &Value) -> Needs {
        let a = match Args::parse(args) {
            Ok(a) => a,
            Err(e) => return Needs::Refused(Box::new(Outcome::mistake(e))),
        };
        let judged = self.host.rules.judge(&a.command);
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
        let a = match Args::parse(call.args) {
            Ok(a) => a,
            Err(e) => return Ok(Outcome::mistake(e)),
        };
        if let Err(why) = self.host.confinement.check() {
            return Ok(Outcome::error(
                ErrorCode::PermissionDenied,
                format!("commands cannot run on this host: {why}"),
            ));
        }
        let profile = match self.profile(call.state) {
            Ok(p) => p.clone(),
            Err(e) => return Ok(Outcome::error(ErrorCode::Internal, e.to_string())),
        };
        let ws = &call.ctx.ws;
        let cwd_rel = match ws.normalize(a.cwd.as_deref().unwrap_or(".")) {
            Ok(r) => r,
            Err(e) => return Ok(Outcome::mistake(format!("`cwd`: {e}"))),
        };
        if ws.dir(&cwd_rel).is_err() {
            return Ok(Outcome::mistake(format!(
                "`cwd`: `{}` is not a directory of the workspace",
                cwd_rel.as_string()
            )));
        }
        let root = ws.host_path().to_path_buf();
        let cwd = root.join(cwd_rel.to_path());
        let mut roots = Vec::new();
        // The write roots by handle: bubblewrap binds the directories
        // opened here, never a path that could be swapped meanwhile.
        let mut root_dirs = Vec::new();
        if profile.writes_scope {
            for r in call.write_roots {
                let rel = match RelPath::parse(&r.to_string_lossy()) {
                    Ok(rel) => rel,
                    Err(e) => return Ok(Outcome::error(ErrorCode::Internal, e.to_string())),
                };
                // A root the scope names but that does not exist yet is
                // made, so the command can write there.
                match ws.ensure_dir_fd(&rel) {
                    Ok(d) => root_dirs.push(d),
                    Err(e) => return Ok(Outcome::error(ErrorCode::Internal, e.to_string())),
                }
                roots.push(rel);
            }
        }
        let mut writable: Vec<PathBuf> = roots.iter().map(|r| root.join(r.to_path())).collect();
        writable.extend(profile.write.iter().cloned());
        let mut held: Vec<Held<'_>> = vec![Held {
            fd: ws.root().as_fd(),
            at: &root,
            writable: false,
        }];
        held.extend(root_dirs.iter().zip(&writable).map(|(d, at)| Held {
            fd: d.as_fd(),
            at,
            writable: true,
        }));
        let before = TreeStat::take(ws, &roots, &[".git"], MAX_LISTED).unwrap_or_default();
        let mut capture =
            match self
                .host
                .outputs
                .start(&call.ctx.task.id, call.call_id, self.host.limits)
            {
                Ok(c) => c,
                Err(e) => return Ok(Outcome::error(ErrorCode::Internal, e.to_string())),
            };
        let limit = a
            .timeout_s
            .map(std::time::Duration::from_secs)
            .map_or(self.host.timeout, |t| t.min(self.host.timeout));
        let mut env = self.host.environment(&profile);
        // The profile's origins, through the host's filtering proxy (the
        // sandbox has no other way out).
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
        let hidden = self.host.hidden_for(&root);
        let plan = Plan {
            visible: &[],
            line: &a.command,
            cwd: &cwd,
            workspace: &root,
            writable: &writable,
            profile: &profile,
            hidden: &hidden,
            env: &env,
            proxy: proxy.as_ref().map(|(p, b)| (p.socket(), b.as_path())),
            held: &held,
            binds: &[],
        };
        let cmd = match self.host.confinement.command(&plan, limit.as_secs()) {
            Ok(c) => c,
            Err(e) => {
                return Ok(Outcome::error(
                    ErrorCode::PermissionDenied,
                    format!("commands cannot run on this host: {e}"),
                ));
            }
        };
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
        let ended = match ended {
            Ok(e) => e,
            Err(e) => {
                return Ok(Outcome::error(
                    ErrorCode::Internal,
                    format!("the command could not be started: {e}"),
                ));
            }
        };
        let after = TreeStat::take(ws, &roots, &[".git"], MAX_LISTED).unwrap_or_default();
        let changes = after.changes_since(&before);
        let files: Vec<FileChange> = changes
            .iter()
            .map(|(path, change)| FileChange {
                path: path.clone(),
                sha256_before: None,
                sha256_after: match change {
                    TreeChange::Removed => None,
                    _ => sha256(ws, path),
                },
                lines_changed: 0,
            })
            .collect();
        let mut text = format!("$ {}\n", a.command);
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
            cwd_rel.as_string(),
            profile.name,
            captured.total,
            captured.id
        ));
        if !changes.is_empty() {
            text.push_str(&format!("Files changed ({}):\n", changes.len()));
            for ((path, change), f) in changes.iter().zip(&files).take(MAX_NAMED) {
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
        let refused: Vec<&str> = attempts
            .iter()
            .filter(|a| !a.allowed)
            .map(|a| a.origin.as_str())
            .collect();
        if !refused.is_empty() {
            text.push_str(&format!(
                "Network refused (not in profile `{}`): {}\n",
                profile.name,
                refused.join(", ")
            ));
        }
        if after.truncated {
            text.push_str("(more files than the host lists: changes past them are not shown)\n");
        }
        let mut detail = format!(
            "command `{}` in {} under profile {}{}: {ended}; {} file(s) changed",
            a.command,
            cwd_rel.as_string(),
            profile.name,
            if self.host.warning().is_some() {
                " (unconfined)"
            } else {
                ""
            },
            changes.len()
        );
        if !attempts.is_empty() {
            detail.push_str("; network: ");
            detail.push_str(
                &attempts
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
        let mut outcome = match ended {
            Ended::TimedOut => Outcome::error(
                ErrorCode::LimitExceeded,
                format!(
                    "{text}The command ran past its {} s limit and was killed (with everything it started).",
                    limit.as_secs()
                ),
            ),
            Ended::Cancelled => Outcome::error(
                ErrorCode::Internal,
                format!("{text}The task was stopped; the command was killed."),
            ),
            Ended::Exited(_) | Ended::Signalled(_) => Outcome::ok(text),
        };
        outcome.changed = Some((files, detail));
        Ok(outcome)
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
