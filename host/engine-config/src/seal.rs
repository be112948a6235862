//! A sealed artifact: a precompiled component bound to the component it
//! was compiled from.
//!
//! Deserializing a precompiled artifact runs native code, so the runtime
//! loads only one whose seal verifies. Layout: a magic line, the BLAKE3
//! hash of the component's bytes, then a keyed BLAKE3 hash of the artifact
//! whose key is derived from that component hash, then the artifact. A
//! flipped byte, a truncated file, or an artifact moved onto another
//! component all fail [`Sealed::open`]; the artifact then is compiled
//! again from the component.

/// The first bytes of a sealed artifact (and its format's version).
const MAGIC: &[u8; 16] = b"roost-sealed-v1\n";
/// Context of the key derivation (BLAKE3 `derive_key`).
const KEY_CONTEXT: &str = "roost 2026 sealed precompiled component v1";
const HEADER: usize = MAGIC.len() + 32 + 32;

/// Why a sealed artifact cannot be used.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SealError {
    /// Too short, or not a sealed artifact at all.
    #[error("not a sealed artifact")]
    NotSealed,
    /// Sealed for another component.
    #[error("sealed for another component")]
    OtherComponent,
    /// The artifact's bytes changed after sealing.
    #[error("the artifact's seal does not verify")]
    Damaged,
}

/// Seal `artifact`, the precompiled form of the component `wasm`.
pub fn seal(wasm: &[u8], artifact: &[u8]) -> Vec<u8> {
    let component = blake3::hash(wasm);
    let mut out = Vec::with_capacity(HEADER + artifact.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(component.as_bytes());
    out.extend_from_slice(mac(&component, artifact).as_bytes());
    out.extend_from_slice(artifact);
    out
}

fn mac(component: &blake3::Hash, artifact: &[u8]) -> blake3::Hash {
    let key = blake3::derive_key(KEY_CONTEXT, component.as_bytes());
    blake3::keyed_hash(&key, artifact)
}

/// A sealed artifact whose seal verified.
#[derive(Debug, Clone, Copy)]
pub struct Sealed<'a> {
    component: blake3::Hash,
    artifact: &'a [u8],
}

impl<'a> Sealed<'a> {
    /// The component hash a sealed file names, without verifying anything:
    /// enough to know which component a file is for.
    pub fn component_of(file: &[u8]) -> Option<blake3::Hash> {
        let rest = file.strip_prefix(MAGIC)?;
        let hash: [u8; 32] = rest.get(..32)?.try_into().ok()?;
        Some(blake3::Hash::from_bytes(hash))
    }

    /// Verify `file` as the sealed artifact of the component whose BLAKE3
    /// hash is `component`.
    pub fn open(file: &'a [u8], component: &blake3::Hash) -> Result<Self, SealError> {
        let named = Self::component_of(file).ok_or(SealError::NotSealed)?;
        let (Some(stored), Some(artifact)) =
            (file.get(MAGIC.len() + 32..HEADER), file.get(HEADER..))
        else {
            return Err(SealError::NotSealed);
        };
        // blake3::Hash equality is constant-time.
        if named != *component {
            return Err(SealError::OtherComponent);
        }
        let stored: [u8; 32] = stored.try_into().map_err(|_| SealError::NotSealed)?;
        if blake3::Hash::from_bytes(stored) != mac(component, artifact) {
            return Err(SealError::Damaged);
        }
        Ok(Self {
            component: named,
            artifact,
        })
    }

    /// The component it was compiled from.
    pub fn component(&self) -> blake3::Hash {
        self.component
    }

    /// The precompiled artifact, for `Component::deserialize`.
    pub fn artifact(&self) -> &'a [u8] {
        self.artifact
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seal_opens_only_for_its_component_and_intact() {
        let wasm = b"component bytes";
        let sealed = seal(wasm, b"artifact bytes");
        let id = blake3::hash(wasm);
        let open = Sealed::open(&sealed, &id).map(|s| s.artifact());
        assert_eq!(open, Ok(&b"artifact bytes"[..]));
        assert_eq!(Sealed::component_of(&sealed), Some(id));

        let other = blake3::hash(b"another component");
        assert_eq!(
            Sealed::open(&sealed, &other).err(),
            Some(SealError::OtherComponent)
        );
        let mut flipped = sealed.clone();
        if let Some(last) = flipped.last_mut() {
            *last ^= 1;
        }
        assert_eq!(Sealed::open(&flipped, &id).err(), Some(SealError::Damaged));
        let mut resealed = sealed.clone();
        resealed.truncate(sealed.len() - 1);
        assert_eq!(Sealed::open(&resealed, &id).err(), Some(SealError::Damaged));
        assert_eq!(
            Sealed::open(&sealed[..20], &id).err(),
            Some(SealError::NotSealed)
        );
        assert_eq!(
            Sealed::open(&b"junk"[..], &id).err(),
            Some(SealError::NotSealed)
        );
    }
}
