//! The web UI: one page, its script, its style and its icon, embedded in
//! the binary (no build step), served at `/` with a strict
//! Content-Security-Policy.
//! It uses the same `/v1` API a script does, with the token the person
//! pastes (kept in the browser's local storage); on a server without
//! tokens (`--no-auth`) the page says so, and nobody is asked for one.

use axum::Router;
use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::get;

const INDEX: &str = include_str!("ui/index.html");
const SCRIPT: &str = include_str!("ui/app.js");
const STYLE: &str = include_str!("ui/app.css");
const ICON: &str = include_str!("ui/favicon.svg");

/// Scripts, styles and connections from this server only; no framing.
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/// What the page says of tokens: `<meta name="roost-auth">` is `token`
/// as written, `none` on a server without them.
const NEEDS_TOKEN: &str = r#"<meta name="roost-auth" content="token">"#;
const NO_TOKEN: &str = r#"<meta name="roost-auth" content="none">"#;

fn asset<B: IntoResponse>(content_type: &'static str, body: B) -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, content_type),
            (header::CONTENT_SECURITY_POLICY, CSP),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
            (header::REFERRER_POLICY, "no-referrer"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        body,
    )
}

/// `/`, `/app.js`, `/app.css`, and the icon at `/favicon.svg` (the page
/// links it) and at `/favicon.ico`, where browsers and tools look for one
/// unasked (an SVG either way: the `Content-Type` says so).
/// `auth`: whether the server asks for tokens.
pub fn routes<S: Clone + Send + Sync + 'static>(auth: bool) -> Router<S> {
    let icon = || async { asset("image/svg+xml", ICON) };
    let index = if auth {
        INDEX.to_owned()
    } else {
        INDEX.replacen(NEEDS_TOKEN, NO_TOKEN, 1)
    };
    Router::new()
        .route(
            "/",
            get(|| async { asset("text/html; charset=utf-8", index) }),
        )
        .route(
            "/app.js",
            get(|| async { asset("text/javascript; charset=utf-8", SCRIPT) }),
        )
        .route(
            "/app.css",
            get(|| async { asset("text/css; charset=utf-8", STYLE) }),
        )
        .route("/favicon.svg", get(icon))
        .route("/favicon.ico", get(icon))
}
