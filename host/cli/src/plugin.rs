//! `roost plugin`: install (from a path or an OCI registry), list,
//! inspect, check for and install upgrades, publish, enable, disable and
//! remove third-party tool plugins. What a plugin asks for is shown before
//! anything is recorded; a person says yes at the terminal, or `--yes`.

use super::line::{notice, outln};
use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::bail;
use clap::{Args, Subcommand};

use super::sanitize::{json_text, visible_line};
use super::template;
use roost_core::config;
use roost_core::engine::EngineBuilder;
use roost_core::install::{self, Candidate, Installed, Plugins, Signer, Source, ToolSummary};
use roost_sandbox::capability::Limits;

/// `roost plugin …` with its config file.
#[derive(Debug, Args)]
pub struct PluginArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: PluginCommand,
    /// Config file (trusted signing keys, `require_signed`).
    #[arg(long, env = "ROOST_CONFIG", global = true)]
    pub config: Option<PathBuf>,
}

/// `roost plugin …`
#[derive(Debug, Subcommand)]
pub enum PluginCommand {
    /// Verify and install a plugin: a folder with plugin.toml, a
    /// plugin.toml, a .tar.gz or a .wasm; `oci://REGISTRY/REPO:TAG` (or
    /// `@sha256:DIGEST`) from an OCI registry; an `https://….tar.gz` with
    /// its `--sha256`; or a name the configured registries resolve
    /// (`hello:1.2`, or a package `roost:hello@1.2.0` through wkg's config).
    Install {
        /// Where the plugin is: a path, an `oci://` reference, an
        /// `https://` archive or a name.
        source: String,
        /// The SHA-256 an `https://` archive must hash to (from its
        /// publisher).
        #[arg(long)]
        sha256: Option<String>,
        /// Grant what it asks for without asking.
        #[arg(short = 'y', long)]
        yes: bool,
        /// Refuse it unless it is signed by a trusted key.
        #[arg(long)]
        require_signed: bool,
    },
    /// Write a new plugin project (a tool with typed arguments, a test,
    /// the SDK and WIT, a plugin.toml) that builds on its own.
    New {
        /// Plugin name.
        name: String,
        /// Language: rust, python or js.
        #[arg(long, default_value = "rust")]
        lang: String,
        /// Folder to create (default: ./NAME).
        #[arg(long)]
        dir: Option<PathBuf>,
    },
    /// Installed plugins.
    List {
        /// Print as JSON.
        #[arg(long)]
        json: bool,
    },
    /// One plugin: tools, world, capabilities requested and granted, hash.
    Inspect {
        /// Plugin name.
        name: String,
        /// Print as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Replace a plugin with a new version; anything it asks for beyond
    /// its grant must be approved.
    Upgrade {
        /// Plugin name.
        name: String,
        /// Where the new version is (default: where it was installed from;
        /// for a registry, its tag resolved again).
        source: Option<String>,
        /// The SHA-256 an `https://` archive must hash to.
        #[arg(long)]
        sha256: Option<String>,
        /// Upgrade from another source than the one it was installed
        /// from (another registry or repository, or a path for a registry
        /// plugin).
        #[arg(long)]
        switch_source: bool,
        /// Approve what it asks for beyond the grant without asking.
        #[arg(short = 'y', long)]
        yes: bool,
        /// Refuse it unless it is signed by a trusted key.
        #[arg(long)]
        require_signed: bool,
    },
    /// Installed registry plugins whose tag now names another version.
    Outdated {
        /// Print as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Push a plugin (a folder with plugin.toml) to an OCI registry at a
    /// tag, with the logins of Docker's config (`docker login`).
    Publish {
        /// The plugin folder.
        dir: PathBuf,
        /// Where: `oci://REGISTRY/REPOSITORY:TAG`.
        reference: String,
    },
    /// Remove a plugin and its component.
    Remove {
        /// Plugin name.
        name: String,
    },
    /// Offer a plugin's tools to tasks again.
    Enable {
        /// Plugin name.
        name: String,
    },
    /// Stop offering a plugin's tools to tasks (it stays installed).
    Disable {
        /// Plugin name.
        name: String,
    },
}

/// Run a `roost plugin` command.
pub async fn run(args: PluginArgs, data_dir: &Path) -> anyhow::Result<ExitCode> {
    if let PluginCommand::New { name, lang, dir } = &args.command {
        let dir = dir.clone().unwrap_or_else(|| PathBuf::from(name));
        let lang = template::Lang::parse(lang)?;
        let tool = template::new(name, lang, &dir)?;
        super::line::to_stdout(&template::next_steps(name, lang, &dir, &tool));
        return Ok(ExitCode::SUCCESS);
    }
    let cfg = config::load(args.config.as_deref())?;
    let cmd = args.command;
    let required = match &cmd {
        PluginCommand::Install { require_signed, .. }
        | PluginCommand::Upgrade { require_signed, .. } => *require_signed,
        _ => false,
    };
    let plugins = EngineBuilder::from_config(data_dir, &cfg)
        .store(super::store::location(data_dir, Some(&cfg)))
        .require_signed(required)
        .watch_compiles(super::progress::CompileProgress::shared())
        .plugins()?;
    let ceiling = plugins.ceiling();
    match cmd {
        PluginCommand::Install {
            source,
            sha256,
            yes,
            ..
        } => {
            let source = plugins
                .resolve(&Source::named(&source, sha256.as_deref())?)
                .await?;
            let fetched = plugins.fetch(&source).await?;
            let c = plugins.prepare_fetched(&source, fetched, None)?;
            let requested = Plugins::requested(&c);
            show_candidate(&c, &install::describe(&requested, &ceiling));
            if !confirm("Install it with these capabilities?", yes)? {
                bail!("not installed: the capabilities were not approved");
            }
            let p = plugins.install(&c, &requested)?;
            outln!(
                "installed {} {} ({} tool{})",
                visible_line(p.name()),
                visible_line(&p.manifest.plugin.version),
                p.tools.len(),
                if p.tools.len() == 1 { "" } else { "s" }
            );
        }
        PluginCommand::List { json } => {
            let all = plugins.list()?;
            if json {
                let v: Vec<_> = all.iter().map(summary_json).collect();
                outln!("{}", json_text(&serde_json::to_string(&v)?));
            } else if all.is_empty() {
                outln!("no plugins installed (`roost plugin install <dir>` adds one)");
            } else {
                for p in &all {
                    let tools: Vec<&str> = p.tools.iter().map(|t| t.name.as_str()).collect();
                    outln!(
                        "{:<20} {:<10} {:<9} {}",
                        visible_line(p.name()),
                        visible_line(&p.manifest.plugin.version),
                        if p.enabled { "enabled" } else { "disabled" },
                        visible_line(&tools.join(", "))
                    );
                }
            }
        }
        PluginCommand::Inspect { name, json } => {
            let p = plugins.get(&name)?;
            if json {
                let mut v = summary_json(&p);
                v["requested"] = serde_json::to_value(&p.manifest.capabilities)?;
                v["granted"] = serde_json::to_value(&p.granted)?;
                outln!("{}", json_text(&serde_json::to_string(&v)?));
            } else {
                inspect(&p, &ceiling);
            }
        }
        PluginCommand::Upgrade {
            name,
            source,
            sha256,
            yes,
            switch_source,
            ..
        } => {
            let old = plugins.get(&name)?;
            let source = match source {
                Some(s) => {
                    plugins
                        .resolve(&Source::named(&s, sha256.as_deref())?)
                        .await?
                }
                None => install::upgrade_source(&old)?,
            };
            // Before fetching anything from another source.
            install::check_source(&old, &source, switch_source)?;
            let fetched = plugins.fetch(&source).await?;
            let c = plugins.prepare_fetched(&source, fetched, Some(&name))?;
            let requested = Plugins::requested(&c);
            show_candidate(&c, &install::describe(&requested, &ceiling));
            let wider = install::widening(&old.granted, &requested, &ceiling);
            if wider.is_empty() {
                outln!("it asks for nothing beyond what {name} was granted");
            } else {
                outln!("it asks for more than {name} was granted:");
                for line in &wider {
                    outln!("  {}", visible_line(line));
                }
                if !confirm("Grant the difference and upgrade?", yes)? {
                    bail!(
                        "not upgraded: the wider capabilities were not approved; {} {} keeps working",
                        visible_line(&name),
                        visible_line(&old.manifest.plugin.version)
                    );
                }
            }
            let p = plugins.upgrade(&name, &c, &requested, switch_source)?;
            outln!(
                "upgraded {} {} → {}",
                visible_line(p.name()),
                visible_line(&old.manifest.plugin.version),
                visible_line(&p.manifest.plugin.version)
            );
        }
        PluginCommand::Outdated { json } => {
            let rows = plugins.outdated().await?;
            if json {
                outln!("{}", json_text(&serde_json::to_string(&rows)?));
            } else if rows.is_empty() {
                outln!("no plugins installed from a registry");
            } else {
                for r in &rows {
                    outln!(
                        "{:<20} {:<40} {}",
                        visible_line(&r.name),
                        visible_line(&r.source),
                        visible_line(&r.status())
                    );
                }
            }
        }
        PluginCommand::Publish { dir, reference } => {
            let (reference, digest) = plugins.publish(&dir, &reference).await?;
            outln!("published {reference}@{digest}");
        }
        PluginCommand::Remove { name } => {
            plugins.remove(&name)?;
            outln!("removed {}", visible_line(&name));
        }
        PluginCommand::Enable { name } => {
            plugins.set_enabled(&name, true)?;
            outln!("enabled {}", visible_line(&name));
        }
        PluginCommand::Disable { name } => {
            plugins.set_enabled(&name, false)?;
            outln!("disabled {}", visible_line(&name));
        }
        PluginCommand::New { .. } => {}
    }
    Ok(ExitCode::SUCCESS)
}

/// What a candidate is and asks for. Names and descriptions come from the
/// plugin: shown, not interpreted.
fn show_candidate(c: &Candidate, capabilities: &[String]) {
    let a = &c.manifest.plugin;
    outln!(
        "plugin {} {} ({}, roost:plugin@{})",
        visible_line(&a.name),
        visible_line(&a.version),
        visible_line(&a.world),
        visible_line(&a.wit_version)
    );
    if !a.description.is_empty() {
        outln!("  {}", visible_line(&a.description));
    }
    if !c.has_manifest {
        outln!("  (no plugin.toml: named after the file, asking for the defaults)");
    }
    outln!("from: {}", visible_line(&c.source.recorded()));
    if let Some(d) = &c.digest {
        outln!("digest: {}", visible_line(d));
    }
    match &c.signer {
        Signer::Trusted(name) => outln!("signed by: {} (a trusted key)", visible_line(name)),
        Signer::Unknown => outln!("signed by: a key you do not trust"),
        Signer::Unsigned => outln!("signed by: no trusted key (unsigned)"),
    }
    print_tools(&c.tools);
    outln!("capabilities it asks for:");
    for line in capabilities {
        outln!("  {}", visible_line(line));
    }
}

fn inspect(p: &Installed, ceiling: &Limits) {
    let a = &p.manifest.plugin;
    outln!("{} {}", visible_line(&a.name), visible_line(&a.version));
    if !a.description.is_empty() {
        outln!("  {}", visible_line(&a.description));
    }
    if !a.authors.is_empty() {
        outln!("authors: {}", visible_line(&a.authors.join(", ")));
    }
    outln!(
        "world: {} (roost:plugin@{})",
        visible_line(&a.world),
        visible_line(&a.wit_version)
    );
    outln!("sha256: {}", p.sha256);
    if !p.source.is_empty() {
        outln!("from: {}", visible_line(&p.source));
    }
    if !p.digest.is_empty() {
        outln!("digest: {}", visible_line(&p.digest));
    }
    outln!("size: {} bytes", p.size);
    outln!(
        "installed: {}",
        humantime::format_rfc3339_seconds(
            std::time::UNIX_EPOCH
                + std::time::Duration::from_millis(u64::try_from(p.installed_at).unwrap_or(0))
        )
    );
    outln!("state: {}", if p.enabled { "enabled" } else { "disabled" });
    if p.signer.is_empty() {
        outln!("signed by: no trusted key (unsigned)");
    } else {
        outln!("signed by: {} (a trusted key)", visible_line(&p.signer));
    }
    print_tools(&p.tools);
    outln!("requested:");
    for line in install::describe(&p.manifest.capabilities, ceiling) {
        outln!("  {}", visible_line(&line));
    }
    outln!("granted:");
    for line in install::describe(&p.granted, ceiling) {
        outln!("  {}", visible_line(&line));
    }
}

/// A plugin's tools, one line each. Names come from the plugin: shown,
/// not interpreted.
fn print_tools(tools: &[ToolSummary]) {
    outln!("tools:");
    for t in tools {
        outln!(
            "  {:<24} {:<8}{}",
            visible_line(&t.name),
            t.group,
            if t.destructive { " writes" } else { "" }
        );
    }
}

fn summary_json(p: &Installed) -> serde_json::Value {
    serde_json::json!({
        "name": p.name(),
        "version": p.manifest.plugin.version,
        "enabled": p.enabled,
        "sha256": p.sha256,
        "size": p.size,
        "installed_at": p.installed_at,
        "world": p.manifest.plugin.world,
        "signer": p.signer,
        "wit_version": p.manifest.plugin.wit_version,
        "source": p.source,
        "digest": p.digest,
        "tools": p.tools,
    })
}

/// `--yes`, or a person's yes at a terminal; anything else is no.
fn confirm(question: &str, yes: bool) -> anyhow::Result<bool> {
    if yes {
        return Ok(true);
    }
    if !std::io::stdin().is_terminal() {
        notice!("{question} No terminal to ask on: pass --yes to approve.");
        return Ok(false);
    }
    let mut err = std::io::stderr();
    write!(err, "{question} [y/N] ")?;
    err.flush()?;
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line)?;
    Ok(matches!(line.trim(), "y" | "Y" | "yes"))
}
