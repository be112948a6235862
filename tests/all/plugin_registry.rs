//! Plugins from an OCI registry: published by `roost plugin publish` to a
//! real registry (the CNCF distribution registry on 127.0.0.1), installed
//! by tag and by digest with every check a local install makes, followed
//! by `outdated` and `upgrade` (a wider grant asked again), and refused —
//! nothing half-installed — from hostile registries: a proxy in front of
//! the real one that moves tags, inflates, corrupts, retypes, redirects,
//! trickles and stalls.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::cli::roost;
use crate::plugin_install::{
    installed, ok, plugin_dir, plugin_files, refused, result_of, run_task,
};
use roost_tests::fixture_wasm;
use roost_tests::registry::{Action, Proxy, Registry, Response, docker_login};

/// A config that lets `roost` reach `registries` over plain HTTP, with
/// short transfer bounds (so a stalled transfer fails in a second).
pub(crate) fn config(root: &Path, registries: &[String]) -> PathBuf {
    config_with(root, registries, "")
}

/// [`config`] with `extra` lines in its `[plugins]` table.
pub(crate) fn config_with(root: &Path, registries: &[String], extra: &str) -> PathBuf {
    let list = registries
        .iter()
        .map(|r| format!("\"{r}\""))
        .collect::<Vec<_>>()
        .join(", ");
    std::fs::create_dir_all(root).expect("config dir");
    let path = root.join(format!("config-{}-{}.toml", registries.len(), extra.len()));
    std::fs::write(
        &path,
        format!(
            "[plugins]\ninsecure_registries = [{list}]\n{extra}\n[plugins.transfer]\nstall_secs = 2\ngrace_secs = 3\nmin_bytes_per_sec = 20000\n"
        ),
    )
    .expect("config");
    path
}

/// `roost` on `data` with `config`, and Docker's config at `docker` (an
/// empty one unless a test writes a login there).
pub(crate) fn roost_with(data: &Path, config: &Path, docker: &Path) -> Command {
    let mut c = roost(data);
    c.env("ROOST_CONFIG", config).env("DOCKER_CONFIG", docker);
    c
}

/// The one installed plugin's `list --json` entry.
pub(crate) fn listed(data: &Path, config: &Path, docker: &Path) -> serde_json::Value {
    let o = roost_with(data, config, docker)
        .args(["plugin", "list", "--json"])
        .output()
        .expect("list");
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    v[0].clone()
}

/// The digest `publish` printed (`published oci://…@sha256:…`).
pub(crate) fn published_digest(out: &str) -> String {
    out.lines()
        .find_map(|l| l.strip_prefix("published "))
        .and_then(|l| l.rsplit_once('@'))
        .map(|(_, d)| d.trim().to_owned())
        .unwrap_or_else(|| panic!("no digest in {out}"))
}

#[test]
fn publish_install_by_tag_and_digest_then_outdated_and_upgrade() {
    let dir = tempfile::tempdir().expect("tempdir");
    let reg = Registry::start();
    let conf = config(dir.path(), &[reg.host()]);
    let docker = dir.path().join("docker");
    let data = dir.path().join("data");
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).expect("ws");
    std::fs::write(ws.join("notes.txt"), "hello from the workspace").expect("notes");
    let component = fixture_wasm("conformance-rs");
    let v1 = plugin_dir(
        dir.path(),
        "notes",
        "1.0.0",
        &component,
        "read = \"workspace\"\nwrite = false",
        None,
    );
    let tag = format!("oci://{}/roost/notes:1", reg.host());

    // Published, then installed by its tag: shown with where it is from.
    let out = ok(&roost_with(&data, &conf, &docker)
        .args(["plugin", "publish"])
        .arg(&v1)
        .arg(&tag)
        .output()
        .expect("publish"));
    let d1 = published_digest(&out);
    let shown = ok(&roost_with(&data, &conf, &docker)
        .args(["plugin", "install", "--yes", &tag])
        .output()
        .expect("install"));
    assert!(
        shown.contains(&format!("from: {tag}")) && shown.contains(&d1),
        "{shown}"
    );
    let p = listed(&data, &conf, &docker);
    assert_eq!(
        (p["source"].as_str(), p["digest"].as_str()),
        (Some(tag.as_str()), Some(d1.as_str()))
    );
    assert_eq!(p["version"], "1.0.0");
    // It is the component that was published, and a task uses it with
    // its grant (read yes, write no).
    let sha = roost_core::install::sha256_hex(&std::fs::read(&component).expect("component"));
    assert_eq!(p["sha256"], sha.as_str());
    let events = run_task(&data, &ws);
    assert!(
        result_of(&events, "read_text").contains("hello from the workspace"),
        "{events}"
    );
    assert!(
        result_of(&events, "write_text").contains("not granted write access"),
        "{events}"
    );

    // Installed by digest into another data dir: the same plugin.
    let other = dir.path().join("other");
    let by_digest = format!("oci://{}/roost/notes@{d1}", reg.host());
    ok(&roost_with(&other, &conf, &docker)
        .args(["plugin", "install", "--yes", &by_digest])
        .output()
        .expect("install by digest"));
    assert_eq!(listed(&other, &conf, &docker)["digest"], d1.as_str());
    // A digest the registry does not have is refused, nothing installed.
    let missing = format!("oci://{}/roost/notes@sha256:{}", reg.host(), "0".repeat(64));
    let t = refused(
        &roost_with(&dir.path().join("third"), &conf, &docker)
            .args(["plugin", "install", "--yes", &missing])
            .output()
            .expect("install missing"),
    );
    assert!(t.contains("404") || t.contains("MANIFEST_UNKNOWN"), "{t}");

    // Nothing newer yet.
    let up = ok(&roost_with(&data, &conf, &docker)
        .args(["plugin", "outdated"])
        .output()
        .expect("outdated"));
    assert!(up.contains("up to date"), "{up}");

    // Version 2, asking to write, published at the same tag.
    let v2 = plugin_dir(
        dir.path(),
        "notes",
        "2.0.0",
        &component,
        "read = \"workspace\"\nwrite = true",
        None,
    );
    let d2 = published_digest(&ok(&roost_with(&data, &conf, &docker)
        .args(["plugin", "publish"])
        .arg(&v2)
        .arg(&tag)
        .output()
        .expect("publish 2")));
    assert_ne!(d1, d2);
    let o = roost_with(&data, &conf, &docker)
        .args(["plugin", "outdated", "--json"])
        .output()
        .expect("outdated");
    let rows: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(rows[0]["latest"], d2.as_str(), "{rows}");
    assert_eq!(rows[0]["installed"], d1.as_str(), "{rows}");

    // The upgrade follows the recorded tag; the wider grant is refused
    // without approval and version 1 keeps working.
    let t = refused(
        &roost_with(&data, &conf, &docker)
            .args(["plugin", "upgrade", "notes"])
            .output()
            .expect("upgrade"),
    );
    assert!(
        t.contains("+ write") && t.contains("1.0.0 keeps working"),
        "{t}"
    );
    assert_eq!(listed(&data, &conf, &docker)["digest"], d1.as_str());
    ok(&roost_with(&data, &conf, &docker)
        .args(["plugin", "upgrade", "notes", "--yes"])
        .output()
        .expect("upgrade yes"));
    let p = listed(&data, &conf, &docker);
    assert_eq!(
        (p["version"].as_str(), p["digest"].as_str()),
        (Some("2.0.0"), Some(d2.as_str()))
    );
    assert_eq!(p["source"], tag.as_str());
    run_task(&data, &ws);
    assert_eq!(
        std::fs::read_to_string(ws.join("out.txt")).expect("written"),
        "written"
    );

    // Another source (a path, another repository) is refused unless asked.
    let t = refused(
        &roost_with(&data, &conf, &docker)
            .args(["plugin", "upgrade", "notes", "--yes"])
            .arg(&v1)
            .output()
            .expect("upgrade from a path"),
    );
    assert!(
        t.contains("another source") && t.contains("--switch-source"),
        "{t}"
    );
    let elsewhere = format!("oci://{}/someone/notes:1", reg.host());
    let t = refused(
        &roost_with(&data, &conf, &docker)
            .args(["plugin", "upgrade", "notes", "--yes", &elsewhere])
            .output()
            .expect("upgrade from another repository"),
    );
    assert!(t.contains("another source"), "{t}");
    assert_eq!(listed(&data, &conf, &docker)["digest"], d2.as_str());
    ok(&roost_with(&data, &conf, &docker)
        .args(["plugin", "upgrade", "notes", "--yes", "--switch-source"])
        .arg(&v1)
        .output()
        .expect("switch"));
    let p = listed(&data, &conf, &docker);
    assert_eq!(
        (p["version"].as_str(), p["digest"].as_str()),
        (Some("1.0.0"), Some(""))
    );

    // An installed name from a registry is refused like any other.
    let t = refused(
        &roost_with(&data, &conf, &docker)
            .args(["plugin", "install", "--yes", &tag])
            .output()
            .expect("again"),
    );
    assert!(t.contains("already installed"), "{t}");
    ok(&roost_with(&data, &conf, &docker)
        .args(["plugin", "remove", "notes"])
        .output()
        .expect("remove"));
    assert!(installed(&data).is_empty() && plugin_files(&data).is_empty());
}

#[test]
fn a_registry_login_goes_to_its_registry_only() {
    let dir = tempfile::tempdir().expect("tempdir");
    let reg = Registry::with_login("ada", "s3cret");
    // A token service on another origin, which must never see the login.
    let elsewhere = roost_tests::http::Server::start(|_| roost_tests::http::reply(401, &[], "{}"));
    let realm = elsewhere.url("/token");
    let proxy = Proxy::start(reg.port, move |req, mut resp| {
        if req.path.contains("/bearer/") && req.header("authorization").is_none() {
            resp = Response::new(
                401,
                &[(
                    "Www-Authenticate",
                    &format!("Bearer realm=\"{realm}\",service=\"r\""),
                )],
                "{}",
            );
        }
        Action::Send(resp)
    });
    let conf = config(dir.path(), &[reg.host(), proxy.host()]);
    let docker = dir.path().join("docker");
    let data = dir.path().join("data");
    let component = fixture_wasm("conformance-rs");
    let v1 = plugin_dir(
        dir.path(),
        "notes",
        "1.0.0",
        &component,
        "read = \"workspace\"",
        None,
    );
    let tag = format!("oci://{}/roost/notes:1", reg.host());

    // No login: refused, saying how to give one.
    let t = refused(
        &roost_with(&data, &conf, &docker)
            .args(["plugin", "publish"])
            .arg(&v1)
            .arg(&tag)
            .output()
            .expect("publish"),
    );
    assert!(
        t.contains("asks for a user name and password") && t.contains("docker login"),
        "{t}"
    );
    // A wrong one: refused.
    docker_login(&docker, &reg.host(), "ada", "wrong");
    let t = refused(
        &roost_with(&data, &conf, &docker)
            .args(["plugin", "publish"])
            .arg(&v1)
            .arg(&tag)
            .output()
            .expect("publish"),
    );
    assert!(t.contains("refused the credentials"), "{t}");
    // The right one: published and installed.
    docker_login(&docker, &reg.host(), "ada", "s3cret");
    ok(&roost_with(&data, &conf, &docker)
        .args(["plugin", "publish"])
        .arg(&v1)
        .arg(&tag)
        .output()
        .expect("publish"));
    ok(&roost_with(&data, &conf, &docker)
        .args(["plugin", "install", "--yes", &tag])
        .output()
        .expect("install"));
    assert_eq!(installed(&data), ["notes"]);

    // The registry's login is not the proxy's: through the proxy (another
    // host:port) nothing is sent, and the install is refused.
    let through = format!("oci://{}/roost/notes:1", proxy.host());
    let t = refused(
        &roost_with(&dir.path().join("d2"), &conf, &docker)
            .args(["plugin", "install", "--yes", &through])
            .output()
            .expect("install through the proxy"),
    );
    assert!(t.contains("asks for a user name and password"), "{t}");
    assert!(
        proxy
            .seen()
            .iter()
            .all(|r| r.header("authorization").is_none())
    );
    // A token service on another host gets no login either.
    let bearer = format!("oci://{}/bearer/notes:1", proxy.host());
    docker_login(&docker, &proxy.host(), "ada", "s3cret");
    let t = refused(
        &roost_with(&dir.path().join("d3"), &conf, &docker)
            .args(["plugin", "install", "--yes", &bearer])
            .output()
            .expect("install with a foreign token service"),
    );
    assert!(t.contains("token service answered 401"), "{t}");
    let asked = elsewhere.received();
    assert!(!asked.is_empty(), "the token service was asked");
    assert!(
        asked.iter().all(|r| r.header("authorization").is_none()),
        "{asked:?}"
    );
}

/// Install `roost/notes:1` through `proxy` into `data`: refused, with
/// nothing installed or left behind; what was said.
fn refused_through(proxy: &Proxy, data: &Path, conf: &Path, docker: &Path) -> String {
    let t = refused(
        &roost_with(data, conf, docker)
            .args(["plugin", "install", "--yes"])
            .arg(format!("oci://{}/roost/notes:1", proxy.host()))
            .output()
            .expect("install"),
    );
    assert!(installed(data).is_empty(), "installed: {t}");
    assert!(plugin_files(data).is_empty(), "files left: {t}");
    t
}

/// The blob or manifest requests of a path.
fn is_manifest(req: &roost_tests::registry::Request) -> bool {
    req.method == "GET" && req.path.contains("/manifests/")
}

fn is_component_blob(req: &roost_tests::registry::Request, component_digest: &str) -> bool {
    req.method == "GET" && req.path.ends_with(&format!("/blobs/{component_digest}"))
}

/// A proxy's rule.
type RuleFn = Box<dyn Fn(&roost_tests::registry::Request, Response) -> Action + Send + Sync>;

/// A rule that rewrites the manifest the registry answers with `edit`
/// (dropping the registry's digest header, which would no longer match).
fn edit_manifest(edit: impl Fn(&mut serde_json::Value) + Send + Sync + 'static) -> RuleFn {
    Box::new(move |req, mut r| {
        if is_manifest(req) {
            let mut m: serde_json::Value = serde_json::from_slice(&r.body).expect("manifest");
            edit(&mut m);
            r.body = serde_json::to_vec(&m).expect("json");
            r.headers
                .retain(|(k, _)| !k.eq_ignore_ascii_case("docker-content-digest"));
        }
        Action::Send(r)
    })
}

#[test]
fn hostile_registries_are_refused_and_nothing_is_half_installed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let reg = Registry::start();
    let docker = dir.path().join("docker");
    let component = fixture_wasm("conformance-rs");
    let component_digest = format!(
        "sha256:{}",
        roost_core::install::sha256_hex(&std::fs::read(&component).expect("component"))
    );
    let v1 = plugin_dir(
        dir.path(),
        "notes",
        "1.0.0",
        &component,
        "read = \"workspace\"",
        None,
    );
    let v2 = plugin_dir(
        dir.path(),
        "notes",
        "2.0.0",
        &component,
        "read = \"workspace\"\nwrite = true",
        None,
    );
    let publish_conf = config(dir.path(), &[reg.host()]);
    let publish = |src: &Path, tag: &str| {
        published_digest(&ok(&roost_with(
            &dir.path().join("pub"),
            &publish_conf,
            &docker,
        )
        .args(["plugin", "publish"])
        .arg(src)
        .arg(format!("oci://{}/roost/notes:{tag}", reg.host()))
        .output()
        .expect("publish")))
    };
    let d1 = publish(&v1, "1");
    let d2 = publish(&v2, "2");

    // Each case: a proxy with a rule; the install through it is refused
    // with a message naming the fault, and nothing is installed.
    let cases: Vec<(&str, RuleFn, &str)> = vec![
        (
            "an endless manifest",
            Box::new(|req, mut r| {
                if is_manifest(req) {
                    r.body = vec![b' '; 5 * 1024 * 1024];
                }
                Action::Send(r)
            }),
            "larger than the 4194304-byte bound",
        ),
        (
            "a component larger than the bound, declared",
            edit_manifest(|m| {
                m["layers"][0]["size"] = serde_json::json!(1u64 << 40);
            }),
            "declares 1099511627776 bytes",
        ),
        (
            "a component whose bytes are not its digest's",
            {
                let cd = component_digest.clone();
                Box::new(move |req, mut r| {
                    if is_component_blob(req, &cd)
                        && let Some(b) = r.body.get_mut(100)
                    {
                        *b ^= 0xff;
                    }
                    Action::Send(r)
                })
            },
            "the registry sent content whose digest is",
        ),
        (
            "a manifest the registry names by another digest",
            Box::new(|req, mut r| {
                if is_manifest(req) {
                    r.set_header(
                        "Docker-Content-Digest",
                        &format!("sha256:{}", "1".repeat(64)),
                    );
                }
                Action::Send(r)
            }),
            "Docker-Content-Digest",
        ),
        (
            "a container image",
            edit_manifest(|m| {
                m["config"]["mediaType"] = "application/vnd.oci.image.config.v1+json".into();
            }),
            "it is a container image",
        ),
        (
            "a layer that is not part of a plugin",
            edit_manifest(|m| {
                m["layers"][1]["mediaType"] = "application/vnd.oci.image.layer.v1.tar+gzip".into();
            }),
            "not part of a plugin",
        ),
        (
            "an image index",
            Box::new(|req, mut r| {
                if is_manifest(req) {
                    r.set_header("Content-Type", "application/vnd.oci.image.index.v1+json");
                }
                Action::Send(r)
            }),
            "image index",
        ),
        (
            "a redirect to another origin",
            {
                let cd = component_digest.clone();
                Box::new(move |req, r| {
                    if is_component_blob(req, &cd) {
                        return Action::Send(Response::new(
                            307,
                            &[("Location", &format!("http://127.0.0.2:9/blobs/{cd}"))],
                            "",
                        ));
                    }
                    Action::Send(r)
                })
            },
            "another origin",
        ),
        (
            "a stalled transfer",
            {
                let cd = component_digest.clone();
                Box::new(move |req, r| {
                    if is_component_blob(req, &cd) {
                        return Action::Stall(r);
                    }
                    Action::Send(r)
                })
            },
            "sent nothing for",
        ),
        (
            "a transfer that trickles",
            {
                let cd = component_digest.clone();
                Box::new(move |req, r| {
                    if is_component_blob(req, &cd) {
                        return Action::Trickle(r, Duration::from_millis(50));
                    }
                    Action::Send(r)
                })
            },
            "a transfer must average",
        ),
    ];
    for (what, rule, says) in cases {
        let proxy = Proxy::start(reg.port, rule);
        let conf = config(dir.path(), &[reg.host(), proxy.host()]);
        let data = dir.path().join(what.replace(' ', "-"));
        let t = refused_through(&proxy, &data, &conf, &docker);
        assert!(t.contains(says), "{what}: {t}");
    }

    // A tag that moves between the manifest and the layers: the install is
    // the manifest it resolved (version 1 at d1), not a mix.
    let moved = std::sync::atomic::AtomicBool::new(false);
    let proxy = Proxy::start(reg.port, move |req, r| {
        if is_manifest(req)
            && req.path.ends_with("/manifests/1")
            && moved.swap(true, std::sync::atomic::Ordering::SeqCst)
        {
            // From the second manifest request on, the tag names v2.
            return Action::Send(Response::new(
                302,
                &[("Location", "/v2/roost/notes/manifests/2")],
                "",
            ));
        }
        Action::Send(r)
    });
    let conf = config(dir.path(), &[reg.host(), proxy.host()]);
    let data = dir.path().join("moved");
    ok(&roost_with(&data, &conf, &docker)
        .args(["plugin", "install", "--yes"])
        .arg(format!("oci://{}/roost/notes:1", proxy.host()))
        .output()
        .expect("install"));
    let p = listed(&data, &conf, &docker);
    assert_eq!(
        (p["version"].as_str(), p["digest"].as_str()),
        (Some("1.0.0"), Some(d1.as_str()))
    );
    assert_eq!(
        proxy
            .seen()
            .iter()
            .filter(|r| is_manifest(r) && r.path.ends_with("/manifests/1"))
            .count(),
        1,
        "the tag is resolved once"
    );
    // Asked again, the moved tag names version 2.
    let o = roost_with(&data, &conf, &docker)
        .args(["plugin", "outdated", "--json"])
        .output()
        .expect("outdated");
    let rows: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(rows[0]["latest"], d2.as_str(), "{rows}");
    // A registry that redirects in a circle is cut off.
    let circle = Proxy::start(reg.port, |req, r| {
        if is_manifest(req) {
            return Action::Send(Response::new(302, &[("Location", req.path.as_str())], ""));
        }
        Action::Send(r)
    });
    let conf2 = config(dir.path(), &[reg.host(), circle.host()]);
    let t = refused(
        &roost_with(&dir.path().join("circle"), &conf2, &docker)
            .args(["plugin", "install", "--yes"])
            .arg(format!("oci://{}/roost/notes:1", circle.host()))
            .output()
            .expect("install"),
    );
    assert!(t.contains("more than 5 redirects"), "{t}");
}

/// A registry plugin signed with Sigstore (stored as `cosign sign --key`
/// stores it) is verified offline against the cosign keys the config
/// trusts, and `require_signed` covers registry installs: unsigned, signed
/// by an untrusted key, or carrying a trusted signature made for other
/// content — each refused, nothing installed.
#[test]
fn a_cosign_signature_verifies_offline_and_require_signed_covers_registries() {
    use roost_tests::registry::{cosign_key, cosign_sign, cosign_sign_as};
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    let reg = Registry::start();
    let host = reg.host();
    let (trusted, trusted_pem) = cosign_key(7);
    let (stranger, _) = cosign_key(9);
    let public = root.join("acme-cosign.pub");
    std::fs::write(&public, &trusted_pem).expect("pub");
    let component = fixture_wasm("conformance-rs");
    let v1 = plugin_dir(
        &root.join("v1"),
        "notes",
        "1.0.0",
        &component,
        "read = \"workspace\"",
        None,
    );
    let v2 = plugin_dir(
        &root.join("v2"),
        "notes",
        "2.0.0",
        &component,
        "read = \"workspace\"",
        None,
    );
    let conf = config_with(
        root,
        std::slice::from_ref(&host),
        // Relative to the config's folder.
        "cosign_keys = { acme = \"acme-cosign.pub\" }",
    );
    assert!(public.starts_with(root));
    // A key that is missing or not a key is an error when the config loads.
    for (key, why) in [
        ("\"nowhere.pub\"", "nowhere.pub"),
        (
            "\"-----BEGIN PUBLIC KEY-----\\nAAAA\\n-----END PUBLIC KEY-----\"",
            "not an ECDSA P-256 public key",
        ),
    ] {
        let bad = config_with(
            &root.join(format!("bad-{}", key.len())),
            std::slice::from_ref(&host),
            &format!("cosign_keys = {{ x = {key} }}"),
        );
        let t = refused(
            &roost_with(&root.join("d0"), &bad, &root.join("docker"))
                .args(["plugin", "list"])
                .output()
                .expect("list"),
        );
        assert!(
            t.contains("plugins.cosign_keys.x") && t.contains(why),
            "{t}"
        );
    }
    let docker = root.join("docker");
    let publish = |src: &Path, tag: &str| {
        published_digest(&ok(&roost_with(&root.join("pub"), &conf, &docker)
            .args(["plugin", "publish"])
            .arg(src)
            .arg(format!("oci://{host}/roost/notes:{tag}"))
            .output()
            .expect("publish")))
    };
    let install = |data: &str, reference: &str, required: bool| {
        let mut c = roost_with(&root.join(data), &conf, &docker);
        c.args(["plugin", "install", "--yes", reference]);
        if required {
            c.arg("--require-signed");
        }
        c.output().expect("install")
    };
    let d1 = publish(&v1, "1");
    let tag1 = format!("oci://{host}/roost/notes:1");

    // Unsigned: refused when signatures are required.
    let t = refused(&install("d1", &tag1, true));
    assert!(
        t.contains("unsigned") && t.contains("no cosign signature in its registry"),
        "{t}"
    );
    assert!(installed(&root.join("d1")).is_empty());

    // Signed by the trusted key: verified, installed, the signer named.
    cosign_sign(&host, "roost/notes", &d1, &trusted);
    ok(&install("d1", &tag1, true));
    let p = listed(&root.join("d1"), &conf, &docker);
    assert_eq!(
        (p["signer"].as_str(), p["digest"].as_str()),
        (Some("acme"), Some(d1.as_str()))
    );

    // Signed by a key nobody trusts: refused when required, installed
    // (unsigned as far as Roost knows) when not.
    let d2 = publish(&v2, "2");
    cosign_sign(&host, "roost/notes", &d2, &stranger);
    let tag2 = format!("oci://{host}/roost/notes:2");
    let t = refused(&install("d2", &tag2, true));
    assert!(t.contains("not a trusted one"), "{t}");
    assert!(installed(&root.join("d2")).is_empty());
    ok(&install("d2", &tag2, false));
    assert_eq!(listed(&root.join("d2"), &conf, &docker)["signer"], "");

    // The trusted key's signature of version 1 stored as version 2's:
    // refused even when signatures are not required.
    cosign_sign_as(&host, "roost/notes", &d2, &d1, &trusted);
    let t = refused(&install("d3", &tag2, false));
    assert!(t.contains("not this artifact"), "{t}");
    assert!(installed(&root.join("d3")).is_empty() && plugin_files(&root.join("d3")).is_empty());

    // A registry whose signature manifest is not one, or carries more
    // signatures than are read: refused, nothing installed.
    for (body, why) in [
        (
            r#"{"layers": 5}"#.to_owned(),
            "signature manifest does not parse",
        ),
        (
            serde_json::json!({"layers": vec![serde_json::json!({
                "mediaType": "application/vnd.dev.cosign.simplesigning.v1+json",
                "digest": d1, "size": 10,
                "annotations": {"dev.cosignproject.cosign/signature": "AA=="}
            }); 17]})
            .to_string(),
            "more than the 16 read",
        ),
    ] {
        let proxy = Proxy::start(reg.port, move |req, r| {
            if req.path.contains("/manifests/sha256-") {
                return Action::Send(Response::new(
                    200,
                    &[("Content-Type", "application/vnd.oci.image.manifest.v1+json")],
                    body.clone(),
                ));
            }
            Action::Send(r)
        });
        let conf = config_with(
            &root.join(format!("p{}", why.len())),
            &[host.clone(), proxy.host()],
            &format!("cosign_keys = {{ acme = \"{}\" }}", public.display()),
        );
        let t = refused_through(&proxy, &root.join("d4"), &conf, &docker);
        assert!(t.contains(why), "{t}");
    }
}
