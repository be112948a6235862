//! A model's tool-call arguments as they stream in: deltas of several
//! interleaved calls (the parts of the input, each led by a byte naming
//! its call), parsed best-effort as they grow (for the UI) and strictly
//! at the end.
//!
//! Must hold: no panic on any prefix; each finished call's arguments are
//! exactly the strict parse of everything its deltas said, in order, and
//! an object when they parse.

use std::collections::BTreeMap;

use roost_llm::ToolCallAssembler;
use roost_llm::{partial_json as partial, strict_json as strict};

use crate::input::Input;

/// The target.
pub fn run(data: &[u8]) {
    let mut input = Input::new(data);
    let mut assembler = ToolCallAssembler::new();
    let mut said: BTreeMap<u32, String> = BTreeMap::new();
    let mut parts = 0;
    loop {
        let which = u32::from(input.byte() % 4);
        let delta = input.text();
        if delta.is_empty() && parts > 0 {
            break;
        }
        parts += 1;
        if assembler.start(which, None, Some("tool")) {
            said.entry(which).or_default();
        }
        said.entry(which).or_default().push_str(&delta);
        let _ = assembler.push_args(which, &delta);
        if let Some(buf) = said.get(&which) {
            let _ = partial(buf);
        }
        if parts > 64 {
            break;
        }
    }
    let mut n = 0;
    let calls = assembler.finish(|| {
        n += 1;
        format!("call_{n}")
    });
    assert_eq!(calls.len(), said.len());
    for (call, (_, raw)) in calls.iter().zip(&said) {
        assert_eq!(&call.raw_args, raw);
        assert_eq!(call.args, strict("tool", raw));
        if let Ok(v) = &call.args {
            assert!(v.is_object());
        }
    }
}
