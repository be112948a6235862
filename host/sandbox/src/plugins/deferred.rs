//! What a component's preparation may wait for: a front-end watching the
//! compiles that take seconds ([`CompileWatch`]), and an instance prepared
//! at load or on first use ([`Deferred`]).

use std::borrow::Cow;
use std::sync::OnceLock;

use super::cache::CacheOutcome;
use super::component_file::ComponentFile;
use super::error::PluginError;

/// Told when an engine really compiles a component (not one the build
/// precompiled or the cache holds): that takes seconds — a minute for a
/// JavaScript or Python component — and a front-end shows progress.
pub trait CompileWatch: Send + Sync {
    /// Compiling `component` (`bytes` long) starts.
    fn started(&self, component: &str, bytes: usize);
    /// It ended (`ok`: compiled; else the error is reported by the caller).
    fn finished(&self, component: &str, ok: bool);
}

/// A component's prepared instance (`P`: a tool plugin's or a hook's) and
/// where its code came from: made at load, or on first use, with the
/// component's bytes (or its file, held open) kept until then.
pub(super) struct Deferred<P> {
    ready: OnceLock<(P, CacheOutcome)>,
    source: Option<Source>,
}

/// Where a preparation on first use gets the component's bytes.
enum Source {
    /// Kept in memory (or borrowed from the binary).
    Bytes(Cow<'static, [u8]>),
    /// Read again from the file checked at load, and checked again.
    File(ComponentFile),
}

impl<P> Deferred<P> {
    /// Prepared already.
    pub(super) fn ready(pre: P, outcome: CacheOutcome) -> Self {
        Self {
            ready: OnceLock::from((pre, outcome)),
            source: None,
        }
    }

    /// To be prepared from `bytes` on first use.
    pub(super) fn later(bytes: Cow<'static, [u8]>) -> Self {
        Self {
            ready: OnceLock::new(),
            source: Some(Source::Bytes(bytes)),
        }
    }

    /// To be prepared on first use from `file`'s bytes, read then and
    /// refused unless they still hash as they did when it was opened.
    pub(super) fn from_file(file: ComponentFile) -> Self {
        Self {
            ready: OnceLock::new(),
            source: Some(Source::File(file)),
        }
    }

    /// The bytes kept in memory for a later preparation.
    pub(super) fn bytes(&self) -> Option<&[u8]> {
        match &self.source {
            Some(Source::Bytes(bytes)) => Some(bytes),
            _ => None,
        }
    }

    /// Where its code came from; `None` until it is prepared.
    pub(super) fn outcome(&self) -> Option<CacheOutcome> {
        self.ready.get().map(|(_, outcome)| *outcome)
    }

    /// The prepared instance, made now by `prepare` from the kept bytes (or
    /// the kept file's) if it is not yet (`kind` and `name` name it in the
    /// error when nothing was kept). Two first uses at once may both
    /// prepare; one is kept.
    pub(super) fn get(
        &self,
        kind: &str,
        name: &str,
        prepare: impl FnOnce(&[u8]) -> Result<(P, CacheOutcome), PluginError>,
    ) -> Result<&(P, CacheOutcome), PluginError> {
        if let Some(ready) = self.ready.get() {
            return Ok(ready);
        }
        let ready = match &self.source {
            Some(Source::Bytes(bytes)) => prepare(bytes)?,
            Some(Source::File(file)) => prepare(&file.read_checked(name)?)?,
            None => {
                return Err(PluginError::Engine(format!(
                    "{kind} `{name}` was loaded without its component"
                )));
            }
        };
        Ok(self.ready.get_or_init(|| ready))
    }
}
