//! `roost doctor` (is everything in place, and what is missing) and
//! `roost config show` (the configuration in effect, secrets masked).

use super::line::outln;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Subcommand};

use super::sanitize::{visible, visible_line};
use roost_core::config::{self, Probe, ProviderChoice};
use roost_core::engine::Records;

/// `roost doctor`.
#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// Config file (default ~/.config/roost/config.toml).
    #[arg(long, env = "ROOST_CONFIG", value_parser = super::AbsolutePath)]
    pub config: Option<PathBuf>,
    /// Do not ask the endpoints whether they answer.
    #[arg(long)]
    pub offline: bool,
}

/// `roost config …`
#[derive(Debug, Subcommand)]
pub enum ConfigCommand {
    /// The configuration in effect (file, defaults, environment), with
    /// secrets masked.
    Show {
        /// Config file (default ~/.config/roost/config.toml).
        #[arg(long, env = "ROOST_CONFIG", value_parser = super::AbsolutePath)]
        config: Option<PathBuf>,
    },
    /// Where the config file is read from (`--config`, `ROOST_CONFIG`, else
    /// the default).
    Path,
}

/// One finding.
enum Mark {
    Ok,
    Note,
    Bad,
}

fn say(mark: Mark, what: &str, detail: &str) {
    let m = match mark {
        Mark::Ok => "ok  ",
        Mark::Note => "note",
        Mark::Bad => "FAIL",
    };
    outln!("{m}  {what:<22} {}", visible_line(detail));
}

/// The first line of `program --version`, if it runs.
fn version_of(program: &str, args: &[&str]) -> Option<String> {
    let out = std::process::Command::new(program)
        .args(args)
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let text = if text.trim().is_empty() {
        String::from_utf8_lossy(&out.stderr).into_owned()
    } else {
        text.into_owned()
    };
    text.lines().next().map(|l| l.trim().to_owned())
}

/// Files and bytes under `dir`.
fn dir_size(dir: &Path) -> (u64, u64) {
    let mut files = 0u64;
    let mut bytes = 0u64;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            match e.metadata() {
                Ok(m) if m.is_dir() => stack.push(e.path()),
                Ok(m) => {
                    files += 1;
                    bytes += m.len();
                }
                Err(_) => {}
            }
        }
    }
    (files, bytes)
}

/// `roost doctor`.
pub async fn run(args: DoctorArgs, data_dir: &Path) -> anyhow::Result<ExitCode> {
    let mut failed = false;
    outln!("roost {}", env!("CARGO_PKG_VERSION"));

    // The data dir and the task store in it.
    let shown_dir = data_dir.display().to_string();
    match std::fs::create_dir_all(data_dir) {
        Ok(()) => say(Mark::Ok, "data dir", &shown_dir),
        Err(e) => {
            failed = true;
            say(Mark::Bad, "data dir", &format!("{shown_dir}: {e}"));
        }
    }
    match Records::open(&super::store::location_default(data_dir)).and_then(|r| r.list(1_000_000)) {
        Ok(tasks) => say(Mark::Ok, "task store", &format!("{} tasks", tasks.len())),
        Err(e) => {
            failed = true;
            say(Mark::Bad, "task store", &e.to_string());
        }
    }
    // Where traces go (the standard OpenTelemetry variables over the
    // config's `[telemetry]`).
    say(
        Mark::Ok,
        "telemetry",
        super::telemetry_config(args.config.as_deref(), false)
            .describe()
            .trim_start_matches("telemetry: "),
    );
    let cache = data_dir.join("cache").join("components");
    let (files, bytes) = dir_size(&cache);
    say(
        Mark::Ok,
        "component cache",
        &format!(
            "{files} compiled components, {}.{} MB ({})",
            bytes / 1_000_000,
            bytes % 1_000_000 / 100_000,
            cache.display()
        ),
    );

    // The config and each endpoint it names.
    let path = args.config.clone().unwrap_or_else(config::default_path);
    let cfg = match config::load(args.config.as_deref()) {
        Ok(c) => {
            let state = if path.exists() {
                path.display().to_string()
            } else {
                format!("{} (none: defaults)", path.display())
            };
            say(Mark::Ok, "config", &state);
            Some(c)
        }
        Err(e) => {
            failed = true;
            say(Mark::Bad, "config", &e.to_string());
            None
        }
    };
    if let Some(cfg) = &cfg {
        let mut choices: Vec<(String, ProviderChoice)> = cfg
            .profiles
            .keys()
            .map(|name| {
                (
                    format!("profile {name}"),
                    ProviderChoice {
                        profile: Some(name.clone()),
                        ..ProviderChoice::default()
                    },
                )
            })
            .collect();
        if cfg.profiles.is_empty() {
            choices.push(("default endpoint".to_owned(), ProviderChoice::default()));
        }
        for (label, choice) in choices {
            if args.offline {
                say(Mark::Note, &label, "not asked (--offline)");
                continue;
            }
            match config::probe(cfg, &choice, Duration::from_secs(5)).await {
                Probe::Answers(d) => say(Mark::Ok, &label, &d),
                Probe::Local(d) => say(Mark::Ok, &label, &format!("{d} (no network)")),
                // An endpoint that does not answer is worth knowing, not a
                // broken installation.
                Probe::Fails(d) => say(Mark::Note, &label, &d),
            }
        }
    }

    // Optional parts.
    match version_of("bwrap", &["--version"]) {
        Some(v) => {
            say(Mark::Ok, "bubblewrap", &v);
            // What the command sandbox holds on this machine.
            let bwrap = roost_core::commands::Confinement::Bubblewrap("bwrap".into());
            for p in roost_core::commands::protections(&bwrap) {
                say(
                    if p.given { Mark::Ok } else { Mark::Note },
                    &format!("commands: {}", p.name),
                    &p.detail,
                );
            }
        }
        None => say(
            Mark::Note,
            "bubblewrap",
            "not found: commands cannot be sandboxed (Debian: apt install bubblewrap)",
        ),
    }
    match version_of("cargo", &["--version"]) {
        Some(v) => {
            let wasm = std::process::Command::new("rustup")
                .args(["target", "list", "--installed"])
                .output()
                .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("wasm32-wasip2"));
            say(
                if wasm { Mark::Ok } else { Mark::Note },
                "Rust plugins",
                &if wasm {
                    format!("{v}, wasm32-wasip2 installed")
                } else {
                    format!("{v}; `rustup target add wasm32-wasip2` to build plugins")
                },
            );
        }
        None => say(Mark::Note, "Rust plugins", "cargo not found"),
    }
    match version_of("componentize-py", &["--version"]) {
        Some(v) => say(Mark::Ok, "Python plugins", &v),
        None => say(
            Mark::Note,
            "Python plugins",
            "componentize-py not found (pipx install componentize-py)",
        ),
    }
    match version_of("node", &["--version"]) {
        Some(v) => say(Mark::Ok, "JavaScript plugins", &format!("node {v}")),
        None => say(Mark::Note, "JavaScript plugins", "node not found"),
    }
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// Keys whose values are secrets wherever they appear.
fn is_secret_key(key: &str) -> bool {
    let k = key.to_ascii_lowercase();
    k == "value" || k.contains("key") && !k.ends_with("_env") || k.contains("token")
}

/// `v` with every secret value replaced by `"***"`.
fn masked(v: &mut toml::Value) {
    match v {
        toml::Value::Table(t) => {
            for (k, v) in t.iter_mut() {
                if is_secret_key(k) && !matches!(v, toml::Value::Table(_)) {
                    *v = toml::Value::String("***".to_owned());
                } else {
                    masked(v);
                }
            }
        }
        toml::Value::Array(a) => a.iter_mut().for_each(masked),
        _ => {}
    }
}

/// `roost config`; `in_effect` is the config `--config` or ROOST_CONFIG
/// names.
pub fn config(cmd: ConfigCommand, in_effect: Option<&Path>) -> anyhow::Result<ExitCode> {
    match cmd {
        ConfigCommand::Path => outln!(
            "{}",
            in_effect
                .map(Path::to_path_buf)
                .unwrap_or_else(config::default_path)
                .display()
        ),
        ConfigCommand::Show { config: explicit } => {
            // Parsed (and checked) as a task would use it.
            let cfg = config::load(explicit.as_deref())?;
            let path = explicit.unwrap_or_else(config::default_path);
            outln!("# {}", visible_line(&path.display().to_string()));
            match std::fs::read_to_string(&path) {
                Ok(text) => {
                    let mut v: toml::Value = toml::from_str(&text)?;
                    masked(&mut v);
                    outln!("{}", visible(&toml::to_string_pretty(&v)?));
                }
                Err(_) => outln!("# (no file: the defaults below)"),
            }
            outln!("# in effect");
            outln!(
                "# default profile: {}",
                cfg.default_profile
                    .as_deref()
                    .unwrap_or("(none: openai at https://api.openai.com/v1, model gpt-4o-mini)")
            );
            for var in [
                "OPENAI_API_KEY",
                "OPENAI_BASE_URL",
                "ANTHROPIC_API_KEY",
                "ROOST_DATA_DIR",
                "ROOST_CONFIG",
                "ROOST_LOG",
            ] {
                if let Ok(v) = std::env::var(var) {
                    let shown = if var.ends_with("_KEY") {
                        "***".to_owned()
                    } else {
                        v
                    };
                    outln!("# ${var} = {}", visible_line(&shown));
                }
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_masked_and_names_kept() {
        let mut v: toml::Value = toml::from_str(
            r#"
default_profile = "local"
[profiles.local]
api_key_env = "MY_KEY"
api_key = "sk-live"
[secrets.GITHUB]
value = "ghp_secret"
hosts = ["api.github.com"]
"#,
        )
        .expect("toml");
        masked(&mut v);
        let text = toml::to_string(&v).expect("toml");
        assert!(
            !text.contains("sk-live") && !text.contains("ghp_secret"),
            "{text}"
        );
        assert!(
            text.contains("MY_KEY") && text.contains("api.github.com"),
            "{text}"
        );
    }
}
