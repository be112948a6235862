//! What a plugin's registry source is: `oci://REGISTRY/REPOSITORY`, then a
//! `:TAG` (default `latest`), an `@sha256:DIGEST`, or both (the digest
//! wins; the tag is kept for `outdated`). Names follow the OCI
//! distribution spec's grammar, so a reference that parses is one a
//! registry URL can carry without escaping.

use std::fmt;
use std::sync::LazyLock;

use regex::Regex;
use sha2::{Digest as _, Sha256};

use crate::{RegistryError, shown};

/// The scheme of a registry reference.
pub const SCHEME: &str = "oci://";

/// The tag a reference without one means.
pub const DEFAULT_TAG: &str = "latest";

/// The distribution spec's repository name: path components of lowercase
/// letters and digits joined by `.`, `_`, `__` or runs of `-`.
static REPOSITORY: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(
        r"^[a-z0-9]+(?:(?:\.|_|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:\.|_|__|-+)[a-z0-9]+)*)*$",
    )
    .ok()
});

/// The distribution spec's tag.
static TAG: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$").ok());

/// A host name or IPv4 address, with an optional port.
static REGISTRY: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(r"^[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*(?::[0-9]{1,5})?$").ok()
});

/// Longest repository name accepted (registries cap it near here).
const MAX_REPOSITORY: usize = 255;

fn matches(re: &LazyLock<Option<Regex>>, text: &str) -> bool {
    re.as_ref().is_some_and(|r| r.is_match(text))
}

/// A content digest: `sha256:` and 64 lowercase hex digits (the only
/// algorithm Roost accepts; a registry must serve what it names).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Digest(String);

impl Digest {
    /// Parse `text`, refusing other algorithms and malformed hex.
    pub fn parse(text: &str) -> Result<Self, RegistryError> {
        let bad = |detail: &str| RegistryError::Reference {
            text: shown(text),
            detail: detail.to_owned(),
        };
        let Some(hex) = text.strip_prefix("sha256:") else {
            return Err(bad(
                "a digest is `sha256:` and 64 hex digits (no other algorithm is accepted)",
            ));
        };
        if hex.len() != 64
            || !hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        {
            return Err(bad("a sha256 digest has 64 lowercase hex digits"));
        }
        Ok(Self(text.to_owned()))
    }

    /// The digest of `bytes`.
    pub fn of(bytes: &[u8]) -> Self {
        let hash = Sha256::digest(bytes);
        let mut hex = String::with_capacity(64);
        for b in hash {
            hex.push_str(&format!("{b:02x}"));
        }
        Self(format!("sha256:{hex}"))
    }

    /// As text: `sha256:…`.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The hex digits alone.
    pub fn hex(&self) -> &str {
        self.0.strip_prefix("sha256:").unwrap_or(&self.0)
    }
}

impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A plugin in a registry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reference {
    registry: String,
    repository: String,
    tag: Option<String>,
    digest: Option<Digest>,
}

impl Reference {
    /// Whether `text` is meant as a registry reference (it has the scheme).
    pub fn is_reference(text: &str) -> bool {
        text.starts_with(SCHEME)
    }

    /// Parse `oci://REGISTRY/REPOSITORY[:TAG][@sha256:DIGEST]`.
    pub fn parse(text: &str) -> Result<Self, RegistryError> {
        let bad = |detail: String| RegistryError::Reference {
            text: shown(text),
            detail,
        };
        let Some(rest) = text.strip_prefix(SCHEME) else {
            return Err(bad(format!("it does not start with `{SCHEME}`")));
        };
        let (rest, digest) = match rest.rsplit_once('@') {
            Some((r, d)) => (r, Some(Digest::parse(d)?)),
            None => (rest, None),
        };
        let Some((registry, path)) = rest.split_once('/') else {
            return Err(bad(
                "it names a registry but no repository (`oci://REGISTRY/REPOSITORY:TAG`)".into(),
            ));
        };
        if !matches(&REGISTRY, registry) {
            return Err(bad(format!(
                "`{}` is not a registry host (a name or IPv4 address, and a port)",
                shown(registry)
            )));
        }
        if let Some((_, port)) = registry.rsplit_once(':')
            && port.parse::<u16>().is_err()
        {
            return Err(bad(format!("the port `{port}` is out of range")));
        }
        // A `:` after the last `/` starts the tag.
        let (repository, tag) = match path.rsplit_once(':') {
            Some((r, t)) if !t.contains('/') => (r, Some(t)),
            _ => (path, None),
        };
        if repository.len() > MAX_REPOSITORY || !matches(&REPOSITORY, repository) {
            return Err(bad(format!(
                "`{}` is not a repository name (lowercase letters, digits, `.`, `_`, `-`, path parts joined by `/`; at most {MAX_REPOSITORY} characters)",
                shown(repository)
            )));
        }
        if let Some(t) = tag
            && !matches(&TAG, t)
        {
            return Err(bad(format!(
                "`{}` is not a tag (letters, digits, `.`, `_`, `-`; at most 128; not starting with `.` or `-`)",
                shown(t)
            )));
        }
        Ok(Self {
            registry: registry.to_ascii_lowercase(),
            repository: repository.to_owned(),
            tag: tag.map(str::to_owned),
            digest,
        })
    }

    /// `host[:port]`.
    pub fn registry(&self) -> &str {
        &self.registry
    }

    /// The repository path.
    pub fn repository(&self) -> &str {
        &self.repository
    }

    /// The tag, if one was named.
    pub fn tag(&self) -> Option<&str> {
        self.tag.as_deref()
    }

    /// The digest, if pinned.
    pub fn digest(&self) -> Option<&Digest> {
        self.digest.as_ref()
    }

    /// What to ask the registry's manifests endpoint for: the digest when
    /// pinned, else the tag (`latest` when none was named).
    pub fn target(&self) -> &str {
        match (&self.digest, &self.tag) {
            (Some(d), _) => d.as_str(),
            (None, Some(t)) => t,
            (None, None) => DEFAULT_TAG,
        }
    }

    /// This reference pinned at `digest` (the tag kept, for display and
    /// for `outdated`).
    pub fn pinned(&self, digest: Digest) -> Self {
        Self {
            digest: Some(digest),
            ..self.clone()
        }
    }

    /// This reference by its tag alone (what `outdated` resolves again).
    pub fn unpinned(&self) -> Self {
        Self {
            digest: None,
            tag: Some(self.tag.clone().unwrap_or_else(|| DEFAULT_TAG.to_owned())),
            ..self.clone()
        }
    }

    /// The same repository in the same registry (another tag or digest).
    pub fn same_repository(&self, other: &Self) -> bool {
        self.registry == other.registry && self.repository == other.repository
    }

    /// The registry host without its port.
    pub fn host(&self) -> &str {
        self.registry
            .rsplit_once(':')
            .map_or(self.registry.as_str(), |(h, _)| h)
    }

    /// Whether the registry is this machine (`localhost`, `127.0.0.0/8`).
    pub fn is_loopback(&self) -> bool {
        let host = self.host();
        host == "localhost"
            || host
                .parse::<std::net::Ipv4Addr>()
                .is_ok_and(|ip| ip.is_loopback())
    }
}

impl fmt::Display for Reference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{SCHEME}{}/{}", self.registry, self.repository)?;
        if let Some(t) = &self.tag {
            write!(f, ":{t}")?;
        }
        if let Some(d) = &self.digest {
            write!(f, "@{d}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const D: &str = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    #[test]
    fn references_parse_and_print_back() {
        for text in [
            "oci://ghcr.io/roost/hello:1.0.0",
            "oci://127.0.0.1:5000/a/b/c:latest",
            "oci://localhost:5000/hello",
            &format!("oci://ghcr.io/roost/hello@{D}"),
            &format!("oci://ghcr.io/roost/hello:1.2@{D}"),
            "oci://r.example/a__b.c-d---e:v_1.2-rc",
        ] {
            let r = Reference::parse(text).expect(text);
            assert_eq!(r.to_string(), text);
        }
        let r = Reference::parse("oci://Reg.Example:443/x/y:2").expect("parses");
        assert_eq!(
            (r.registry(), r.repository(), r.tag()),
            ("reg.example:443", "x/y", Some("2"))
        );
        assert_eq!(r.target(), "2");
        assert_eq!(Reference::parse("oci://r/x").expect("x").target(), "latest");
        let pinned = Reference::parse(&format!("oci://r/x:1@{D}")).expect("pinned");
        assert_eq!(pinned.target(), D);
        assert_eq!(pinned.unpinned().to_string(), "oci://r/x:1");
        assert!(
            Reference::parse("oci://127.0.0.1:5000/x")
                .expect("l")
                .is_loopback()
        );
        assert!(
            !Reference::parse("oci://ghcr.io/x")
                .expect("g")
                .is_loopback()
        );
    }

    #[test]
    fn malformed_references_are_refused_with_a_reason() {
        for (text, says) in [
            ("ghcr.io/x:1", "does not start with"),
            ("oci://ghcr.io", "no repository"),
            ("oci://ghcr.io/", "not a repository"),
            ("oci://ghcr.io/Upper/case", "not a repository"),
            ("oci://ghcr.io/a/../b", "not a repository"),
            ("oci://ghcr.io/a//b", "not a repository"),
            ("oci://ghcr.io/a:.tag", "not a tag"),
            ("oci://ghcr.io/a:t\u{7}", "not a tag"),
            ("oci://gh cr.io/a", "not a registry host"),
            ("oci://user@ghcr.io/a", "digest"),
            ("oci://ghcr.io:99999/a", "out of range"),
            ("oci://ghcr.io/a@sha512:00", "no other algorithm"),
            ("oci://ghcr.io/a@sha256:ABC", "64 lowercase hex"),
            ("oci://[::1]:5000/a", "not a registry host"),
        ] {
            let e = Reference::parse(text).expect_err(text).to_string();
            assert!(e.contains(says), "{text}: {e}");
        }
        let long = format!("oci://r/{}", "a".repeat(300));
        assert!(Reference::parse(&long).is_err());
    }

    #[test]
    fn a_digest_is_the_sha256_of_the_bytes() {
        assert_eq!(
            Digest::of(b"").as_str(),
            "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert_eq!(Digest::parse(D).expect("d").hex().len(), 64);
    }
}
