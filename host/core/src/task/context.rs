//! Context management: what history the model sees, and condensing it when
//! it outgrows the window. Condensing summarises older messages with the
//! model, keeping the first user message, the most recent messages and
//! every tool_use/tool_result pair intact (the cut always falls just before
//! an assistant message); when summarising fails the older messages are
//! hidden instead. Nothing is ever deleted.

use std::collections::HashMap;

use futures::StreamExt;

use crate::llm::{ChatRequest, ContentBlock, Message, Provider, Role, StreamEvent};
use crate::store::StoredMessage;

/// The history as the model sees it: visible messages, the latest summary
/// right after the first message, consecutive same-role messages merged.
pub fn model_history(visible: &[StoredMessage], summary: Option<&str>) -> Vec<Message> {
    let mut out: Vec<Message> = Vec::with_capacity(visible.len() + 1);
    for (i, m) in visible.iter().enumerate() {
        push_merged(&mut out, m.message.clone());
        if i == 0
            && let Some(s) = summary
        {
            push_merged(&mut out, summary_message(s));
        }
    }
    out
}

fn push_merged(out: &mut Vec<Message>, m: Message) {
    match out.last_mut() {
        Some(last) if last.role == m.role => last.content.extend(m.content),
        _ => out.push(m),
    }
}

/// Where to cut: hide `visible[1..cut]`, where `visible[cut]` is an
/// assistant message and at least `keep` messages stay after it.
pub fn cut_point(visible: &[StoredMessage], keep: usize) -> Option<usize> {
    let last_allowed = visible.len().checked_sub(keep.max(1))?;
    (2..=last_allowed)
        .rev()
        .find(|&i| visible[i].message.role == Role::Assistant)
}

/// Bytes a token is estimated at: the usual rule for English and code
/// under BPE tokenizers. Applied to the request body as the provider sends it.
pub const BYTES_PER_TOKEN: usize = 4;

/// Estimated tokens of `req` as `provider` would send it: everything
/// counts (system prompt, messages, tool definitions, wire framing).
pub fn request_tokens(provider: &dyn Provider, req: &ChatRequest) -> u64 {
    u64::try_from(provider.request_bytes(req) / BYTES_PER_TOKEN).unwrap_or(u64::MAX)
}

/// Wire sizes of history messages, remembered across the turns of a run: a
/// turn measures its system prompt and tool definitions, and only the
/// messages that are new or grew since the last turn (a long task would
/// otherwise serialise its whole history twice a turn). The sum of the
/// messages measured one by one, plus two bytes each for framing, is never
/// below the size of the request that merges them.
#[derive(Debug, Default)]
pub struct RequestSizer {
    /// Bytes of a request with nothing in it.
    empty: Option<usize>,
    /// Message seq → (content blocks when measured, bytes).
    sizes: HashMap<i64, (usize, usize)>,
}

impl RequestSizer {
    /// Estimated tokens of `req`, whose messages are
    /// `model_history(visible, summary)`, as `provider` would send it.
    pub fn tokens(
        &mut self,
        provider: &dyn Provider,
        req: &mut ChatRequest,
        visible: &[StoredMessage],
        summary: Option<&str>,
    ) -> u64 {
        let messages = std::mem::take(&mut req.messages);
        let mut bytes = provider.request_bytes(req);
        req.messages = messages;
        let bare = |messages: Vec<Message>| ChatRequest {
            system: String::new(),
            messages,
            tools: Vec::new(),
            max_tokens: None,
        };
        let empty = *self
            .empty
            .get_or_insert_with(|| provider.request_bytes(&bare(Vec::new())));
        let one = |m: &Message| {
            provider
                .request_bytes(&bare(vec![m.clone()]))
                .saturating_sub(empty)
                .saturating_add(2)
        };
        for m in visible {
            let blocks = m.message.content.len();
            let size = match self.sizes.get(&m.seq) {
                Some(&(b, size)) if b == blocks => size,
                _ => {
                    let size = one(&m.message);
                    self.sizes.insert(m.seq, (blocks, size));
                    size
                }
            };
            bytes = bytes.saturating_add(size);
        }
        if let Some(s) = summary {
            bytes = bytes.saturating_add(one(&summary_message(s)));
        }
        u64::try_from(bytes / BYTES_PER_TOKEN).unwrap_or(u64::MAX)
    }
}

/// The summary as the model sees it, right after the first message.
fn summary_message(summary: &str) -> Message {
    Message::user_text(format!("[Summary of the earlier conversation]\n{summary}"))
}

/// The request that asks for a summary of `history`. Tool calls and results
/// become text (a request without tool definitions may not carry tool
/// blocks), and when the whole does not fit `window` tokens the earliest
/// messages after the first are left out, as the previous summary covers
/// them.
fn summary_request(provider: &dyn Provider, history: &[Message], window: u64) -> ChatRequest {
    let mut messages: Vec<Message> = history.iter().map(as_text).collect();
    let ask = Message::user_text(
        "Summarise the conversation so far for yourself: the task, decisions made, files read or changed and \
         their relevant contents, errors met, and what remains to do. Be complete but concise; do not call tools.",
    );
    let build = |messages: &[Message]| {
        let mut all = messages.to_vec();
        all.push(ask.clone());
        ChatRequest {
            system:
                "You condense an AI coding agent's conversation so it can continue with less context."
                    .into(),
            messages: merge_all(all),
            tools: Vec::new(),
            max_tokens: Some(SUMMARY_MAX_TOKENS),
        }
    };
    let mut req = build(&messages);
    while request_tokens(provider, &req).saturating_add(u64::from(SUMMARY_MAX_TOKENS)) > window
        && messages.len() > 1
    {
        messages.remove(1);
        req = build(&messages);
    }
    req
}

/// Longest summary asked for, in tokens.
const SUMMARY_MAX_TOKENS: u32 = 4096;

/// `m` with tool calls and results written out as text.
fn as_text(m: &Message) -> Message {
    let content = m
        .content
        .iter()
        .map(|b| match b {
            ContentBlock::Text { .. } => b.clone(),
            ContentBlock::ToolUse { name, input, .. } => ContentBlock::Text {
                text: format!("[called {name} with {input}]"),
            },
            ContentBlock::ToolResult {
                content, is_error, ..
            } => ContentBlock::Text {
                text: format!(
                    "[{}]\n{content}",
                    if *is_error {
                        "tool error"
                    } else {
                        "tool result"
                    }
                ),
            },
        })
        .collect();
    Message {
        role: m.role,
        content,
    }
}

/// Ask the model for a summary of `history`, in a request that fits
/// `window` tokens; `None` if it fails.
pub async fn summarise(
    provider: &dyn Provider,
    history: &[Message],
    window: u64,
) -> Option<String> {
    let req = summary_request(provider, history, window);
    let mut stream = provider.stream(&req).await.ok()?;
    let mut text = String::new();
    while let Some(ev) = stream.next().await {
        match ev {
            Ok(StreamEvent::TextDelta(d)) => text.push_str(&d),
            Ok(StreamEvent::Done { .. }) => return (!text.trim().is_empty()).then_some(text),
            Ok(_) => {}
            Err(e) => {
                tracing::warn!("condensing failed: {e}");
                return None;
            }
        }
    }
    None
}

fn merge_all(ms: Vec<Message>) -> Vec<Message> {
    let mut out = Vec::new();
    for m in ms {
        push_merged(&mut out, m);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::ContentBlock;
    use serde_json::json;

    fn tool_result_ids(m: &Message) -> Vec<&str> {
        m.content
            .iter()
            .filter_map(|b| match b {
                ContentBlock::ToolResult { tool_use_id, .. } => Some(tool_use_id.as_str()),
                _ => None,
            })
            .collect()
    }

    fn stored(seq: i64, m: Message) -> StoredMessage {
        StoredMessage {
            seq,
            message: m,
            hidden: false,
            created_at: 0,
        }
    }

    fn call(id: &str) -> Message {
        Message {
            role: Role::Assistant,
            content: vec![ContentBlock::ToolUse {
                id: id.into(),
                name: "t".into(),
                input: json!({}),
            }],
        }
    }

    fn result(id: &str) -> Message {
        Message {
            role: Role::User,
            content: vec![ContentBlock::ToolResult {
                tool_use_id: id.into(),
                content: "r".into(),
                is_error: false,
            }],
        }
    }

    #[test]
    fn cut_keeps_pairs_and_the_first_message() {
        let v: Vec<_> = [
            Message::user_text("task"),
            call("1"),
            result("1"),
            call("2"),
            result("2"),
            call("3"),
            result("3"),
        ]
        .into_iter()
        .enumerate()
        .map(|(i, m)| stored(i as i64 + 1, m))
        .collect();
        let cut = cut_point(&v, 2).expect("a cut");
        assert_eq!(v[cut].message.role, Role::Assistant);
        assert!(v.len() - cut >= 2);
        let kept: Vec<_> = std::iter::once(&v[0]).chain(&v[cut..]).cloned().collect();
        let h = model_history(&kept, Some("summary"));
        assert_eq!(h[0].role, Role::User);
        assert_eq!(
            h[0].content.len(),
            2,
            "summary merged into the first user message"
        );
        // Every tool_result answers a tool_use that is still present.
        for w in h.windows(2) {
            for id in tool_result_ids(&w[1]) {
                assert!(w[0].tool_use_ids().any(|u| u == id));
            }
        }
        assert!(cut_point(&v[..3], 2).is_none());
    }
}
