//! Server tokens as a front-end manages them (`roost token create|list|
//! revoke`) and checks them (every request of `roost serve`): a token acts
//! for one tenant, whose tasks must lie under that tenant's workspace root.

use std::path::Path;
use std::time::Duration;

use crate::store::{Store, StoreError, StoreLocation, TokenRecord, now_ms};
use roost_sandbox::capability::Workspace;

use super::EngineError;

/// Why a token cannot be made.
#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    /// The tenant's name is not `a-z 0-9 _ -`, 1 to 64 long.
    #[error("tenant name `{0}`: use 1 to 64 of a-z, 0-9, `_` and `-`")]
    BadTenant(String),
    /// The root is not a directory Roost can open.
    #[error("workspace root {path}: {detail}")]
    BadRoot {
        /// As given.
        path: String,
        /// Why.
        detail: String,
    },
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The tokens of a store.
#[derive(Clone)]
pub struct Tokens {
    store: Store,
}

/// A new token: shown once, stored only as its hash.
#[derive(Debug, Clone)]
pub struct NewToken {
    /// The token (`roost_<id>_<secret>`).
    pub token: String,
    /// Its record.
    pub record: TokenRecord,
}

/// The hash a token is stored and looked up by.
fn hash(token: &str) -> String {
    blake3::hash(token.as_bytes()).to_hex().to_string()
}

impl Tokens {
    pub(super) fn new(store: Store) -> Self {
        Self { store }
    }

    /// The tokens of the store at `location` (opening, or creating, it).
    pub fn open(location: &StoreLocation) -> Result<Self, StoreError> {
        Ok(Self::new(Store::open_at(location)?))
    }

    /// Make a token for `tenant`, whose workspaces lie under `root`,
    /// valid for `ttl` (or until revoked).
    pub fn create(
        &self,
        tenant: &str,
        root: &Path,
        ttl: Option<Duration>,
    ) -> Result<NewToken, TokenError> {
        let ok_name = !tenant.is_empty()
            && tenant.len() <= 64
            && tenant
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-');
        if !ok_name {
            return Err(TokenError::BadTenant(tenant.to_owned()));
        }
        let root = Workspace::open(root)
            .map_err(|e| TokenError::BadRoot {
                path: root.display().to_string(),
                detail: e.to_string(),
            })?
            .host_path()
            .display()
            .to_string();
        // 122 random bits per v4 UUID: the id carries 48 of one, the
        // secret 244 of two more.
        let id = uuid::Uuid::new_v4().simple().to_string()[..12].to_owned();
        let secret = format!(
            "{}{}",
            uuid::Uuid::new_v4().simple(),
            uuid::Uuid::new_v4().simple()
        );
        let token = format!("roost_{id}_{secret}");
        let expires_at =
            ttl.map(|t| now_ms().saturating_add(i64::try_from(t.as_millis()).unwrap_or(i64::MAX)));
        let record = self
            .store
            .put_token(&id, &hash(&token), tenant, &root, expires_at)?;
        Ok(NewToken { token, record })
    }

    /// The token's record when it is known, not revoked and not expired.
    /// Awaited: a server checks one on every request.
    pub async fn verify(&self, token: &str) -> Result<Option<TokenRecord>, EngineError> {
        if !token.starts_with("roost_") || token.len() > 200 {
            return Ok(None);
        }
        Ok(self
            .store
            .token_by_hash(&hash(token))
            .await?
            .filter(|t| t.valid_at(now_ms())))
    }

    /// Every token (none of their secrets), newest first.
    pub fn list(&self) -> Result<Vec<TokenRecord>, EngineError> {
        Ok(self.store.list_token_records()?)
    }

    /// Revoke token `id`; whether it was live.
    pub fn revoke(&self, id: &str) -> Result<bool, EngineError> {
        Ok(self.store.revoke_token(id)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn tokens_verify_until_revoked_or_expired() {
        let dir = tempfile::tempdir().expect("tempdir");
        let tokens = Tokens::open(&crate::store::StoreLocation::File(
            crate::store::Store::default_path(&dir.path().join("data")),
        ))
        .expect("store");
        let t = tokens.create("team-a", dir.path(), None).expect("token");
        assert!(t.token.starts_with(&format!("roost_{}_", t.record.id)));
        let seen = tokens
            .verify(&t.token)
            .await
            .expect("verify")
            .expect("valid");
        assert_eq!(seen.tenant, "team-a");
        // Nothing but the hash is stored.
        let db = std::fs::read(dir.path().join("data/roost.db")).expect("db");
        let secret = t.token.rsplit('_').next().expect("secret");
        assert!(!db.windows(secret.len()).any(|w| w == secret.as_bytes()));
        assert!(
            tokens
                .verify(&format!("{}x", t.token))
                .await
                .expect("verify")
                .is_none()
        );
        assert!(
            tokens
                .verify("Bearer nonsense")
                .await
                .expect("verify")
                .is_none()
        );
        assert!(tokens.revoke(&t.record.id).expect("revoke"));
        assert!(tokens.verify(&t.token).await.expect("verify").is_none());
        let expired = tokens
            .create("team-a", dir.path(), Some(Duration::ZERO))
            .expect("token");
        assert!(
            tokens
                .verify(&expired.token)
                .await
                .expect("verify")
                .is_none()
        );
        assert!(matches!(
            tokens.create("Team A", dir.path(), None),
            Err(TokenError::BadTenant(_))
        ));
        assert!(matches!(
            tokens.create("a", &dir.path().join("missing"), None),
            Err(TokenError::BadRoot { .. })
        ));
    }
}
