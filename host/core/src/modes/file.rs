//! Reading `.roomodes` / `custom_modes.yaml` (YAML, or JSON, as Roo Code
//! accepts): `customModes: [...]`. Each entry is checked on its own, so one
//! bad mode is reported (file, entry, field) and the others still load.

use std::path::{Path, PathBuf};

use regex::Regex;
use serde::Deserialize;
use serde_json::Value;

use super::{GroupGrant, Mode, ModeSource};
use roost_protocol::ToolGroup;
use roost_sandbox::capability::Workspace;

/// A mode file, or one entry of it, that could not be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}: {}{}{message}", path.display(), entry.as_deref().map(|e| format!("{e}: ")).unwrap_or_default(), field.as_deref().map(|f| format!("field `{f}`: ")).unwrap_or_default())]
pub struct ModeFileError {
    /// The file.
    pub path: PathBuf,
    /// Which entry (`mode #2 (docs)`), if the problem is inside one.
    pub entry: Option<String>,
    /// Which field, when known.
    pub field: Option<String>,
    /// What is wrong.
    pub message: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawMode {
    slug: String,
    name: String,
    role_definition: String,
    when_to_use: Option<String>,
    description: Option<String>,
    custom_instructions: Option<String>,
    groups: Vec<Value>,
    #[serde(default)]
    hooks: Vec<String>,
    #[serde(default)]
    command_profile: Option<String>,
}

fn group_name(s: &str) -> Result<ToolGroup, String> {
    Ok(match s {
        "read" => ToolGroup::Read,
        "edit" => ToolGroup::Edit,
        "command" => ToolGroup::Command,
        "browser" => ToolGroup::Browser,
        "mcp" => ToolGroup::Mcp,
        "modes" => ToolGroup::Modes,
        other => {
            return Err(format!(
                "unknown group `{other}` (read, edit, command, browser, mcp, modes)"
            ));
        }
    })
}

fn parse_group(v: &Value) -> Result<GroupGrant, String> {
    match v {
        Value::String(s) => Ok(GroupGrant {
            group: group_name(s)?,
            file_regex: None,
            description: None,
        }),
        Value::Array(a) => {
            let name = a
                .first()
                .and_then(Value::as_str)
                .ok_or("a group entry list must start with the group name")?;
            let group = group_name(name)?;
            let opts = a.get(1).cloned().unwrap_or(Value::Null);
            let file_regex = match opts.get("fileRegex") {
                Some(Value::String(r)) => {
                    Some(Regex::new(r).map_err(|e| format!("invalid fileRegex {r:?}: {e}"))?)
                }
                Some(other) => return Err(format!("fileRegex must be a string, got {other}")),
                None => None,
            };
            let description = opts
                .get("description")
                .and_then(Value::as_str)
                .map(str::to_owned);
            Ok(GroupGrant {
                group,
                file_regex,
                description,
            })
        }
        other => Err(format!(
            "a group is a name or [name, {{fileRegex, description}}], got {other}"
        )),
    }
}

fn valid_slug(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
}

/// A missing field has no path; its name is in the message
/// (`missing field `slug``).
fn field_of(msg: &str) -> Option<String> {
    let start = msg.find('`')? + 1;
    let end = start + msg[start..].find('`')?;
    Some(msg[start..end].to_owned())
}

/// Largest mode file read.
const MAX_MODE_FILE: u64 = 1 << 20;

/// Load the modes of one file; a missing file is no modes and no error.
/// A project file (`.roomodes`) is read through the workspace layer; the
/// global file lives in the user's own config directory.
pub fn load(path: &Path, project: bool) -> (Vec<Mode>, Vec<ModeFileError>) {
    let read = if project {
        read_project(path)
    } else {
        read_global(path)
    };
    loaded(path, read, project)
}

/// The modes of `ws`'s project file `name`, read through the workspace
/// handle the caller holds (no second open of its path).
pub fn load_in(ws: &Workspace, name: &str) -> (Vec<Mode>, Vec<ModeFileError>) {
    let read = ws.read_text(name, MAX_MODE_FILE).map_err(|e| e.to_string());
    loaded(&ws.host_path().join(name), read, true)
}

/// The modes of the file at `path`, whose text `read` got (none: no file).
fn loaded(
    path: &Path,
    read: Result<Option<String>, String>,
    project: bool,
) -> (Vec<Mode>, Vec<ModeFileError>) {
    let fail = |message: String| {
        (
            Vec::new(),
            vec![ModeFileError {
                path: path.into(),
                entry: None,
                field: None,
                message,
            }],
        )
    };
    let text = match read {
        Ok(Some(t)) => t,
        Ok(None) => return (Vec::new(), Vec::new()),
        Err(message) => return fail(message),
    };
    parse(path, &text, project)
}

/// `<workspace>/<file>` through the workspace layer.
fn read_project(path: &Path) -> Result<Option<String>, String> {
    let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
        return Err("not a file path".into());
    };
    let ws = Workspace::open(dir).map_err(|e| e.to_string())?;
    ws.read_text(&name.to_string_lossy(), MAX_MODE_FILE)
        .map_err(|e| e.to_string())
}

/// The user's global modes file: a regular file of bounded size.
fn read_global(path: &Path) -> Result<Option<String>, String> {
    match std::fs::metadata(path) {
        Ok(m) if !m.is_file() => return Err("not a regular file".into()),
        Ok(m) if m.len() > MAX_MODE_FILE => {
            return Err(format!("larger than {MAX_MODE_FILE} bytes"));
        }
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e.to_string()),
    }
    std::fs::read_to_string(path)
        .map(Some)
        .map_err(|e| e.to_string())
}

/// Parse a mode file's text.
pub fn parse(path: &Path, text: &str, project: bool) -> (Vec<Mode>, Vec<ModeFileError>) {
    let err = |entry: Option<String>, field: Option<String>, message: String| ModeFileError {
        path: path.to_path_buf(),
        entry,
        field,
        message,
    };
    if text.trim().is_empty() {
        return (Vec::new(), Vec::new());
    }
    let root: Value = match serde_saphyr::from_str(text) {
        Ok(v) => v,
        Err(e) => {
            return (
                Vec::new(),
                vec![err(None, None, format!("not valid YAML or JSON: {e}"))],
            );
        }
    };
    let list = match root.get("customModes") {
        Some(Value::Array(a)) => a.clone(),
        Some(Value::Null) | None if root.is_object() || root.is_null() => Vec::new(),
        Some(other) => {
            return (
                Vec::new(),
                vec![err(
                    None,
                    Some("customModes".into()),
                    format!("must be a list, got {other}"),
                )],
            );
        }
        None => {
            return (
                Vec::new(),
                vec![err(
                    None,
                    None,
                    "expected a mapping with `customModes: [...]`".into(),
                )],
            );
        }
    };
    let source = if project {
        ModeSource::Project(path.to_path_buf())
    } else {
        ModeSource::Global(path.to_path_buf())
    };
    let mut modes = Vec::new();
    let mut errors = Vec::new();
    for (i, raw) in list.into_iter().enumerate() {
        let label = format!(
            "mode #{}{}",
            i + 1,
            raw.get("slug")
                .and_then(Value::as_str)
                .map(|s| format!(" ({s})"))
                .unwrap_or_default()
        );
        let m: RawMode = match serde_path_to_error::deserialize(raw) {
            Ok(m) => m,
            Err(e) => {
                let path = e.path().to_string();
                let msg = e.inner().to_string();
                let field = if path == "." {
                    field_of(&msg)
                } else {
                    Some(path)
                };
                errors.push(err(Some(label), field, msg));
                continue;
            }
        };
        if !valid_slug(&m.slug) {
            errors.push(err(
                Some(label),
                Some("slug".into()),
                "use letters, digits and dashes only".into(),
            ));
            continue;
        }
        let mut groups = Vec::new();
        let mut bad = None;
        for g in &m.groups {
            match parse_group(g) {
                Ok(g) => groups.push(g),
                Err(e) => {
                    bad = Some(e);
                    break;
                }
            }
        }
        if let Some(e) = bad {
            errors.push(err(Some(label), Some("groups".into()), e));
            continue;
        }
        modes.push(Mode {
            slug: m.slug,
            name: m.name,
            role_definition: m.role_definition,
            when_to_use: m.when_to_use,
            description: m.description,
            custom_instructions: m.custom_instructions,
            groups,
            hooks: m.hooks,
            command_profile: m.command_profile,
            source: source.clone(),
        });
    }
    (modes, errors)
}
