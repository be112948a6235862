//! A task's todo list (Roo's `update_todo_list`), as stored: the
//! protocol's items, kept with the task.

pub use roost_protocol::todos::{TodoItem, TodoState};
