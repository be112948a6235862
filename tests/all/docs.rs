//! The documents a newcomer reads first: every link inside README.md and
//! BENCHMARKS.md to one of their own headings leads somewhere (the contents
//! and the benchmark summary are made of such links).

use std::collections::HashSet;
use std::path::Path;

/// GitHub's anchor for a heading: lowercase, punctuation dropped (hyphens
/// and underscores kept), spaces become hyphens; a repeated anchor gets
/// `-1`, `-2`, ….
fn anchors(markdown: &str) -> HashSet<String> {
    let mut seen = HashSet::new();
    let mut in_code = false;
    for line in markdown.lines() {
        if line.starts_with("```") {
            in_code = !in_code;
            continue;
        }
        if in_code || !line.starts_with('#') {
            continue;
        }
        let text = line.trim_start_matches('#').trim();
        let base: String = text
            .to_lowercase()
            .chars()
            .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
            .map(|c| if c == ' ' { '-' } else { c })
            .collect();
        let mut anchor = base.clone();
        let mut n = 0;
        while seen.contains(&anchor) {
            n += 1;
            anchor = format!("{base}-{n}");
        }
        seen.insert(anchor);
    }
    seen
}

/// The `(#anchor)` targets of a document's links.
fn links(markdown: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = markdown;
    while let Some(at) = rest.find("](#") {
        let tail = &rest[at + 3..];
        let Some(end) = tail.find(')') else { break };
        out.push(tail[..end].to_string());
        rest = &tail[end..];
    }
    out
}

#[test]
fn every_link_to_a_heading_of_the_same_document_leads_somewhere() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    for doc in ["README.md", "BENCHMARKS.md"] {
        let text = std::fs::read_to_string(root.join(doc)).unwrap();
        let known = anchors(&text);
        let found = links(&text);
        assert!(!found.is_empty(), "{doc} has no contents links");
        let broken: Vec<&String> = found.iter().filter(|a| !known.contains(*a)).collect();
        assert!(broken.is_empty(), "{doc}: links to no heading: {broken:?}");
    }
}

#[test]
fn the_readme_opens_with_its_contents_and_a_day_one_path() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let text = std::fs::read_to_string(root.join("README.md")).unwrap();
    let first_section = text.lines().find(|l| l.starts_with("## ")).unwrap();
    assert_eq!(first_section, "## Contents");
    assert!(text.contains("**Day one**"));
    let bench = std::fs::read_to_string(root.join("BENCHMARKS.md")).unwrap();
    let first = bench.lines().find(|l| l.starts_with("## ")).unwrap();
    assert_eq!(first, "## Where things stand");
}
