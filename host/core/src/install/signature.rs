//! Who signed a plugin, against the keys the user trusts: a detached
//! minisign (Ed25519) signature beside the component (`hello.wasm.minisig`,
//! or its layer in a registry artifact), or — for a plugin from a registry
//! — a Sigstore (cosign) signature of the artifact's manifest digest,
//! verified offline with a trusted cosign public key. A signature that
//! does not verify under a trusted key is refused; an unsigned plugin, or
//! one signed by a key nobody trusts, only when signatures are required.

use std::collections::BTreeMap;

use minisign_verify::{PublicKey, Signature};

use super::InstallError;

/// File name suffix of a detached signature.
pub const SIGNATURE_SUFFIX: &str = ".minisig";

/// Who may sign plugins, and whether they must be signed.
#[derive(Debug, Clone, Default)]
pub struct Trust {
    /// Trusted keys by name: minisign public keys (base64).
    pub keys: BTreeMap<String, String>,
    /// Trusted cosign keys by name: a `cosign.pub`'s PEM (the config reads
    /// a key named by path when it loads).
    pub cosign_keys: BTreeMap<String, String>,
    /// Refuse anything not signed by a trusted key.
    pub require_signed: bool,
}

/// What a component's signature established.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Signer {
    /// No signature beside it.
    Unsigned,
    /// A valid signature by a key the user trusts (its name).
    Trusted(String),
    /// A signature by a key that is not among the trusted ones.
    Unknown,
}

impl Signer {
    /// As recorded and shown: the trusted name, else empty.
    pub fn name(&self) -> &str {
        match self {
            Signer::Trusted(n) => n,
            _ => "",
        }
    }
}

impl Trust {
    /// Whether a registry's Sigstore signatures are worth fetching (some
    /// cosign key is trusted).
    pub fn uses_cosign(&self) -> bool {
        !self.cosign_keys.is_empty()
    }

    /// Check `signature` (the `.minisig` text, if there is one) over
    /// `bytes`, and else the `cosign` signatures a registry holds for the
    /// artifact `digest`. A trusted key's signature that fails, or a
    /// signature that does not decode, is refused; unsigned or unknown
    /// signers are refused only when signatures are required.
    pub fn check(
        &self,
        bytes: &[u8],
        signature: Option<&str>,
        cosign: &[roost_registry::cosign::Signature],
        digest: Option<&str>,
    ) -> Result<Signer, InstallError> {
        let bad = |detail: String| InstallError::Signature(detail);
        let mut signer = match signature {
            None => Signer::Unsigned,
            Some(text) => {
                let sig = Signature::decode(text)
                    .map_err(|e| bad(format!("the signature file does not decode: {e}")))?;
                let mut found = Signer::Unknown;
                for (name, key) in &self.keys {
                    let pk = PublicKey::from_base64(key.trim()).map_err(|e| {
                        bad(format!(
                            "trusted key `{name}` in the config is not a minisign public key: {e}"
                        ))
                    })?;
                    match pk.verify(bytes, &sig, false) {
                        Ok(()) => {
                            found = Signer::Trusted(name.clone());
                            break;
                        }
                        // Another key's signature: try the next key.
                        Err(minisign_verify::Error::UnexpectedKeyId) => {}
                        Err(e) => {
                            return Err(bad(format!(
                                "the signature by `{name}` does not match the component: {e}"
                            )));
                        }
                    }
                }
                found
            }
        };
        if !matches!(signer, Signer::Trusted(_))
            && let Some(digest) = digest
            && !cosign.is_empty()
        {
            signer = self.check_cosign(cosign, digest)?;
        }
        if self.require_signed && !matches!(signer, Signer::Trusted(_)) {
            return Err(bad(match signer {
                Signer::Unsigned => format!(
                    "signatures are required and the component is unsigned (no {SIGNATURE_SUFFIX} beside it{})",
                    match (digest.is_some(), self.uses_cosign()) {
                        (true, true) => ", and no cosign signature in its registry",
                        (true, false) => ", and no cosign key is trusted (`[plugins] cosign_keys`)",
                        _ => "",
                    }
                ),
                _ => "signatures are required and the signing key is not a trusted one".to_owned(),
            }));
        }
        Ok(signer)
    }

    /// The trusted cosign key whose signature names `digest`, else
    /// [`Signer::Unknown`].
    fn check_cosign(
        &self,
        cosign: &[roost_registry::cosign::Signature],
        digest: &str,
    ) -> Result<Signer, InstallError> {
        let bad = |detail: String| InstallError::Signature(detail);
        let digest = roost_registry::Digest::parse(digest).map_err(|e| bad(e.to_string()))?;
        for (name, key) in &self.cosign_keys {
            let pk = roost_registry::cosign::PublicKey::from_pem(key)
                .map_err(|e| bad(format!("trusted cosign key `{name}` in the config is {e}")))?;
            match pk.verify(cosign, &digest) {
                Ok(true) => return Ok(Signer::Trusted(name.clone())),
                Ok(false) => {}
                Err(e) => return Err(bad(format!("cosign key `{name}`: {e}"))),
            }
        }
        Ok(Signer::Unknown)
    }
}
