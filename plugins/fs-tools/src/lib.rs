//! Roo Code's file tools (`read_file`, `write_to_file`, `list_files`,
//! `search_files`, `apply_diff`, `search_and_replace`, `insert_content`)
//! as a sandboxed Roost plugin. Paths are workspace-relative; the sandbox
//! decides what is readable and writable.

mod diff;
mod edit;
mod links;
mod list;
mod read;
mod search;
mod text;

#[cfg(all(test, unix))]
mod tests;

use roost_sdk::{Group, Tool};

fn tools() -> Vec<Tool> {
    vec![
        Tool::new("read_file", read::DESCRIPTION, Group::Read, read::read_file).paths(&["path"]),
        Tool::new(
            "write_to_file",
            edit::WRITE_DESCRIPTION,
            Group::Edit,
            edit::write_to_file,
        )
        .paths(&["path"]),
        Tool::new(
            "list_files",
            list::DESCRIPTION,
            Group::Read,
            list::list_files,
        )
        .paths(&["path"]),
        Tool::new(
            "search_files",
            search::DESCRIPTION,
            Group::Read,
            search::search_files,
        )
        .paths(&["path"]),
        Tool::new(
            "apply_diff",
            diff::DESCRIPTION,
            Group::Edit,
            diff::apply_diff,
        )
        .paths(&["path"]),
        Tool::new(
            "search_and_replace",
            edit::REPLACE_DESCRIPTION,
            Group::Edit,
            edit::search_and_replace,
        )
        .paths(&["path"]),
        Tool::new(
            "insert_content",
            edit::INSERT_DESCRIPTION,
            Group::Edit,
            edit::insert_content,
        )
        .paths(&["path"]),
    ]
}

roost_sdk::export_tools!(tools);
