//! Sigstore (cosign) signatures of a plugin's artifact, verified offline
//! against public keys the user trusts. `cosign sign --key` and `skopeo
//! copy --sign-by-sigstore-private-key` put them beside the artifact in its
//! repository, at the tag `sha256-<manifest hex>.sig`: a manifest whose
//! layers are simple-signing payloads (`critical.image.docker-manifest-digest`
//! names what is signed), each with its ECDSA signature in the
//! `dev.cosignproject.cosign/signature` annotation. A signature counts when
//! it verifies under a trusted key over its payload and the payload names
//! the very manifest digest being installed; transparency-log entries are
//! not consulted (the trust root is the key, as `cosign verify --key …
//! --insecure-ignore-tlog`). Keys are ECDSA P-256, what `cosign
//! generate-key-pair` makes.

use p256::ecdsa::signature::Verifier as _;
use p256::pkcs8::DecodePublicKey as _;
use serde::Deserialize;

use crate::artifact::{Descriptor, OCI_MANIFEST};
use crate::client::Client;
use crate::reference::{Digest, Reference};
use crate::{RegistryError, shown};

/// A signature layer's media type.
pub const SIMPLE_SIGNING: &str = "application/vnd.dev.cosign.simplesigning.v1+json";
/// The annotation holding a layer's signature (base64 of DER).
pub const SIGNATURE_ANNOTATION: &str = "dev.cosignproject.cosign/signature";
/// Docker's manifest, which some tools write the signature manifest as.
const DOCKER_MANIFEST: &str = "application/vnd.docker.distribution.manifest.v2+json";
/// The simple-signing payload's type.
const PAYLOAD_TYPE: &str = "cosign container image signature";
/// The largest payload read.
const MAX_PAYLOAD: u64 = 64 * 1024;
/// More signatures than this are refused before any is fetched.
const MAX_SIGNATURES: usize = 16;

/// One signature as the registry holds it: the payload and the signature
/// over it (not yet verified).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signature {
    /// The simple-signing payload's bytes.
    pub payload: Vec<u8>,
    /// The DER-encoded ECDSA signature over them.
    pub signature: Vec<u8>,
}

/// A trusted cosign public key.
#[derive(Debug, Clone)]
pub struct PublicKey(p256::ecdsa::VerifyingKey);

impl PublicKey {
    /// A `-----BEGIN PUBLIC KEY-----` PEM, as `cosign.pub` holds.
    pub fn from_pem(pem: &str) -> Result<Self, String> {
        p256::ecdsa::VerifyingKey::from_public_key_pem(pem.trim())
            .map(Self)
            .map_err(|e| format!("not an ECDSA P-256 public key in PEM (cosign.pub): {e}"))
    }

    /// Whether one of `signatures` is this key's over a payload naming
    /// `digest`. A signature by this key over a payload for another digest
    /// is an error (a signature moved onto other content), not a miss.
    pub fn verify(&self, signatures: &[Signature], digest: &Digest) -> Result<bool, String> {
        for s in signatures {
            let Ok(sig) = p256::ecdsa::Signature::from_der(&s.signature) else {
                continue;
            };
            if self.0.verify(&s.payload, &sig).is_err() {
                continue;
            }
            let signed = signed_digest(&s.payload)?;
            if signed != digest.as_str() {
                return Err(format!(
                    "a signature by this key is for {}, not this artifact ({digest})",
                    shown(&signed)
                ));
            }
            return Ok(true);
        }
        Ok(false)
    }
}

/// The digest a simple-signing payload names, checking its type.
fn signed_digest(payload: &[u8]) -> Result<String, String> {
    #[derive(Deserialize)]
    struct Payload {
        critical: Critical,
    }
    #[derive(Deserialize)]
    struct Critical {
        image: Image,
        #[serde(rename = "type")]
        kind: String,
    }
    #[derive(Deserialize)]
    struct Image {
        #[serde(rename = "docker-manifest-digest")]
        digest: String,
    }
    let p: Payload = serde_json::from_slice(payload)
        .map_err(|e| format!("a signed payload is not a simple-signing document: {e}"))?;
    if p.critical.kind != PAYLOAD_TYPE {
        return Err(format!(
            "a signed payload is of type `{}`, not `{PAYLOAD_TYPE}`",
            shown(&p.critical.kind)
        ));
    }
    Ok(p.critical.image.digest)
}

/// The tag cosign keeps `digest`'s signatures at.
pub fn signature_tag(digest: &Digest) -> String {
    format!("sha256-{}.sig", digest.hex())
}

/// The signatures stored beside the artifact `digest` in `r`'s repository
/// (none when there is no signature tag), every payload fetched by digest
/// within bounds. Nothing is verified here.
pub async fn fetch(
    client: &Client,
    r: &Reference,
    digest: &Digest,
) -> Result<Vec<Signature>, RegistryError> {
    let tag = signature_tag(digest);
    let at = Reference::parse(&format!(
        "{}{}/{}:{tag}",
        crate::reference::SCHEME,
        r.registry(),
        r.repository()
    ))?;
    let body = match client.manifest(&at, &[OCI_MANIFEST, DOCKER_MANIFEST]).await {
        Ok(b) => b,
        Err(e) if e.is_not_found() => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let bad = |detail: String| RegistryError::NotAPlugin {
        reference: at.to_string(),
        detail,
    };
    #[derive(Deserialize)]
    struct Manifest {
        layers: Vec<Descriptor>,
    }
    let m: Manifest = serde_json::from_slice(&body.bytes)
        .map_err(|e| bad(format!("its signature manifest does not parse: {e}")))?;
    let layers: Vec<&Descriptor> = m
        .layers
        .iter()
        .filter(|l| l.media_type == SIMPLE_SIGNING)
        .collect();
    if layers.len() > MAX_SIGNATURES {
        return Err(bad(format!(
            "it carries {} signatures, more than the {MAX_SIGNATURES} read",
            layers.len()
        )));
    }
    let mut out = Vec::new();
    for layer in layers {
        let Some(encoded) = layer.annotations.get(SIGNATURE_ANNOTATION) else {
            continue;
        };
        use base64::Engine as _;
        let Ok(signature) = base64::engine::general_purpose::STANDARD.decode(encoded.trim()) else {
            continue;
        };
        let d = Digest::parse(&layer.digest)?;
        let payload = client
            .blob(
                &at,
                &d,
                layer.size,
                MAX_PAYLOAD,
                &format!("a signature payload of {r}"),
            )
            .await?;
        out.push(Signature { payload, signature });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use p256::ecdsa::signature::Signer as _;
    use p256::pkcs8::EncodePublicKey as _;

    fn key(seed: u8) -> (p256::ecdsa::SigningKey, PublicKey) {
        let sk = p256::ecdsa::SigningKey::from_slice(&[seed; 32]).expect("key");
        let pem = sk
            .verifying_key()
            .to_public_key_pem(p256::pkcs8::LineEnding::LF)
            .expect("pem");
        (sk, PublicKey::from_pem(&pem).expect("parses"))
    }

    fn signed(sk: &p256::ecdsa::SigningKey, payload: &str) -> Signature {
        let sig: p256::ecdsa::Signature = sk.sign(payload.as_bytes());
        Signature {
            payload: payload.as_bytes().to_vec(),
            signature: sig.to_der().as_bytes().to_vec(),
        }
    }

    fn payload(digest: &Digest, kind: &str) -> String {
        format!(
            r#"{{"critical":{{"identity":{{"docker-reference":"r.example/p"}},"image":{{"docker-manifest-digest":"{digest}"}},"type":"{kind}"}},"optional":null}}"#
        )
    }

    /// A signature `cosign sign --key` made (sigstore-rs keeps it as test
    /// data): Roost's verification agrees with cosign's.
    #[test]
    fn a_signature_cosign_made_verifies() {
        use base64::Engine as _;
        let pk = PublicKey::from_pem(
            "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAENptdY/l3nB0yqkXLBWkZWQwo6+cu\nOSWS1X9vPavpiQOoTTGC0xX57OojUadxF1cdQmrsiReWg2Wn4FneJfa8xw==\n-----END PUBLIC KEY-----",
        )
        .expect("cosign.pub");
        let digest = Digest::parse(
            "sha256:f3cfc9d0dbf931d3db4685ec659b7ac68e2a578219da4aae65427886e649b06b",
        )
        .expect("digest");
        let payload = br#"{"critical":{"identity":{"docker-reference":"registry-testing.svc.lan/busybox"},"image":{"docker-manifest-digest":"sha256:f3cfc9d0dbf931d3db4685ec659b7ac68e2a578219da4aae65427886e649b06b"},"type":"cosign container image signature"},"optional":null}"#;
        let signature = base64::engine::general_purpose::STANDARD
            .decode("MEUCIQD6q/COgzOyW0YH1Dk+CCYSt4uAhm3FDHUwvPI55zwnlwIgE0ZK58ZOWpZw8YVmBapJhBqCfdPekIknimuO0xH8Jh8=")
            .expect("base64");
        let s = Signature {
            payload: payload.to_vec(),
            signature,
        };
        assert_eq!(pk.verify(std::slice::from_ref(&s), &digest), Ok(true));
        let other = Digest::of(b"other");
        assert!(pk.verify(&[s], &other).is_err());
    }

    #[test]
    fn a_trusted_keys_signature_counts_only_for_the_digest_it_names() {
        let (sk, pk) = key(7);
        let (other_sk, _) = key(9);
        let d = Digest::of(b"artifact");
        let elsewhere = Digest::of(b"another");
        assert_eq!(
            pk.verify(&[signed(&sk, &payload(&d, PAYLOAD_TYPE))], &d),
            Ok(true)
        );
        // Another key's signature, a broken one, none: not this key's.
        assert_eq!(
            pk.verify(&[signed(&other_sk, &payload(&d, PAYLOAD_TYPE))], &d),
            Ok(false)
        );
        let mut broken = signed(&sk, &payload(&d, PAYLOAD_TYPE));
        broken.payload[5] ^= 1;
        assert_eq!(pk.verify(&[broken], &d), Ok(false));
        assert_eq!(pk.verify(&[], &d), Ok(false));
        // This key's signature of other content, or of another kind: refused.
        assert!(
            pk.verify(&[signed(&sk, &payload(&elsewhere, PAYLOAD_TYPE))], &d)
                .expect_err("moved")
                .contains("not this artifact")
        );
        assert!(
            pk.verify(&[signed(&sk, &payload(&d, "other"))], &d)
                .is_err()
        );
        assert!(pk.verify(&[signed(&sk, "not json")], &d).is_err());
        assert!(
            PublicKey::from_pem("-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----")
                .is_err()
        );
        assert_eq!(signature_tag(&d), format!("sha256-{}.sig", d.hex()));
    }
}
