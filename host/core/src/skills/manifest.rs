//! A `SKILL.md` as the Agent Skills specification (agentskills.io) defines
//! it: a YAML front-matter block naming and describing the skill, then the
//! instructions the model loads when the skill applies. Every rule of the
//! specification is checked here, and each problem is reported with the
//! field it concerns and why, so one bad skill is explained and skipped.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

/// Longest skill name.
pub const MAX_NAME: usize = 64;
/// Longest description.
pub const MAX_DESCRIPTION: usize = 1024;
/// Longest `compatibility` note.
pub const MAX_COMPATIBILITY: usize = 500;

/// Fields the specification defines; others are kept out and warned of.
const KNOWN: [&str; 6] = [
    "name",
    "description",
    "license",
    "compatibility",
    "metadata",
    "allowed-tools",
];

/// What a `SKILL.md`'s front-matter says, once valid.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Manifest {
    /// The skill's name (equal to its folder's).
    pub name: String,
    /// What it does and when to use it: what the model decides on.
    pub description: String,
    /// Its license, as written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub license: Option<String>,
    /// What it needs of its environment, as written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compatibility: Option<String>,
    /// Free-form string pairs.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub metadata: BTreeMap<String, String>,
    /// The tools the model may call while following the skill
    /// (experimental, as in the specification).
    #[serde(rename = "allowed-tools", skip_serializing_if = "Option::is_none")]
    pub allowed_tools: Option<Vec<String>>,
    /// Fields the specification does not define (ignored).
    #[serde(skip)]
    pub unknown: Vec<String>,
}

/// One thing wrong with a `SKILL.md`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Problem {
    /// The field concerned, when one is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    /// Why it is wrong.
    pub reason: String,
}

impl Problem {
    fn of(field: &str, reason: impl Into<String>) -> Self {
        Self {
            field: Some(field.to_owned()),
            reason: reason.into(),
        }
    }

    fn file(reason: impl Into<String>) -> Self {
        Self {
            field: None,
            reason: reason.into(),
        }
    }
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.field {
            Some(field) => write!(f, "`{field}` {}", self.reason),
            None => f.write_str(&self.reason),
        }
    }
}

/// Split `text` into its front-matter (YAML) and its body.
fn split(text: &str) -> Result<(&str, &str), Problem> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let first_end = text.find('\n').unwrap_or(text.len());
    if text[..first_end].trim_end() != "---" {
        return Err(Problem::file(
            "has no front-matter: SKILL.md must start with a `---` line, the YAML fields, and another `---` line",
        ));
    }
    let rest = text.get(first_end + 1..).unwrap_or("");
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        if line.trim_end() == "---" {
            let yaml = &rest[..offset];
            let body = &rest[offset + line.len()..];
            return Ok((yaml, body));
        }
        offset += line.len();
    }
    Err(Problem::file(
        "has an unterminated front-matter: no closing `---` line",
    ))
}

/// Parse and check `SKILL.md` text of the folder `folder`: its manifest
/// and its body, or every problem found.
pub fn parse(text: &str, folder: &str) -> Result<(Manifest, String), Vec<Problem>> {
    let (yaml, body) = split(text).map_err(|p| vec![p])?;
    let root: Value = if yaml.trim().is_empty() {
        Value::Object(Default::default())
    } else {
        serde_saphyr::from_str(yaml).map_err(|e| {
            vec![Problem::file(format!(
                "has front-matter that is not valid YAML: {e}"
            ))]
        })?
    };
    let Value::Object(map) = root else {
        return Err(vec![Problem::file(
            "has front-matter that is not a YAML mapping of fields",
        )]);
    };
    let mut problems = Vec::new();
    let name = required_text(&map, "name", &mut problems);
    if let Some(n) = &name {
        problems.extend(name_problems(n, folder));
    }
    let description = required_text(&map, "description", &mut problems);
    if let Some(d) = &description {
        let chars = d.chars().count();
        if chars > MAX_DESCRIPTION {
            problems.push(Problem::of(
                "description",
                format!("is {chars} characters; at most {MAX_DESCRIPTION}"),
            ));
        }
    }
    let license = optional_text(&map, "license", &mut problems);
    let compatibility = optional_text(&map, "compatibility", &mut problems);
    if let Some(c) = &compatibility {
        let chars = c.chars().count();
        if chars > MAX_COMPATIBILITY {
            problems.push(Problem::of(
                "compatibility",
                format!("is {chars} characters; at most {MAX_COMPATIBILITY}"),
            ));
        }
    }
    let metadata = match map.get("metadata") {
        None | Some(Value::Null) => BTreeMap::new(),
        Some(Value::Object(m)) => {
            let mut out = BTreeMap::new();
            for (k, v) in m {
                match v {
                    Value::String(s) => {
                        out.insert(k.clone(), s.clone());
                    }
                    _ => problems.push(Problem::of(
                        "metadata",
                        format!("must map strings to strings; `{k}` is not a string"),
                    )),
                }
            }
            out
        }
        Some(_) => {
            problems.push(Problem::of(
                "metadata",
                "must be a map of strings to strings",
            ));
            BTreeMap::new()
        }
    };
    let allowed_tools = match map.get("allowed-tools") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(
            s.split(|c: char| c.is_whitespace() || c == ',')
                .filter(|t| !t.is_empty())
                .map(str::to_owned)
                .collect(),
        ),
        Some(Value::Array(items)) if items.iter().all(Value::is_string) => Some(
            items
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect(),
        ),
        Some(_) => {
            problems.push(Problem::of(
                "allowed-tools",
                "must be a space-separated string or a list of tool names",
            ));
            None
        }
    };
    let unknown: Vec<String> = map
        .keys()
        .filter(|k| !KNOWN.contains(&k.as_str()))
        .cloned()
        .collect();
    match (name, description) {
        (Some(name), Some(description)) if problems.is_empty() => Ok((
            Manifest {
                name,
                description: description.trim().to_owned(),
                license,
                compatibility,
                metadata,
                allowed_tools,
                unknown,
            },
            body.trim_start_matches(['\r', '\n']).to_owned(),
        )),
        _ => Err(problems),
    }
}

fn required_text(
    map: &serde_json::Map<String, Value>,
    field: &str,
    problems: &mut Vec<Problem>,
) -> Option<String> {
    match map.get(field) {
        None | Some(Value::Null) => {
            problems.push(Problem::of(field, "is missing"));
            None
        }
        Some(Value::String(s)) if s.trim().is_empty() => {
            problems.push(Problem::of(field, "must not be empty"));
            None
        }
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => {
            problems.push(Problem::of(field, "must be a string"));
            None
        }
    }
}

fn optional_text(
    map: &serde_json::Map<String, Value>,
    field: &str,
    problems: &mut Vec<Problem>,
) -> Option<String> {
    match map.get(field) {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => {
            problems.push(Problem::of(field, "must be a string"));
            None
        }
    }
}

/// What is wrong with `name` as the name of the skill in `folder`.
pub fn name_problems(name: &str, folder: &str) -> Vec<Problem> {
    let mut out = Vec::new();
    let chars = name.chars().count();
    if chars > MAX_NAME {
        out.push(Problem::of(
            "name",
            format!("is {chars} characters; at most {MAX_NAME}"),
        ));
    }
    if let Some(bad) = name
        .chars()
        .find(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-'))
    {
        out.push(Problem::of(
            "name",
            format!(
                "may hold only lowercase letters a-z, digits and hyphens; `{bad}` is not allowed"
            ),
        ));
    }
    if name.starts_with('-') || name.ends_with('-') {
        out.push(Problem::of("name", "must not start or end with a hyphen"));
    }
    if name.contains("--") {
        out.push(Problem::of("name", "must not hold two hyphens in a row"));
    }
    if name != folder {
        out.push(Problem::of(
            "name",
            format!("`{name}` must equal the folder's name `{folder}`"),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problems(text: &str, folder: &str) -> Vec<String> {
        match parse(text, folder) {
            Ok(_) => Vec::new(),
            Err(p) => p.iter().map(ToString::to_string).collect(),
        }
    }

    #[test]
    fn a_valid_skill_parses_with_every_optional_field() {
        let text = "---\nname: pdf-tools\ndescription: Fill PDF forms.\nlicense: MIT\ncompatibility: needs nothing\nmetadata:\n  author: me\nallowed-tools: read_file list_files\nextra: 1\n---\n\n# PDF\nDo it.\n";
        let (m, body) = parse(text, "pdf-tools").expect("valid");
        assert_eq!(m.name, "pdf-tools");
        assert_eq!(m.description, "Fill PDF forms.");
        assert_eq!(m.license.as_deref(), Some("MIT"));
        assert_eq!(m.metadata.get("author").map(String::as_str), Some("me"));
        assert_eq!(
            m.allowed_tools,
            Some(vec!["read_file".to_owned(), "list_files".to_owned()])
        );
        assert_eq!(m.unknown, vec!["extra".to_owned()]);
        assert_eq!(body, "# PDF\nDo it.\n");
    }

    /// A hostile front-matter (an alias bomb, a huge nesting) is refused,
    /// not expanded.
    #[test]
    fn hostile_yaml_is_refused_not_expanded() {
        let mut bomb =
            String::from("---\nname: a\ndescription: x\nl0: &l0 [x, x, x, x, x, x, x, x, x, x]\n");
        for i in 1..12 {
            let refs = vec![format!("*l{}", i - 1); 10].join(", ");
            bomb.push_str(&format!("l{i}: &l{i} [{refs}]\n"));
        }
        bomb.push_str("---\n");
        let p = problems(&bomb, "a");
        assert_eq!(p.len(), 1, "{p:?}");
        assert!(
            p[0].starts_with("has front-matter that is not valid YAML"),
            "{p:?}"
        );
        let deep = format!(
            "---\nname: a\ndescription: x\nd: {}{}\n---\n",
            "[".repeat(10_000),
            "]".repeat(10_000)
        );
        let p = problems(&deep, "a");
        assert!(
            p[0].starts_with("has front-matter that is not valid YAML"),
            "{p:?}"
        );
    }

    #[test]
    fn each_rule_has_its_message() {
        let fm = |fields: &str| format!("---\n{fields}\n---\nbody\n");
        assert_eq!(
            problems("# no front matter", "a"),
            [
                "has no front-matter: SKILL.md must start with a `---` line, the YAML fields, and another `---` line"
            ]
        );
        assert_eq!(
            problems("---\nname: a\n", "a"),
            ["has an unterminated front-matter: no closing `---` line"]
        );
        assert_eq!(problems(&fm("description: x"), "a"), ["`name` is missing"]);
        assert_eq!(problems(&fm("name: a"), "a"), ["`description` is missing"]);
        assert_eq!(
            problems(&fm("name: a\ndescription: '  '"), "a"),
            ["`description` must not be empty"]
        );
        assert_eq!(
            problems(&fm("name: 12\ndescription: x"), "a"),
            ["`name` must be a string"]
        );
        assert_eq!(
            problems(&fm("name: Bad_Name\ndescription: x"), "Bad_Name"),
            ["`name` may hold only lowercase letters a-z, digits and hyphens; `B` is not allowed"]
        );
        assert_eq!(
            problems(&fm("name: -a\ndescription: x"), "-a"),
            ["`name` must not start or end with a hyphen"]
        );
        assert_eq!(
            problems(&fm("name: a--b\ndescription: x"), "a--b"),
            ["`name` must not hold two hyphens in a row"]
        );
        assert_eq!(
            problems(&fm("name: a\ndescription: x"), "b"),
            ["`name` `a` must equal the folder's name `b`"]
        );
        let long = "a".repeat(65);
        assert_eq!(
            problems(&fm(&format!("name: {long}\ndescription: x")), &long),
            ["`name` is 65 characters; at most 64"]
        );
        let desc = "d".repeat(1025);
        assert_eq!(
            problems(&fm(&format!("name: a\ndescription: {desc}")), "a"),
            ["`description` is 1025 characters; at most 1024"]
        );
        let compat = "c".repeat(501);
        assert_eq!(
            problems(
                &fm(&format!("name: a\ndescription: x\ncompatibility: {compat}")),
                "a"
            ),
            ["`compatibility` is 501 characters; at most 500"]
        );
        assert_eq!(
            problems(&fm("name: a\ndescription: x\nmetadata: [1]"), "a"),
            ["`metadata` must be a map of strings to strings"]
        );
        assert_eq!(
            problems(&fm("name: a\ndescription: x\nmetadata:\n  n: 1"), "a"),
            ["`metadata` must map strings to strings; `n` is not a string"]
        );
        assert_eq!(
            problems(&fm("name: a\ndescription: x\nallowed-tools: {a: 1}"), "a"),
            ["`allowed-tools` must be a space-separated string or a list of tool names"]
        );
        assert_eq!(
            problems(&fm("name: a\ndescription: x\nlicense: [MIT]"), "a"),
            ["`license` must be a string"]
        );
        assert_eq!(
            problems(&fm("- a\n- b"), "a"),
            ["has front-matter that is not a YAML mapping of fields"]
        );
        assert!(
            problems(&fm("name: [a"), "a")[0]
                .starts_with("has front-matter that is not valid YAML")
        );
    }
}
