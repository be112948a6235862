//! Unit tests for the secret guard's decision logic. Every credential here
//! is fake: built at run time from a fixed alphabet, only pattern-valid.

use super::*;
use serde_json::json;

/// A deterministic fake token body of `n` alphanumeric characters.
fn fake(n: usize) -> String {
    "aB3dE5gH7jK9mN1pQ2rS4tU6vW8xY0zC"
        .chars()
        .cycle()
        .take(n)
        .collect()
}

/// A fake AWS access key id.
fn aws_key_id() -> String {
    format!("AKIA{}", "ABCDEFGHIJKLMNOP")
}

/// A fake AWS temporary access key id.
fn aws_temp_key_id() -> String {
    format!("ASIA{}", "QRSTUVWXYZ234567")
}

/// `decide` for `write_to_file` of `content` into `src/app.rs`.
fn write(content: &str) -> Decision {
    let args = json!({ "path": "src/app.rs", "content": content }).to_string();
    decide(
        "write_to_file",
        true,
        true,
        &args,
        &["src/app.rs".to_owned()],
    )
}

/// The refusal reason, failing the test on `Allow`.
fn reason(d: Decision) -> String {
    match d {
        Decision::Deny(r) => r,
        Decision::Allow => panic!("expected a refusal, got Allow"),
    }
}

/// Asserts that writing `secret` (inside some code) is refused, that the
/// reason names `kind` and does not echo the secret.
fn assert_detected(secret: &str, kind: &str) {
    let content = format!("fn main() {{\n    let k = \"{secret}\";\n}}\n");
    let r = reason(write(&content));
    assert!(r.contains(kind), "reason {r:?} should name {kind:?}");
    assert!(
        r.contains("`content`, line 2"),
        "reason {r:?} should say where"
    );
    assert!(
        r.contains("`write_to_file`"),
        "reason {r:?} should name the tool"
    );
    assert!(!r.contains(secret), "reason {r:?} leaks the secret");
}

#[test]
fn every_pem_private_key_kind_is_detected() {
    for label in ["", "RSA ", "EC ", "DSA ", "OPENSSH ", "ENCRYPTED ", "PGP "] {
        let pem = format!(
            "-----BEGIN {label}PRIVATE KEY-----\n{}\n-----END {label}PRIVATE KEY-----\n",
            fake(64)
        );
        let r = reason(write(&format!("// key\n{pem}")));
        assert!(r.contains("a private key (PEM)"), "{label:?}: {r}");
        assert!(r.contains("line 2"), "{label:?}: {r}");
        assert!(!r.contains(&fake(64)), "{r}");
    }
    let pgp = format!("-----BEGIN PGP PRIVATE KEY BLOCK-----\n{}\n", fake(64));
    assert!(reason(write(&pgp)).contains("a private key (PEM)"));
}

#[test]
fn aws_access_key_ids_are_detected() {
    assert_detected(&aws_key_id(), "an AWS access key id");
    assert_detected(&aws_temp_key_id(), "an AWS access key id");
}

#[test]
fn aws_secret_access_keys_are_detected_in_config_and_code() {
    let secret = format!("{}/+{}", fake(20), fake(18));
    assert_eq!(secret.len(), 40);
    for content in [
        format!("[default]\naws_secret_access_key = {secret}\n"),
        format!("[default]\nAWS_SECRET_ACCESS_KEY: \"{secret}\"\n"),
        format!("env:\n  Aws_Secret_Access_Key='{secret}'\n"),
    ] {
        let r = reason(write(&content));
        assert!(
            r.contains("an AWS secret access key (`content`, line 2)"),
            "{r}"
        );
        assert!(!r.contains(&secret), "{r}");
    }
}

#[test]
fn gcp_service_account_json_is_detected() {
    let sa = format!(
        "{{\n  \"type\": \"service_account\",\n  \"project_id\": \"demo\",\n  \"private_key_id\": \"{}\",\n  \"private_key\": \"MII{}\"\n}}\n",
        fake(40),
        fake(40)
    );
    let r = reason(write(&sa));
    assert!(
        r.contains("a GCP service-account key (`content`, line 2)"),
        "{r}"
    );
    assert!(!r.contains(&fake(40)), "{r}");
}

#[test]
fn service_account_type_without_a_private_key_is_allowed() {
    let doc = "{\n  \"type\": \"service_account\",\n  \"client_email\": \"bot@demo.iam\"\n}\n";
    assert_eq!(write(doc), Decision::Allow);
}

#[test]
fn github_tokens_are_detected() {
    for prefix in ["ghp_", "gho_", "ghu_", "ghs_", "ghr_"] {
        assert_detected(&format!("{prefix}{}", fake(36)), "a GitHub token");
    }
    assert_detected(
        &format!("github_pat_{}_{}", fake(22), fake(30)),
        "a GitHub token",
    );
}

#[test]
fn slack_tokens_are_detected() {
    for prefix in ["xoxb-", "xoxa-", "xoxp-", "xoxr-", "xoxs-"] {
        assert_detected(&format!("{prefix}1234567890-{}", fake(12)), "a Slack token");
    }
}

#[test]
fn openai_keys_are_detected() {
    assert_detected(&format!("sk-{}", fake(48)), "an OpenAI API key");
    assert_detected(
        &format!("sk-proj-{}_{}", fake(30), fake(20)),
        "an OpenAI API key",
    );
}

#[test]
fn anthropic_keys_are_detected_as_anthropic_only() {
    let key = format!("sk-ant-api03-{}-{}", fake(40), fake(20));
    assert_detected(&key, "an Anthropic API key");
    let r = reason(write(&key));
    assert!(!r.contains("OpenAI"), "{r}");
    assert_eq!(find_secrets(&key).len(), 1);
}

#[test]
fn stripe_live_keys_are_detected() {
    assert_detected(&format!("sk_live_{}", fake(24)), "a Stripe live key");
    assert_detected(&format!("rk_live_{}", fake(24)), "a Stripe live key");
}

#[test]
fn google_api_keys_are_detected() {
    assert_detected(&format!("AIza{}_{}", fake(30), fake(4)), "a Google API key");
}

#[test]
fn ordinary_code_is_allowed() {
    let code = r#"
/// Client settings.
pub struct Config {
    pub api_key: String,
    pub secret: Option<String>,
    pub aws_secret_access_key: String,
}

fn load() -> Config {
    // Never hard-code the PRIVATE KEY; read it from the environment.
    let api_key = std::env::var("OPENAI_API_KEY").unwrap_or_default();
    let aws_secret_access_key = std::env::var("AWS_SECRET_ACCESS_KEY").unwrap_or_default();
    let task = "sk-short";
    let ask = "risk-assessment-for-the-whole-quarter-2024";
    let key_name = "AKIA"; // prefix only
    let stripe = "sk_test_abcdefghijklmnopqrstuvwx";
    Config { api_key, secret: None, aws_secret_access_key }
}
"#;
    assert_eq!(write(code), Decision::Allow);
}

#[test]
fn prose_and_public_material_are_allowed() {
    for text in [
        "Put your PRIVATE KEY in a secret manager, never in the repo.",
        "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA\n-----END PUBLIC KEY-----\n",
        "-----BEGIN CERTIFICATE-----\nMIIDdzCCAl+gAwIBAgIEAgAAuTANBgkqhkiG9w0BAQUFADBa\n-----END CERTIFICATE-----\n",
        "Keys look like `sk-...` or `ghp_...`; set them as env vars.",
        "aws_secret_access_key = ${AWS_SECRET_ACCESS_KEY}",
        "AKIA is the prefix of long-term access key ids",
        "akiaabcdefghijklmnop lowercase is not a key id",
    ] {
        assert_eq!(write(text), Decision::Allow, "{text:?}");
    }
}

#[test]
fn line_numbers_point_at_each_finding() {
    let content = format!(
        "a\nb\nid = \"{}\"\nc\ntoken = \"ghp_{}\"\nother = \"{}\"\n",
        aws_key_id(),
        fake(36),
        aws_temp_key_id(),
    );
    let r = reason(write(&content));
    assert!(
        r.contains(
            "an AWS access key id (`content`, lines 3, 6) and a GitHub token (`content`, line 5)"
        ),
        "{r}"
    );
}

#[test]
fn many_findings_are_summarised() {
    let content = [
        aws_key_id(),
        format!("ghp_{}", fake(36)),
        format!("xoxb-1234567890-{}", fake(12)),
        format!("sk-{}", fake(30)),
        format!("sk_live_{}", fake(24)),
        format!("AIza{}", fake(35)),
        format!("sk-ant-{}", fake(30)),
    ]
    .join("\n");
    let r = reason(write(&content));
    assert!(r.contains("and 2 more"), "{r}");
}

#[test]
fn apply_diff_search_half_with_a_secret_is_allowed() {
    let diff = format!(
        "<<<<<<< SEARCH\n:start_line:3\n-------\nlet key = \"{}\";\n=======\nlet key = std::env::var(\"AWS_ACCESS_KEY_ID\")?;\n>>>>>>> REPLACE\n",
        aws_key_id()
    );
    let args = json!({ "path": "src/app.rs", "diff": diff }).to_string();
    let d = decide("apply_diff", true, true, &args, &["src/app.rs".to_owned()]);
    assert_eq!(d, Decision::Allow);
}

#[test]
fn apply_diff_replace_half_adding_a_secret_is_denied() {
    let token = format!("ghp_{}", fake(40));
    let diff = format!(
        "<<<<<<< SEARCH\n:start_line:1\n-------\na\n=======\na\n>>>>>>> REPLACE\n\n<<<<<<< SEARCH\nlet t = env_token();\n=======\nlet t = \"{token}\";\n>>>>>>> REPLACE\n"
    );
    let args = json!({ "path": "src/app.rs", "diff": diff }).to_string();
    let r = reason(decide(
        "apply_diff",
        true,
        true,
        &args,
        &["src/app.rs".to_owned()],
    ));
    assert!(r.contains("a GitHub token (`diff`, line 12)"), "{r}");
    assert!(r.contains("`apply_diff`"), "{r}");
    assert!(!r.contains(&token), "{r}");
}

#[test]
fn apply_diff_without_blocks_is_scanned_whole() {
    let diff = format!("+let key = \"{}\";\n", aws_key_id());
    let args = json!({ "path": "src/app.rs", "diff": diff }).to_string();
    let d = decide("apply_diff", true, true, &args, &["src/app.rs".to_owned()]);
    assert!(matches!(d, Decision::Deny(_)), "{d:?}");
}

#[test]
fn apply_diff_unterminated_replace_half_is_scanned() {
    let diff = format!("<<<<<<< SEARCH\na\n=======\n{}\n", aws_key_id());
    let args = json!({ "path": "src/app.rs", "diff": diff }).to_string();
    let r = reason(decide("apply_diff", true, true, &args, &[]));
    assert!(r.contains("(`diff`, line 4)"), "{r}");
}

#[test]
fn search_and_replace_checks_only_the_replacement() {
    let key = format!("sk-{}", fake(32));
    let removing = json!({ "path": "a.py", "search": key, "replace": "os.environ['KEY']" });
    let d = decide(
        "search_and_replace",
        true,
        true,
        &removing.to_string(),
        &["a.py".to_owned()],
    );
    assert_eq!(d, Decision::Allow);

    let adding = json!({ "path": "a.py", "search": "os.environ['KEY']", "replace": key });
    let r = reason(decide(
        "search_and_replace",
        true,
        true,
        &adding.to_string(),
        &["a.py".to_owned()],
    ));
    assert!(r.contains("an OpenAI API key (`replace`, line 1)"), "{r}");
}

#[test]
fn insert_content_is_scanned() {
    let args = json!({ "path": "a.rs", "line": 4, "content": format!("// {}", aws_key_id()) });
    let d = decide(
        "insert_content",
        true,
        true,
        &args.to_string(),
        &["a.rs".to_owned()],
    );
    assert!(matches!(d, Decision::Deny(_)), "{d:?}");
}

#[test]
fn declared_paths_are_not_scanned_as_content() {
    // A file whose name happens to look like a key id is not a credential.
    let weird = format!("keys/{}.txt", aws_key_id());
    let args = json!({ "target": weird, "content": "hello" }).to_string();
    assert_eq!(
        decide(
            "write_to_file",
            true,
            true,
            &args,
            std::slice::from_ref(&weird)
        ),
        Decision::Allow
    );
    let args = json!({ "path": weird, "content": "hello" }).to_string();
    assert_eq!(
        decide("write_to_file", true, true, &args, &[]),
        Decision::Allow
    );
    // The same string under another key is content.
    let args = json!({ "note": weird, "content": "hello" }).to_string();
    assert!(matches!(
        decide("write_to_file", true, true, &args, &[]),
        Decision::Deny(_)
    ));
}

#[test]
fn nested_arrays_and_objects_are_scanned() {
    let args = json!({
        "files": [
            { "path": "a.txt", "content": "fine" },
            { "path": "b.txt", "content": format!("x\n{}", aws_key_id()) },
        ],
        "meta": { "tags": ["ok", format!("xoxp-1234567890-{}", fake(10))] },
    })
    .to_string();
    let r = reason(decide("write_files", true, true, &args, &[]));
    assert!(
        r.contains("an AWS access key id (`files[1].content`, line 2)"),
        "{r}"
    );
    assert!(r.contains("a Slack token (`meta.tags[1]`, line 1)"), "{r}");
}

#[test]
fn malformed_args_are_scanned_raw() {
    let args = format!("{{\"path\": \"a.rs\", \"content\": \"{}", aws_key_id());
    let r = reason(decide("write_to_file", true, true, &args, &[]));
    assert!(
        r.contains("an AWS access key id (`arguments`, line 1)"),
        "{r}"
    );
    assert_eq!(
        decide("write_to_file", true, true, "{not json", &[]),
        Decision::Allow
    );
}

#[test]
fn malformed_args_still_check_paths() {
    let d = decide("write_to_file", true, true, "{oops", &[".env".to_owned()]);
    assert!(matches!(d, Decision::Deny(_)), "{d:?}");
}

#[test]
fn non_object_json_is_scanned() {
    let args = json!([format!("sk_live_{}", fake(24))]).to_string();
    let r = reason(decide("weird_tool", true, true, &args, &[]));
    assert!(r.contains("a Stripe live key (`[0]`, line 1)"), "{r}");
    let args = json!(format!("sk_live_{}", fake(24))).to_string();
    let r = reason(decide("weird_tool", true, true, &args, &[]));
    assert!(r.contains("a Stripe live key (`arguments`, line 1)"), "{r}");
}

#[test]
fn env_files_are_denied() {
    for path in [
        ".env",
        ".env.local",
        "config/.env.production",
        ".envrc",
        "./.env",
        "apps/web/.ENV",
        "deploy\\.env.staging",
    ] {
        let args = json!({ "path": path, "content": "DEBUG=1\n" }).to_string();
        let r = reason(decide(
            "write_to_file",
            true,
            true,
            &args,
            &[path.to_owned()],
        ));
        assert!(r.contains(&format!("`{path}`")), "{r}");
        assert!(r.contains("environment file"), "{r}");
    }
}

#[test]
fn every_env_path_is_listed() {
    let paths = vec![
        "src/a.rs".to_owned(),
        ".env".to_owned(),
        "web/.env.local".to_owned(),
    ];
    let r = reason(decide("move_files", true, true, "{}", &paths));
    assert!(r.contains("`.env` and `web/.env.local`"), "{r}");
    assert!(!r.contains("src/a.rs"), "{r}");
}

#[test]
fn env_like_names_are_not_env_files() {
    for path in [
        "environment.ts",
        "src/env.rs",
        "docs/.environment-notes/../x.md",
        ".github/workflows/ci.yml",
        "src/dotenv.rs",
        "env/.gitkeep",
    ] {
        assert!(!is_env_file(path), "{path}");
    }
    assert!(is_env_file("dir/.env/"));
}

#[test]
fn reads_are_always_allowed() {
    let args = json!({ "path": ".env", "content": aws_key_id() }).to_string();
    assert_eq!(
        decide("read_file", false, false, &args, &[".env".to_owned()]),
        Decision::Allow
    );
    let args = json!({ "regex": aws_key_id(), "path": "." }).to_string();
    assert_eq!(
        decide("search_files", false, false, &args, &[".".to_owned()]),
        Decision::Allow
    );
}

#[test]
fn destructive_calls_outside_the_edit_group_are_checked() {
    let args = json!({ "command": format!("echo {} >> creds", aws_key_id()) }).to_string();
    let d = decide("execute_command", false, true, &args, &[]);
    assert!(matches!(d, Decision::Deny(_)), "{d:?}");
}

#[test]
fn clean_edits_are_allowed() {
    assert_eq!(write("fn main() { println!(\"hi\"); }\n"), Decision::Allow);
    assert_eq!(
        decide("write_to_file", true, true, "{}", &[]),
        Decision::Allow
    );
    assert_eq!(
        decide("write_to_file", true, true, "", &[]),
        Decision::Allow
    );
}

#[test]
fn find_secrets_reports_kinds_and_lines_in_order() {
    let text = format!("x\nghp_{}\n{}\n", fake(36), aws_key_id());
    let found = find_secrets(&text);
    let seen: Vec<(&str, usize)> = found.iter().map(|f| (f.kind, f.line)).collect();
    assert_eq!(
        seen,
        vec![("a GitHub token", 2), ("an AWS access key id", 3)]
    );
}

#[test]
fn every_detector_compiles() {
    assert_eq!(roost_secrets::detector_count(), 11);
}

#[test]
fn prompt_contribution_states_the_rule() {
    assert!(PROMPT_CONTRIBUTION.contains("credentials"));
    assert!(PROMPT_CONTRIBUTION.contains(".env"));
    assert!(PROMPT_CONTRIBUTION.contains("refused"));
}
