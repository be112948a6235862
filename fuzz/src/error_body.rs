//! A provider's error response: any body (JSON, an HTML page, a proxy's
//! text) and any `Retry-After` value, as the HTTP transport reads them.
//!
//! Must hold: the message is one line, bounded; a retry delay is finite.

use roost_llm::{parse_retry_after, summarise_body};

use crate::input::Input;

/// The target.
pub fn run(data: &[u8]) {
    let mut input = Input::new(data);
    let html = input.byte() % 2 == 1;
    let retry_after = input.text();
    let body = String::from_utf8_lossy(input.rest());
    let said = summarise_body(&body, html);
    assert!(said.len() <= 2000 + 3, "{} bytes", said.len());
    assert!(!said.contains('\n'), "not one line: {said:?}");
    if let Some(d) = parse_retry_after(&retry_after) {
        let _ = d.as_secs_f64();
    }
}
