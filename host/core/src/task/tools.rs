//! The tools one task is offered: the process's registry, with the skill
//! tools of its workspace laid over it while it has skills. Rebuilt only
//! when the workspace's skills change (hot reload), so each tool list is
//! still encoded once, not every turn.

use std::collections::HashSet;
use std::sync::Arc;

use crate::skills::Catalog;
use crate::tools::{Registry, skill};

/// A task's tools and the skills they were built over.
pub(super) struct TaskTools {
    catalog: Arc<Catalog>,
    registry: Arc<Registry>,
    /// Skill problems the task was told of already.
    reported: HashSet<String>,
}

impl TaskTools {
    /// The process's tools alone, before the skills are known.
    pub(super) fn new(base: &Arc<Registry>) -> Self {
        Self {
            catalog: Arc::default(),
            registry: Arc::clone(base),
            reported: HashSet::new(),
        }
    }

    /// The tools over `catalog` (the workspace's skills as they stand);
    /// returns the skill problems not reported to the task yet.
    pub(super) fn refresh(&mut self, base: &Arc<Registry>, catalog: Arc<Catalog>) -> Vec<String> {
        if Arc::ptr_eq(&catalog, &self.catalog) {
            return Vec::new();
        }
        self.registry = if catalog.is_empty() {
            Arc::clone(base)
        } else {
            match skill::overlay(&catalog).and_then(|tools| base.with_overlay(tools)) {
                Ok(r) => Arc::new(r),
                Err(e) => {
                    tracing::error!("the skill tools cannot be offered: {e}");
                    Arc::clone(base)
                }
            }
        };
        let fresh = catalog
            .issues()
            .iter()
            .map(|i| format!("skill skipped: {i}"))
            .filter(|m| self.reported.insert(m.clone()))
            .collect();
        self.catalog = catalog;
        fresh
    }

    /// The tools the task is offered.
    pub(super) fn registry(&self) -> &Arc<Registry> {
        &self.registry
    }

    /// The skills they were built over.
    pub(super) fn catalog(&self) -> &Arc<Catalog> {
        &self.catalog
    }
}
