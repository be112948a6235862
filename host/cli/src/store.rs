//! `roost store`: where the task store is, and bringing its schema up to
//! this Roost's (`roost store migrate`, run once before hosts of a new
//! version start on a shared PostgreSQL database).
//!
//! The store is chosen once per process: `--store` (or `ROOST_STORE_URL`),
//! else the config's `store`, else `roost.db` in the data directory.

use std::path::Path;
use std::process::ExitCode;
use std::sync::OnceLock;

use clap::Subcommand;
use roost_core::config;
use roost_core::store::{Store, StoreLocation};

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

/// Remember `--store` for the process (called once, by `main`).
pub fn set_explicit(store: Option<String>) {
    let _ = EXPLICIT.set(store);
}

/// Where this process's store is, given the data directory and the config.
pub fn location(data_dir: &Path, cfg: Option<&config::Config>) -> StoreLocation {
    let explicit = EXPLICIT.get().and_then(|s| s.as_deref());
    StoreLocation::resolve(explicit, cfg.and_then(|c| c.store.as_deref()), data_dir)
}

/// Where this process's store is, reading the default config file for a
/// `store` key (an unreadable config counts as none: the command that needs
/// the config reports it).
pub fn location_default(data_dir: &Path) -> StoreLocation {
    let cfg = config::load(None).ok();
    location(data_dir, cfg.as_ref())
}

/// `roost store`.
pub fn run(cmd: StoreCommand, data_dir: &Path) -> anyhow::Result<ExitCode> {
    let at = location_default(data_dir);
    match cmd {
        StoreCommand::Migrate => {
            let (from, to) = Store::migrate(&at)?;
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
