//! Detached minisign (Ed25519) signatures beside a component
//! (`hello.wasm.minisig`), verified against the keys the user trusts. A
//! signature that does not verify is always refused; an unsigned plugin,
//! or one signed by a key nobody trusts, only when signatures are required.

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
    /// Check `signature` (the `.minisig` text, if there is one) over
    /// `bytes`. A trusted key's signature that fails, or a signature file
    /// that does not decode, is refused; unsigned or unknown signers are
    /// refused only when signatures are required.
    pub fn check(&self, bytes: &[u8], signature: Option<&str>) -> Result<Signer, InstallError> {
        let bad = |detail: String| InstallError::Signature(detail);
        let signer = match signature {
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
        if self.require_signed && !matches!(signer, Signer::Trusted(_)) {
            return Err(bad(match signer {
                Signer::Unsigned => format!(
                    "signatures are required and the component is unsigned (no {SIGNATURE_SUFFIX} beside it)"
                ),
                _ => "signatures are required and the signing key is not a trusted one".to_owned(),
            }));
        }
        Ok(signer)
    }
}
