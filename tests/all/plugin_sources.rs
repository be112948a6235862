//! Plugins from the two other places a user names one: a `.tar.gz` on the
//! web, taken only at the SHA-256 its publisher gave (a real HTTP server
//! on 127.0.0.1 serves it, redirects it and loses it), and a name the
//! configured registries resolve — a plain `notes:1` looked up in
//! `[plugins] registries` in turn, and a package `roost:notes@0.1.0`
//! placed by wkg's config (its OCI namespace prefix, or the registry's
//! well-known metadata when it has none) on a real OCI registry.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::plugin_install::{installed, ok, plugin_dir, plugin_files, refused};
use crate::plugin_registry::{config_with, listed, published_digest, roost_with};
use roost_tests::fixture_wasm;
use roost_tests::http::{Server, reply, reply_bytes};
use roost_tests::registry::Registry;

/// `folder` packed as a `.tar.gz` beside it, as a publisher ships it.
fn pack(folder: &Path) -> Vec<u8> {
    let parent = folder.parent().expect("parent");
    let name = folder.file_name().expect("name");
    let archive = parent.join(format!("{}.tar.gz", name.to_string_lossy()));
    let status = Command::new("tar")
        .arg("-czf")
        .arg(&archive)
        .arg("-C")
        .arg(parent)
        .arg(name)
        .status()
        .expect("tar");
    assert!(status.success());
    std::fs::read(&archive).expect("archive")
}

/// `roost` on `data` with `config`, no Docker logins, and a config home of
/// its own (so no wkg config of the machine's is read).
fn roost_at(root: &Path, data: &Path, config: &Path) -> Command {
    let mut c = roost_with(data, config, &root.join("docker"));
    c.env("XDG_CONFIG_HOME", root.join("xdg"));
    c
}

fn sha(bytes: &[u8]) -> String {
    roost_core::install::sha256_hex(bytes)
}

#[test]
fn a_web_archive_installs_only_at_its_sha256_and_upgrades_from_its_site() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    let component = fixture_wasm("conformance-rs");
    let v1 = pack(&plugin_dir(
        root,
        "notes",
        "1.0.0",
        &component,
        "read = \"workspace\"",
        None,
    ));
    let v2 = pack(&plugin_dir(
        root,
        "notes",
        "2.0.0",
        &component,
        "read = \"workspace\"\nwrite = true",
        None,
    ));
    let (s1, s2) = (sha(&v1), sha(&v2));
    // Another site, which the first one redirects to once.
    let elsewhere = {
        let v1 = v1.clone();
        Server::start(move |_| reply_bytes(200, &[], &v1))
    };
    let away = elsewhere.url("/d/notes-1.tar.gz");
    let site = {
        let (v1, v2) = (v1.clone(), v2.clone());
        Server::start(move |req| match req.path.as_str() {
            "/d/notes-1.tar.gz" => reply_bytes(200, &[], &v1),
            "/d/notes-2.tar.gz" => reply_bytes(200, &[], &v2),
            "/same.tar.gz" => reply(302, &[("Location", "/d/notes-1.tar.gz")], ""),
            "/away.tar.gz" => reply(302, &[("Location", &away)], ""),
            _ => reply(404, &[], "not here"),
        })
    };
    let conf = config_with(root, &[], "");
    let data = root.join("data");
    let url1 = site.url("/d/notes-1.tar.gz");

    // Without its SHA-256: refused before anything is fetched.
    let t = refused(
        &roost_at(root, &data, &conf)
            .args(["plugin", "install", "--yes", &url1])
            .output()
            .expect("install"),
    );
    assert!(t.contains("--sha256"), "{t}");
    assert!(site.received().is_empty());
    // At another archive's SHA-256: fetched, refused, nothing installed.
    let t = refused(
        &roost_at(root, &data, &conf)
            .args(["plugin", "install", "--yes", &url1, "--sha256", &s2])
            .output()
            .expect("install"),
    );
    assert!(t.contains(&format!("not the {s2}")), "{t}");
    assert!(installed(&data).is_empty() && plugin_files(&data).is_empty());
    // A malformed hash, a hash for a registry reference: refused.
    let t = refused(
        &roost_at(root, &data, &conf)
            .args(["plugin", "install", "--yes", &url1, "--sha256", "abc"])
            .output()
            .expect("install"),
    );
    assert!(t.contains("64 hex digits"), "{t}");
    let t = refused(
        &roost_at(root, &data, &conf)
            .args([
                "plugin",
                "install",
                "--yes",
                "oci://127.0.0.1:1/x/notes:1",
                "--sha256",
                &s1,
            ])
            .output()
            .expect("install"),
    );
    assert!(t.contains("pins an archive from the web"), "{t}");

    // At its own: installed, recorded with its URL and hash.
    let shown = ok(&roost_at(root, &data, &conf)
        .args(["plugin", "install", "--yes", &url1, "--sha256", &s1])
        .output()
        .expect("install"));
    assert!(shown.contains("installed notes 1.0.0"), "{shown}");
    let p = listed(&data, &conf, &root.join("docker"));
    assert_eq!(p["source"], url1.as_str());
    assert_eq!(p["digest"], format!("sha256:{s1}").as_str());
    assert_eq!(
        p["sha256"],
        sha(&std::fs::read(&component).expect("c")).as_str()
    );
    let up = ok(&roost_at(root, &data, &conf)
        .args(["plugin", "outdated"])
        .output()
        .expect("outdated"));
    assert!(up.contains("pinned by its SHA-256"), "{up}");

    // An upgrade names the new archive and its hash; the wider grant is
    // asked for again; another site is another source.
    let t = refused(
        &roost_at(root, &data, &conf)
            .args(["plugin", "upgrade", "notes", "--yes"])
            .output()
            .expect("upgrade"),
    );
    assert!(t.contains("name the new version's archive"), "{t}");
    let url2 = site.url("/d/notes-2.tar.gz");
    let t = refused(
        &roost_at(root, &data, &conf)
            .args(["plugin", "upgrade", "notes", &url2, "--sha256", &s2])
            .output()
            .expect("upgrade"),
    );
    assert!(
        t.contains("+ write") && t.contains("1.0.0 keeps working"),
        "{t}"
    );
    let t = refused(
        &roost_at(root, &data, &conf)
            .args(["plugin", "upgrade", "notes", "--yes"])
            .arg(elsewhere.url("/d/notes-1.tar.gz"))
            .args(["--sha256", &s1])
            .output()
            .expect("upgrade"),
    );
    assert!(t.contains("another source"), "{t}");
    ok(&roost_at(root, &data, &conf)
        .args([
            "plugin", "upgrade", "notes", "--yes", &url2, "--sha256", &s2,
        ])
        .output()
        .expect("upgrade"));
    let p = listed(&data, &conf, &root.join("docker"));
    assert_eq!(
        (p["version"].as_str(), p["digest"].as_str()),
        (Some("2.0.0"), Some(format!("sha256:{s2}").as_str()))
    );

    // A redirect within the site is followed; one to another site, a
    // missing file and plain HTTP beyond this machine are refused.
    let other = root.join("other");
    ok(&roost_at(root, &other, &conf)
        .args(["plugin", "install", "--yes"])
        .arg(site.url("/same.tar.gz"))
        .args(["--sha256", &s1])
        .output()
        .expect("install"));
    for (url, why) in [
        (site.url("/away.tar.gz"), "another origin"),
        (site.url("/gone.tar.gz"), "404"),
        (
            "http://plugins.example.com/notes.tar.gz".to_owned(),
            "plain HTTP is not allowed",
        ),
    ] {
        let fresh = root.join("fresh");
        let t = refused(
            &roost_at(root, &fresh, &conf)
                .args(["plugin", "install", "--yes", &url, "--sha256", &s1])
                .output()
                .expect("install"),
        );
        assert!(t.contains(why), "{url}: {t}");
        assert!(installed(&fresh).is_empty() && plugin_files(&fresh).is_empty());
    }
    assert!(
        elsewhere.received().is_empty(),
        "the other site was never asked"
    );
}

/// Publish `folder` at `reference` (on a data dir of its own).
fn publish(root: &Path, conf: &Path, folder: &Path, reference: &str) -> String {
    published_digest(&ok(&roost_at(root, &root.join("pub"), conf)
        .args(["plugin", "publish"])
        .arg(folder)
        .arg(reference)
        .output()
        .expect("publish")))
}

#[test]
fn a_plugin_installs_by_name_through_the_configured_registries_and_wkg() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    let reg = Registry::start();
    let host = reg.host();
    let component = fixture_wasm("conformance-rs");
    let folder = |version: &str| -> PathBuf {
        plugin_dir(
            &root.join(version),
            "notes",
            version,
            &component,
            "read = \"workspace\"",
            None,
        )
    };
    let plain_conf = config_with(root, std::slice::from_ref(&host), "");
    // Names with no registries configured: refused, saying what to set.
    let t = refused(
        &roost_at(root, &root.join("d0"), &plain_conf)
            .args(["plugin", "install", "--yes", "notes:1"])
            .output()
            .expect("install"),
    );
    assert!(t.contains("[plugins] registries"), "{t}");

    // A plain name: looked up in each configured registry in turn.
    let team = publish(
        root,
        &plain_conf,
        &folder("1.0.0"),
        &format!("oci://{host}/team/notes:1"),
    );
    let wkg = root.join("wkg.toml");
    std::fs::write(
        &wkg,
        format!(
            "[namespace_registries.roost]\nregistry = \"packages.example\"\nmetadata = {{ oci = {{ registry = \"{host}\", namespacePrefix = \"wasm/\" }} }}\n"
        ),
    )
    .expect("wkg config");
    let conf = config_with(
        root,
        std::slice::from_ref(&host),
        &format!(
            "registries = [\"{host}/nobody\", \"{host}/team\"]\nwkg_config = \"{}\"",
            wkg.display()
        ),
    );
    let data = root.join("d1");
    ok(&roost_at(root, &data, &conf)
        .args(["plugin", "install", "--yes", "notes:1"])
        .output()
        .expect("install by name"));
    let p = listed(&data, &conf, &root.join("docker"));
    assert_eq!(p["source"], format!("oci://{host}/team/notes:1").as_str());
    assert_eq!(p["digest"], team.as_str());
    let t = refused(
        &roost_at(root, &root.join("d2"), &conf)
            .args(["plugin", "install", "--yes", "ghost"])
            .output()
            .expect("install"),
    );
    assert!(
        t.contains(&format!(
            "tried oci://{host}/nobody/ghost:latest, oci://{host}/team/ghost:latest"
        )),
        "{t}"
    );

    // A package name: where wkg's config places it, at the highest
    // released version, or the one named.
    for v in ["0.1.0", "0.2.0", "0.3.0-rc.1"] {
        publish(
            root,
            &plain_conf,
            &folder(v),
            &format!("oci://{host}/wasm/roost/notes:{v}"),
        );
    }
    let data = root.join("d3");
    ok(&roost_at(root, &data, &conf)
        .args(["plugin", "install", "--yes", "roost:notes"])
        .output()
        .expect("install a package"));
    let p = listed(&data, &conf, &root.join("docker"));
    assert_eq!(p["version"], "0.2.0");
    assert_eq!(
        p["source"],
        format!("oci://{host}/wasm/roost/notes:0.2.0").as_str()
    );
    let data = root.join("d4");
    ok(&roost_at(root, &data, &conf)
        .args(["plugin", "install", "--yes", "roost:notes@0.1.0"])
        .output()
        .expect("install a version"));
    assert_eq!(
        listed(&data, &conf, &root.join("docker"))["version"],
        "0.1.0"
    );
    let t = refused(
        &roost_at(root, &root.join("d5"), &conf)
            .args(["plugin", "install", "--yes", "nowhere:notes"])
            .output()
            .expect("install"),
    );
    assert!(
        t.contains("places no registry for namespace `nowhere`"),
        "{t}"
    );

    // wkg's own config file, naming a registry without metadata: the
    // registry has no well-known metadata, so no prefix.
    let xdg = root.join("xdg/wasm-pkg");
    std::fs::create_dir_all(&xdg).expect("xdg");
    std::fs::write(
        xdg.join("config.toml"),
        format!("[namespace_registries]\nacme = \"{host}\"\n"),
    )
    .expect("wkg");
    publish(
        root,
        &plain_conf,
        &folder("1.2.0"),
        &format!("oci://{host}/acme/notes:1.2.0"),
    );
    let home_conf = config_with(&root.join("1.2.0"), std::slice::from_ref(&host), "");
    let data = root.join("d6");
    ok(&roost_at(root, &data, &home_conf)
        .args(["plugin", "install", "--yes", "acme:notes"])
        .output()
        .expect("install through the user's wkg config"));
    let p = listed(&data, &home_conf, &root.join("docker"));
    assert_eq!(
        p["source"],
        format!("oci://{host}/acme/notes:1.2.0").as_str()
    );
    // A path is still a path.
    let t = refused(
        &roost_at(root, &root.join("d7"), &conf)
            .args(["plugin", "install", "--yes", "./notes"])
            .output()
            .expect("install"),
    );
    assert!(!t.contains("registries"), "{t}");
}
