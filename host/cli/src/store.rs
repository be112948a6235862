//! `roost store`: where the task store is, and bringing its schema up to
//! this Roost's (`roost store migrate`, run once before hosts of a new
//! version start on a shared PostgreSQL database).
//!
//! The store is chosen once per process: `--store` (or `ROOST_STORE_URL`),
//! else the config's `store`, else `roost.db` in the data directory.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::OnceLock;

use clap::Subcommand;
use roost_core::config;
use roost_core::engine::{Records, StoreLocation};

use super::line::outln;

/// `roost store …`
#[derive(Debug, Subcommand)]
pub enum StoreCommand {
    /// Create or upgrade the store's schema, then say from which version
    /// to which. A store written by a newer Roost is refused.
    Migrate,
    /// Say where the store is (the password of a URL hidden).
    Where,
}

/// The `--store` given on the command line (or in `ROOST_STORE_URL`).
static EXPLICIT: OnceLock<Option<String>> = OnceLock::new();

/// The `--config` given (or `ROOST_CONFIG`): its `store` key counts for
/// every command, also those that read nothing else of it.
static CONFIG: OnceLock<Option<PathBuf>> = OnceLock::new();

/// Remember `--store` and `--config` for the process (called once, by
/// `main`).
pub fn set_explicit(store: Option<String>, config: Option<PathBuf>) {
    let _ = EXPLICIT.set(store);
    let _ = CONFIG.set(config);
}

/// Where this process's store is, given the data directory and the config.
/// A file named by a relative path is made absolute here, against the
/// current directory (bubblewrap hides it from commands, git and SQLite
/// open it: all need the one path).
pub fn location(data_dir: &Path, cfg: Option<&config::Config>) -> StoreLocation {
    let explicit = EXPLICIT.get().and_then(|s| s.as_deref());
    match StoreLocation::resolve(explicit, cfg.and_then(|c| c.store.as_deref()), data_dir) {
        StoreLocation::File(path) => {
            StoreLocation::File(std::path::absolute(&path).unwrap_or(path))
        }
        other => other,
    }
}

/// Where this process's store is, reading the config file in effect
/// (`--config`, `ROOST_CONFIG`, else the default one) for a `store` key (an
/// unreadable config counts as none: the command that needs the config
/// reports it).
pub fn location_default(data_dir: &Path) -> StoreLocation {
    let explicit = CONFIG.get().and_then(Option::as_deref);
    let cfg = config::load(explicit).ok();
    location(data_dir, cfg.as_ref())
}

/// `roost store`.
pub fn run(cmd: StoreCommand, data_dir: &Path) -> anyhow::Result<ExitCode> {
    let at = location_default(data_dir);
    match cmd {
        StoreCommand::Migrate => {
            let (from, to) = Records::migrate(&at)?;
            if from == to {
                outln!("{at}: schema {to}, up to date");
            } else {
                outln!("{at}: schema {from} → {to}");
            }
        }
        StoreCommand::Where => outln!("{at}"),
    }
    Ok(ExitCode::SUCCESS)
}
