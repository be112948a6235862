//! TLS to a shared PostgreSQL store (managed databases require it). The
//! URL's `sslmode` chooses, with libpq's names: none, `disable`, `allow` or
//! `prefer` connect in the clear; `require`, `verify-ca` and `verify-full`
//! encrypt and always verify the server's certificate and name, against
//! `sslrootcert` (or `PGSSLROOTCERT`; `system` for the system's roots) or
//! else the system's roots. Roost never encrypts without verifying: a
//! session nobody verified is as open to a man in the middle as none.

use std::path::Path;
use std::sync::Arc;

use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;

use super::StoreError;

/// Where to connect and how: the URL as `tokio-postgres` takes it (without
/// the TLS parameters it does not know) and the TLS configuration, if the
/// URL asked for TLS.
pub(crate) struct Target {
    /// The URL without `sslmode` and `sslrootcert`.
    pub(crate) url: String,
    /// Verified TLS, when `sslmode` asked for it.
    pub(crate) tls: Option<Arc<rustls::ClientConfig>>,
}

/// Read `url`'s TLS parameters; `PGSSLROOTCERT` stands in for a missing
/// `sslrootcert`.
pub(crate) fn target(url: &str) -> Result<Target, StoreError> {
    target_with(url, std::env::var("PGSSLROOTCERT").ok())
}

fn target_with(url: &str, env_root: Option<String>) -> Result<Target, StoreError> {
    let bad = |detail: String| StoreError::Open {
        path: redacted(url).into(),
        detail,
    };
    // A URL without a query has nothing of ours (and `tokio-postgres`
    // reads forms `url` does not, such as several hosts).
    if !url.contains('?') {
        return Ok(Target {
            url: url.to_owned(),
            tls: None,
        });
    }
    let mut parsed = url::Url::parse(url).map_err(|e| bad(format!("not a PostgreSQL URL: {e}")))?;
    let mut mode = None;
    let mut root = None;
    let mut rest = Vec::new();
    for (k, v) in parsed.query_pairs() {
        match k.as_ref() {
            "sslmode" => mode = Some(v.into_owned()),
            "sslrootcert" => root = Some(v.into_owned()),
            _ => rest.push((k.into_owned(), v.into_owned())),
        }
    }
    if mode.is_none() && root.is_none() {
        return Ok(Target {
            url: url.to_owned(),
            tls: None,
        });
    }
    if rest.is_empty() {
        parsed.set_query(None);
    } else {
        parsed.query_pairs_mut().clear().extend_pairs(rest);
    }
    let encrypt = match mode.as_deref() {
        None | Some("disable" | "allow" | "prefer") => false,
        Some("require" | "verify-ca" | "verify-full") => true,
        Some(other) => {
            return Err(bad(format!(
                "sslmode `{other}` is not one of disable, allow, prefer, require, verify-ca, verify-full"
            )));
        }
    };
    let tls = if encrypt {
        let root = root.or(env_root);
        Some(Arc::new(client_config(root.as_deref()).map_err(bad)?))
    } else {
        None
    };
    Ok(Target {
        url: parsed.into(),
        tls,
    })
}

/// A client configuration that trusts the certificates in `root` (a PEM
/// file; `system` or none: the system's roots).
fn client_config(root: Option<&str>) -> Result<rustls::ClientConfig, String> {
    let mut roots = rustls::RootCertStore::empty();
    match root {
        Some(path) if path != "system" => {
            let certs = CertificateDer::pem_file_iter(Path::new(path))
                .map_err(|e| format!("sslrootcert {path}: {e}"))?;
            for cert in certs {
                let cert = cert.map_err(|e| format!("sslrootcert {path}: {e}"))?;
                roots
                    .add(cert)
                    .map_err(|e| format!("sslrootcert {path}: {e}"))?;
            }
            if roots.is_empty() {
                return Err(format!("sslrootcert {path} holds no certificate"));
            }
        }
        _ => {
            let found = rustls_native_certs::load_native_certs();
            for cert in found.certs {
                // A system root rustls cannot read is one fewer to trust.
                let _ = roots.add(cert);
            }
            if roots.is_empty() {
                return Err(
                    "no trusted roots on this system: give the database's CA with sslrootcert"
                        .into(),
                );
            }
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    Ok(rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth())
}

/// A database URL with its password hidden, for messages and logs.
pub(crate) fn redacted(url: &str) -> String {
    // The query holds no secret, and may hold what `tokio-postgres` does
    // not read (this module).
    let base = url.split('?').next().unwrap_or(url);
    match base.parse::<tokio_postgres::Config>() {
        Ok(c) => {
            let user = c.get_user().unwrap_or("");
            let host = c
                .get_hosts()
                .first()
                .map(|h| match h {
                    tokio_postgres::config::Host::Tcp(h) => h.clone(),
                    tokio_postgres::config::Host::Unix(p) => p.display().to_string(),
                })
                .unwrap_or_default();
            let port = c.get_ports().first().copied().unwrap_or(5432);
            let db = c.get_dbname().unwrap_or("");
            format!("postgres://{user}@{host}:{port}/{db}")
        }
        Err(_) => "postgres://…".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::target_with;

    #[test]
    fn plain_urls_pass_through_untouched() {
        for url in [
            "postgres://u:p@h1,h2:5432/db",
            "postgres://u@h/db?application_name=x",
            "postgres://u@h/db?sslmode=disable",
            "postgres://u@h/db?sslmode=prefer&application_name=x",
        ] {
            let t = target_with(url, None).expect("reads");
            assert!(t.tls.is_none(), "{url}");
            assert!(!t.url.contains("sslmode"), "{url} → {}", t.url);
        }
        let t = target_with("postgres://u@h/db?sslmode=prefer&application_name=x", None)
            .expect("reads");
        assert_eq!(t.url, "postgres://u@h/db?application_name=x");
    }

    #[test]
    fn bad_tls_parameters_are_clear_errors() {
        let e = target_with("postgres://u:s3cret@h/db?sslmode=maybe", None)
            .err()
            .expect("refused")
            .to_string();
        assert!(e.contains("sslmode `maybe`"), "{e}");
        assert!(!e.contains("s3cret"), "{e}");
        let dir = tempfile::tempdir().expect("dir");
        let missing = dir.path().join("none.pem");
        let e = target_with(
            &format!(
                "postgres://u@h/db?sslmode=require&sslrootcert={}",
                missing.display()
            ),
            None,
        )
        .err()
        .expect("refused")
        .to_string();
        assert!(e.contains("sslrootcert"), "{e}");
        let junk = dir.path().join("junk.pem");
        std::fs::write(&junk, "not a certificate").expect("write");
        let e = target_with(
            "postgres://u@h/db?sslmode=verify-full",
            junk.to_str().map(str::to_owned),
        )
        .err()
        .expect("refused")
        .to_string();
        assert!(e.contains("holds no certificate"), "{e}");
    }
}
