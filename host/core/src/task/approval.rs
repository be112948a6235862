//! Approvals: a policy auto-approves tool calls by group; anything else is
//! put to a person as an ask ([`crate::asks`]).

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use crate::tools::ToolGroup;

/// Which calls run without asking.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApprovalPolicy {
    /// Approve everything (`--yes`).
    pub approve_all: bool,
    /// Groups approved without asking (`--approve read,edit`).
    pub auto_groups: BTreeSet<ToolGroup>,
}

impl ApprovalPolicy {
    /// Approve everything.
    pub fn yes() -> Self {
        Self {
            approve_all: true,
            auto_groups: BTreeSet::new(),
        }
    }

    /// Parse `read,edit,…`.
    pub fn from_groups(list: &str) -> Result<Self, String> {
        let mut auto_groups = BTreeSet::new();
        for g in list.split(',').map(str::trim).filter(|g| !g.is_empty()) {
            let group = match g {
                "read" => ToolGroup::Read,
                "edit" => ToolGroup::Edit,
                "command" => ToolGroup::Command,
                "browser" => ToolGroup::Browser,
                "mcp" => ToolGroup::Mcp,
                "modes" => ToolGroup::Modes,
                other => {
                    return Err(format!(
                        "unknown tool group `{other}` (read, edit, command, browser, mcp, modes)"
                    ));
                }
            };
            auto_groups.insert(group);
        }
        Ok(Self {
            approve_all: false,
            auto_groups,
        })
    }

    /// Whether a call of `group` runs without asking.
    pub fn covers(&self, group: ToolGroup) -> bool {
        self.approve_all || self.auto_groups.contains(&group)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_groups() {
        let p = ApprovalPolicy::from_groups("read, edit").expect("parses");
        assert!(p.covers(ToolGroup::Read) && p.covers(ToolGroup::Edit));
        assert!(!p.covers(ToolGroup::Command));
        assert!(ApprovalPolicy::from_groups("read,launch").is_err());
        assert!(ApprovalPolicy::yes().covers(ToolGroup::Command));
    }
}
