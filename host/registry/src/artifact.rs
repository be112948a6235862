//! A plugin as an OCI artifact. The manifest is an OCI image manifest
//! whose config is the Wasm OCI artifact config
//! (`application/vnd.wasm.config.v0+json`, as `wkg publish` writes) and
//! whose layers are the component (`application/wasm`, exactly one), and
//! optionally its `plugin.toml` and its minisign signature under Roost's
//! media types. A component published by `wkg` (no `plugin.toml`) installs
//! as a bare component does from disk. Anything else — an image index, a
//! container image, a layer of another type — is not a plugin.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::client::{Body, Client};
use crate::reference::{Digest, Reference};
use crate::{RegistryError, shown};

/// The OCI image manifest's media type.
pub const OCI_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
/// An OCI image index (several manifests).
pub const OCI_INDEX: &str = "application/vnd.oci.image.index.v1+json";
/// The Wasm OCI artifact's config.
pub const WASM_CONFIG: &str = "application/vnd.wasm.config.v0+json";
/// The component layer.
pub const COMPONENT: &str = "application/wasm";
/// The `plugin.toml` layer.
pub const PLUGIN_MANIFEST: &str = "application/vnd.roost.plugin.manifest.v1+toml";
/// The minisign signature layer (a `.minisig` over the component).
pub const MINISIGN: &str = "application/vnd.roost.plugin.signature.v1+minisign";

/// The largest component installed from a registry.
pub const MAX_COMPONENT: u64 = 128 * 1024 * 1024;
/// The largest `plugin.toml` layer.
pub const MAX_PLUGIN_MANIFEST: u64 = 256 * 1024;
/// The largest signature layer.
pub const MAX_SIGNATURE: u64 = 16 * 1024;
/// More layers than a plugin has are refused before any is fetched.
const MAX_LAYERS: usize = 8;

/// The fields of an OCI image manifest a plugin uses.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImageManifest {
    /// Always 2.
    pub schema_version: u32,
    /// [`OCI_MANIFEST`] (optional in the spec, written by Roost).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media_type: Option<String>,
    /// The config blob.
    pub config: Descriptor,
    /// The layers.
    pub layers: Vec<Descriptor>,
    /// Free-form annotations (`org.opencontainers.image.*`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

/// A content descriptor.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Descriptor {
    /// What the content is.
    pub media_type: String,
    /// `sha256:…`.
    pub digest: String,
    /// Its size in bytes.
    pub size: u64,
    /// Annotations (the layer's title, for `wkg` and `oras`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

/// A plugin fetched from a registry, every byte checked against the
/// digest that names it.
#[derive(Debug, Clone)]
pub struct Pulled {
    /// The reference, pinned at the manifest's digest.
    pub reference: Reference,
    /// The manifest's digest.
    pub digest: Digest,
    /// The component.
    pub component: Vec<u8>,
    /// `plugin.toml`, when the artifact has one.
    pub manifest: Option<String>,
    /// The minisign signature over the component, when it has one.
    pub signature: Option<String>,
}

/// What `publish` puts in a registry.
#[derive(Debug, Clone)]
pub struct Publish {
    /// The component.
    pub component: Vec<u8>,
    /// Its file name (the layer's title).
    pub component_name: String,
    /// `plugin.toml`.
    pub manifest: String,
    /// The signature, when the plugin is signed.
    pub signature: Option<String>,
    /// The plugin's version (an annotation).
    pub version: String,
}

/// The digest `r` names now: its manifest fetched (by tag, unless pinned)
/// and hashed, and checked to be a plugin's.
pub async fn resolve(client: &Client, r: &Reference) -> Result<Digest, RegistryError> {
    let (digest, _) = manifest(client, r).await?;
    Ok(digest)
}

/// Fetch the plugin `r` names. The tag (if `r` is not pinned) is resolved
/// once, by fetching the manifest; every layer is then fetched by the
/// digest that manifest names, so what is installed is the manifest's
/// content even if the tag moves meanwhile.
pub async fn pull(client: &Client, r: &Reference) -> Result<Pulled, RegistryError> {
    let (digest, m) = manifest(client, r).await?;
    let pinned = r.pinned(digest.clone());
    let mut component = None;
    let mut plugin_toml = None;
    let mut signature = None;
    for layer in &m.layers {
        let d = Digest::parse(&layer.digest)
            .map_err(|e| not_a_plugin(r, format!("a layer's digest: {e}")))?;
        match layer.media_type.as_str() {
            COMPONENT => {
                let bytes = client
                    .blob(
                        &pinned,
                        &d,
                        layer.size,
                        MAX_COMPONENT,
                        &format!("the component of {r}"),
                    )
                    .await?;
                component = Some(bytes);
            }
            PLUGIN_MANIFEST => {
                let bytes = client
                    .blob(
                        &pinned,
                        &d,
                        layer.size,
                        MAX_PLUGIN_MANIFEST,
                        &format!("the plugin.toml of {r}"),
                    )
                    .await?;
                let text = String::from_utf8(bytes)
                    .map_err(|_| not_a_plugin(r, "its plugin.toml layer is not UTF-8".into()))?;
                plugin_toml = Some(text);
            }
            MINISIGN => {
                let bytes = client
                    .blob(
                        &pinned,
                        &d,
                        layer.size,
                        MAX_SIGNATURE,
                        &format!("the signature of {r}"),
                    )
                    .await?;
                let text = String::from_utf8(bytes)
                    .map_err(|_| not_a_plugin(r, "its signature layer is not UTF-8".into()))?;
                signature = Some(text);
            }
            other => {
                // `manifest` refused other types before any fetch.
                return Err(not_a_plugin(
                    r,
                    format!("a layer of media type `{}`", shown(other)),
                ));
            }
        }
    }
    let component =
        component.ok_or_else(|| not_a_plugin(r, format!("it has no {COMPONENT} layer")))?;
    Ok(Pulled {
        reference: pinned,
        digest,
        component,
        manifest: plugin_toml,
        signature,
    })
}

fn not_a_plugin(r: &Reference, detail: String) -> RegistryError {
    RegistryError::NotAPlugin {
        reference: r.to_string(),
        detail,
    }
}

/// Fetch and check `r`'s manifest: its digest (what the bytes hash to,
/// which must be the pinned digest and the one the registry says) and
/// its content, which must be a plugin's.
async fn manifest(
    client: &Client,
    r: &Reference,
) -> Result<(Digest, ImageManifest), RegistryError> {
    let body = client.manifest(r, &[OCI_MANIFEST, OCI_INDEX]).await?;
    check_manifest(r, &body)
}

/// Whether `body`, the registry's answer for `r`'s manifest, is a
/// plugin's manifest, and its digest: the digest of the bytes, which must
/// be the one `r` pins and the one the registry says; an OCI image
/// manifest whose config is a component's and whose layers are a
/// plugin's (one component, at most one `plugin.toml` and one signature).
pub fn check_manifest(
    r: &Reference,
    body: &Body,
) -> Result<(Digest, ImageManifest), RegistryError> {
    let digest = Digest::of(&body.bytes);
    if let Some(pinned) = r.digest()
        && pinned != &digest
    {
        return Err(RegistryError::DigestMismatch {
            what: format!("the manifest of {r}"),
            expected: pinned.to_string(),
            actual: digest.to_string(),
        });
    }
    if let Some(said) = &body.digest
        && said != digest.as_str()
    {
        return Err(RegistryError::DigestMismatch {
            what: format!("the manifest of {r} (the registry's Docker-Content-Digest)"),
            expected: shown(said),
            actual: digest.to_string(),
        });
    }
    let kind = body.content_type.as_deref().unwrap_or_default();
    if kind == OCI_INDEX {
        return Err(not_a_plugin(
            r,
            "it is an image index (several manifests); a plugin is one component: name one manifest by its digest".into(),
        ));
    }
    if kind != OCI_MANIFEST && !kind.is_empty() && kind != "application/json" {
        return Err(not_a_plugin(
            r,
            format!(
                "its manifest is `{}`, not an OCI image manifest",
                shown(kind)
            ),
        ));
    }
    let m: ImageManifest = serde_json::from_slice(&body.bytes)
        .map_err(|e| not_a_plugin(r, format!("its manifest does not parse: {e}")))?;
    if m.schema_version != 2 {
        return Err(not_a_plugin(
            r,
            format!("its manifest has schemaVersion {}, not 2", m.schema_version),
        ));
    }
    if let Some(t) = &m.media_type
        && t != OCI_MANIFEST
    {
        return Err(not_a_plugin(
            r,
            format!("its manifest says it is `{}`", shown(t)),
        ));
    }
    if m.config.media_type != WASM_CONFIG {
        return Err(not_a_plugin(
            r,
            format!(
                "its config is `{}`, not a WebAssembly component's ({WASM_CONFIG}){}",
                shown(&m.config.media_type),
                if m.config.media_type.contains("container.image")
                    || m.config.media_type.contains("image.config")
                {
                    ": it is a container image"
                } else {
                    ""
                }
            ),
        ));
    }
    if m.layers.len() > MAX_LAYERS {
        return Err(not_a_plugin(
            r,
            format!("it has {} layers (a plugin has at most 3)", m.layers.len()),
        ));
    }
    let mut seen = BTreeMap::new();
    for layer in &m.layers {
        if ![COMPONENT, PLUGIN_MANIFEST, MINISIGN].contains(&layer.media_type.as_str()) {
            return Err(not_a_plugin(
                r,
                format!(
                    "a layer of media type `{}`, which is not part of a plugin",
                    shown(&layer.media_type)
                ),
            ));
        }
        if seen.insert(layer.media_type.clone(), ()).is_some() {
            return Err(not_a_plugin(
                r,
                format!("it has more than one `{}` layer", layer.media_type),
            ));
        }
    }
    if !seen.contains_key(COMPONENT) {
        return Err(not_a_plugin(r, format!("it has no {COMPONENT} layer")));
    }
    Ok((digest, m))
}

/// Put `plugin` at `r`'s tag: the layers and an empty-enough config, then
/// the manifest. The manifest's digest (what an install pins).
pub async fn publish(
    client: &Client,
    r: &Reference,
    plugin: &Publish,
) -> Result<Digest, RegistryError> {
    let tag = r.tag().ok_or_else(|| RegistryError::Reference {
        text: r.to_string(),
        detail: "publishing needs a tag (`oci://REGISTRY/REPOSITORY:TAG`)".into(),
    })?;
    let mut layers = Vec::new();
    let title = |name: &str| {
        BTreeMap::from([("org.opencontainers.image.title".to_owned(), name.to_owned())])
    };
    let add = |media_type: &str, bytes: &[u8], name: &str| Descriptor {
        media_type: media_type.to_owned(),
        digest: Digest::of(bytes).to_string(),
        size: u64::try_from(bytes.len()).unwrap_or(u64::MAX),
        annotations: title(name),
    };
    layers.push(add(COMPONENT, &plugin.component, &plugin.component_name));
    layers.push(add(
        PLUGIN_MANIFEST,
        plugin.manifest.as_bytes(),
        "plugin.toml",
    ));
    if let Some(s) = &plugin.signature {
        layers.push(add(
            MINISIGN,
            s.as_bytes(),
            &format!("{}.minisig", plugin.component_name),
        ));
    }
    // The Wasm OCI artifact config: what it is, and its layers.
    let config = serde_json::json!({
        "architecture": "wasm",
        "os": "wasip2",
        "layerDigests": layers.iter().map(|l| l.digest.clone()).collect::<Vec<_>>(),
    });
    let config_bytes = serde_json::to_vec(&config).map_err(|e| RegistryError::Transport {
        url: r.to_string(),
        detail: format!("cannot write the config: {e}"),
    })?;
    client.push_blob(r, &plugin.component).await?;
    client.push_blob(r, plugin.manifest.as_bytes()).await?;
    if let Some(s) = &plugin.signature {
        client.push_blob(r, s.as_bytes()).await?;
    }
    client.push_blob(r, &config_bytes).await?;
    let manifest = ImageManifest {
        schema_version: 2,
        media_type: Some(OCI_MANIFEST.to_owned()),
        config: Descriptor {
            media_type: WASM_CONFIG.to_owned(),
            digest: Digest::of(&config_bytes).to_string(),
            size: u64::try_from(config_bytes.len()).unwrap_or(u64::MAX),
            annotations: BTreeMap::new(),
        },
        layers,
        annotations: BTreeMap::from([(
            "org.opencontainers.image.version".to_owned(),
            plugin.version.clone(),
        )]),
    };
    let bytes = serde_json::to_vec(&manifest).map_err(|e| RegistryError::Transport {
        url: r.to_string(),
        detail: format!("cannot write the manifest: {e}"),
    })?;
    client.push_manifest(r, tag, OCI_MANIFEST, &bytes).await
}
