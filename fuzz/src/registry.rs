//! What a registry and a user give a registry install: a reference
//! (`oci://…`), the registry's manifest answer for it (the bytes, their
//! content type and the digest the registry claims), Docker's config with
//! its logins, a plugin's name (`hello:1`, `roost:hello@1.2.0`) and wkg's
//! config that places package names.
//!
//! Must hold: a reference that parses prints as text that parses to the
//! same reference; a manifest accepted hashes to the digest returned, which
//! is the pinned one and the claimed one; it is an OCI image manifest with a
//! component's config, exactly one component layer, and only a plugin's
//! layers, each once; a Docker config and wkg's config are read or
//! refused, never more; a name that parses prints as text that parses to
//! the same name.

use roost_registry::artifact::{COMPONENT, MINISIGN, PLUGIN_MANIFEST, WASM_CONFIG, check_manifest};
use roost_registry::client::Body;
use roost_registry::{Credentials, Digest, Name, Reference, WkgConfig};

/// The target.
pub fn run(data: &[u8]) {
    let mut parts = data.splitn(5, |b| *b == 0);
    let mut next = || String::from_utf8_lossy(parts.next().unwrap_or_default()).into_owned();
    let reference = next();
    let content_type = next();
    let claimed = next();
    let docker = next();
    let manifest = parts.next().unwrap_or_default();
    if let Ok(r) = Reference::parse(&reference) {
        let again = Reference::parse(&r.to_string()).expect("a parsed reference prints as one");
        assert_eq!(again, r);
    }
    let _ = Credentials::from_docker_json(&docker);
    let _ = WkgConfig::parse(&docker, "config.toml");
    if let Some(n) = Name::parse(&reference) {
        assert_eq!(
            Name::parse(&n.to_string()),
            Some(n),
            "a parsed name prints as one"
        );
    }
    let r = Reference::parse(&reference)
        .or_else(|_| Reference::parse("oci://registry.example/roost/p:1"))
        .expect("the default reference");
    let body = Body {
        bytes: manifest.to_vec(),
        content_type: (!content_type.is_empty()).then_some(content_type),
        digest: (!claimed.is_empty()).then_some(claimed),
    };
    if let Ok((digest, m)) = check_manifest(&r, &body) {
        assert_eq!(digest, Digest::of(manifest));
        if let Some(pinned) = r.digest() {
            assert_eq!(pinned, &digest);
        }
        if let Some(c) = &body.digest {
            assert_eq!(c, digest.as_str());
        }
        assert_eq!(m.config.media_type, WASM_CONFIG);
        assert_eq!(
            m.layers
                .iter()
                .filter(|l| l.media_type == COMPONENT)
                .count(),
            1
        );
        for l in &m.layers {
            assert!([COMPONENT, PLUGIN_MANIFEST, MINISIGN].contains(&l.media_type.as_str()));
            assert_eq!(
                m.layers
                    .iter()
                    .filter(|o| o.media_type == l.media_type)
                    .count(),
                1
            );
        }
    }
}
