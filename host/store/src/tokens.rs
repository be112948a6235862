//! API tokens of a server: each names a tenant and that tenant's workspace
//! root. Only a token's BLAKE3 hash is stored; the token itself is shown
//! once, when it is made.

use super::db::{Row, params};
use super::{Store, StoreError, now_ms};

/// A token as recorded (never the token itself).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct TokenRecord {
    /// Its public id (the part of the token before the secret).
    pub id: String,
    /// The tenant it acts for.
    pub tenant: String,
    /// The tenant's workspace root (canonical).
    pub root: String,
    /// When it was made (ms since the epoch).
    pub created_at: i64,
    /// When it stops working, if ever.
    pub expires_at: Option<i64>,
    /// When it was revoked, if it was.
    pub revoked_at: Option<i64>,
}

impl TokenRecord {
    /// Whether it is usable at `now` (not revoked, not expired).
    pub fn valid_at(&self, now: i64) -> bool {
        self.revoked_at.is_none() && self.expires_at.is_none_or(|e| now < e)
    }
}

const COLUMNS: &str = "id, tenant, root, created_at, expires_at, revoked_at";

fn row(mut r: Row) -> Result<TokenRecord, StoreError> {
    Ok(TokenRecord {
        id: r.take_text(0)?,
        tenant: r.take_text(1)?,
        root: r.take_text(2)?,
        created_at: r.get(3)?,
        expires_at: r.get(4)?,
        revoked_at: r.get(5)?,
    })
}

impl Store {
    /// Record a token with public `id` whose BLAKE3 hash is `hash`.
    pub fn put_token(
        &self,
        id: &str,
        hash: &str,
        tenant: &str,
        root: &str,
        expires_at: Option<i64>,
    ) -> Result<TokenRecord, StoreError> {
        let now = now_ms();
        self.db.run(|c| {
            c.exec(
                "INSERT INTO tokens (id, hash, tenant, root, created_at, expires_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![id, hash, tenant, root, now, expires_at],
            )
        })?;
        Ok(TokenRecord {
            id: id.to_owned(),
            tenant: tenant.to_owned(),
            root: root.to_owned(),
            created_at: now,
            expires_at,
            revoked_at: None,
        })
    }

    /// The token whose hash is `hash`, if one is recorded (valid or not).
    pub async fn token_by_hash(&self, hash: &str) -> Result<Option<TokenRecord>, StoreError> {
        self.db
            .read_one(
                &format!("SELECT {COLUMNS} FROM tokens WHERE hash = ?1"),
                params![hash],
            )
            .await?
            .into_iter()
            .next()
            .map(row)
            .transpose()
    }

    /// Every token, newest first.
    pub fn list_token_records(&self) -> Result<Vec<TokenRecord>, StoreError> {
        self.db
            .read_long(|c| {
                c.query(
                    &format!("SELECT {COLUMNS} FROM tokens ORDER BY created_at DESC, id"),
                    params![],
                )
            })?
            .into_iter()
            .map(row)
            .collect()
    }

    /// Revoke token `id`; false when there is no such (unrevoked) token.
    pub fn revoke_token(&self, id: &str) -> Result<bool, StoreError> {
        let n = self.db.run(|c| {
            c.exec(
                "UPDATE tokens SET revoked_at = ?2 WHERE id = ?1 AND revoked_at IS NULL",
                params![id, now_ms()],
            )
        })?;
        Ok(n > 0)
    }
}
