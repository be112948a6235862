//! Context management: what history the model sees, and condensing it when
//! it outgrows the window. Condensing summarises older messages with the
//! model, keeping the first user message, the most recent messages and
//! every tool_use/tool_result pair intact (the cut always falls just before
//! an assistant message); when summarising fails the older messages are
//! hidden instead. Nothing is ever deleted.

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use futures::StreamExt;

use super::history::History;
use crate::llm::{
    ChatRequest, ContentBlock, Message, Parts, Provider, RequestBody, Role, StreamEvent, Usage,
    encode_system,
};
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

/// `system` and its encoding, shared by every task that sends the same
/// prompt: tasks of one mode in one workspace do, and each would escape
/// its kilobytes again for its first request. The last prompt encoded is
/// kept, process-wide.
fn encoded_system(system: &str) -> Result<Arc<(String, Bytes)>, serde_json::Error> {
    static LAST: Mutex<Option<Arc<(String, Bytes)>>> = Mutex::new(None);
    // A value replaced whole: a panic cannot leave it half-written.
    let mut last = LAST.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(known) = last.as_ref().filter(|k| k.0 == system) {
        return Ok(Arc::clone(known));
    }
    let encoded = Arc::new((system.to_owned(), encode_system(system)?));
    *last = Some(Arc::clone(&encoded));
    Ok(encoded)
}

/// Estimated tokens of `req` as `provider` would send it: everything
/// counts (system prompt, messages, tool definitions, wire framing).
pub fn request_tokens(provider: &dyn Provider, req: &ChatRequest) -> u64 {
    u64::try_from(provider.request_bytes(req) / BYTES_PER_TOKEN).unwrap_or(u64::MAX)
}

/// What identifies one model message's encoding: the seqs of the first and
/// last stored messages merged into it, the newest revision among them
/// ([`History::revisions`]), and whether the summary is merged in.
type MessageKey = (i64, i64, u64, bool);

/// The next request's body, built from parts kept across the turns of a
/// run: each model message is encoded once (again only when it changes:
/// tool results filled in, a user message appended to), the tool list
/// once per mode, so a turn copies its history into the body instead of
/// encoding it again. The body's length is the context estimate: what is
/// measured is exactly what is sent.
#[derive(Default)]
pub struct RequestCache {
    /// The encoded model messages of the last body, in order.
    messages: Vec<(MessageKey, Bytes)>,
    /// The summary those encodings were made with.
    summary: Option<String>,
    /// The tool list's encoding.
    tools: Option<Bytes>,
    /// The last system prompt and its encoding (shared with the other
    /// tasks that sent the same one: [`encoded_system`]).
    system: Option<Arc<(String, Bytes)>>,
}

impl RequestCache {
    /// Send `encoded` as the tool list (see [`Registry::encoded_tools`]:
    /// encoded once, shared by every task offered the same tools).
    ///
    /// [`Registry::encoded_tools`]: super::Registry::encoded_tools
    pub fn set_tools(&mut self, encoded: Bytes) {
        self.tools = Some(encoded);
    }

    /// The body of the next request: `system`, the history as the model
    /// sees it ([`model_history`]: visible messages, the summary after the
    /// first, same-role neighbours merged) and the tool list set last.
    pub fn body(
        &mut self,
        provider: &dyn Provider,
        system: &str,
        history: &History,
        max_tokens: Option<u32>,
    ) -> Result<RequestBody, serde_json::Error> {
        let wire = provider.wire();
        let summary = history.summary();
        if self.summary.as_deref() != summary {
            self.messages.clear();
            self.summary = summary.map(str::to_owned);
        }
        let groups = groups(history.visible(), summary.is_some());
        let mut old = std::mem::take(&mut self.messages).into_iter();
        let mut encoded = Vec::with_capacity(groups.len());
        for group in &groups {
            let key = group.key(history);
            let bytes = match old.next() {
                Some((k, bytes)) if k == key => bytes,
                _ => {
                    let mut out;
                    match group.alone(history.visible()) {
                        // Most groups are one stored message: encoded as
                        // it is, not copied into a merged one first.
                        Some(m) => {
                            out = Vec::with_capacity(m.encoded_len_hint());
                            wire.message(&mut out, m)?;
                        }
                        None => {
                            let m = group.merged(history.visible(), summary);
                            out = Vec::with_capacity(m.encoded_len_hint());
                            wire.message(&mut out, &m)?;
                        }
                    }
                    Bytes::from(out)
                }
            };
            encoded.push((key, bytes));
        }
        self.messages = encoded;
        if self.system.as_ref().is_none_or(|s| s.0 != system) {
            self.system = Some(encoded_system(system)?);
        }
        let none = Bytes::new();
        let system = self.system.as_ref().map_or(&none, |s| &s.1);
        let messages: Vec<Bytes> = self.messages.iter().map(|(_, b)| b.clone()).collect();
        wire.body(&Parts {
            model: provider.model(),
            system,
            messages: &messages,
            tools: self.tools.as_ref().unwrap_or(&none),
            max_tokens,
        })
    }
}

impl RequestCache {
    /// Bytes of a request holding only `first` (the task), with the system
    /// prompt and tool list of the last [`RequestCache::body`]: what every
    /// request takes before any work, which no condensation can shrink.
    pub fn floor_bytes(
        &self,
        provider: &dyn Provider,
        first: &Message,
    ) -> Result<usize, serde_json::Error> {
        let wire = provider.wire();
        let mut task = Vec::new();
        wire.message(&mut task, first)?;
        let none = Bytes::new();
        let system = self.system.as_ref().map_or(&none, |s| &s.1);
        let body = wire.body(&Parts {
            model: provider.model(),
            system,
            messages: &[Bytes::from(task)],
            tools: self.tools.as_ref().unwrap_or(&none),
            max_tokens: None,
        })?;
        Ok(body.len())
    }

    /// Bytes of the system prompt and of the tool list as the last
    /// [`RequestCache::body`] sent them.
    pub fn fixed_parts(&self) -> (usize, usize) {
        (
            self.system.as_ref().map_or(0, |s| s.1.len()),
            self.tools.as_ref().map_or(0, Bytes::len),
        )
    }
}

/// A part of a model message: a stored message (by index into the visible
/// history), or the summary.
#[derive(Clone, Copy, PartialEq)]
enum Piece {
    Stored(usize),
    Summary,
}

/// One model message: a run of same-role pieces, merged.
struct Group {
    role: Role,
    pieces: Vec<Piece>,
}

impl Group {
    fn key(&self, history: &History) -> MessageKey {
        let visible = history.visible();
        let revisions = history.revisions();
        let stored = || {
            self.pieces.iter().filter_map(|p| match p {
                Piece::Stored(i) => Some(*i),
                Piece::Summary => None,
            })
        };
        let seq = |i: Option<usize>| i.and_then(|i| visible.get(i)).map_or(0, |m| m.seq);
        let newest = stored()
            .filter_map(|i| revisions.get(i).copied())
            .max()
            .unwrap_or(0);
        (
            seq(stored().next()),
            seq(stored().next_back()),
            newest,
            self.pieces.contains(&Piece::Summary),
        )
    }

    /// The group's message when it is one stored message alone.
    fn alone<'h>(&self, visible: &'h [StoredMessage]) -> Option<&'h Message> {
        match self.pieces.as_slice() {
            [Piece::Stored(i)] => visible.get(*i).map(|m| &m.message),
            _ => None,
        }
    }

    /// The group as one message, as [`model_history`] merges it.
    fn merged(&self, visible: &[StoredMessage], summary: Option<&str>) -> Message {
        let mut content = Vec::new();
        for piece in &self.pieces {
            match (piece, summary) {
                (Piece::Stored(i), _) => {
                    if let Some(m) = visible.get(*i) {
                        content.extend(m.message.content.iter().cloned());
                    }
                }
                (Piece::Summary, Some(s)) => content.extend(summary_message(s).content),
                (Piece::Summary, None) => {}
            }
        }
        Message {
            role: self.role,
            content,
        }
    }
}

/// The model messages of `visible`, as [`model_history`] forms them.
fn groups(visible: &[StoredMessage], with_summary: bool) -> Vec<Group> {
    let mut out: Vec<Group> = Vec::with_capacity(visible.len() + 1);
    let mut push = |role: Role, piece: Piece| match out.last_mut() {
        Some(g) if g.role == role => g.pieces.push(piece),
        _ => out.push(Group {
            role,
            pieces: vec![piece],
        }),
    };
    for (i, m) in visible.iter().enumerate() {
        push(m.message.role, Piece::Stored(i));
        if i == 0 && with_summary {
            // The summary is a user message right after the first one.
            push(Role::User, Piece::Summary);
        }
    }
    out
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
fn summary_request(
    provider: &dyn Provider,
    history: &[Message],
    window: u64,
    max_tokens: u32,
) -> ChatRequest {
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
            max_tokens: Some(max_tokens),
        }
    };
    let mut req = build(&messages);
    while request_tokens(provider, &req).saturating_add(u64::from(max_tokens)) > window
        && messages.len() > 1
    {
        messages.remove(1);
        req = build(&messages);
    }
    req
}

/// Longest summary asked for, in tokens (less when the window leaves
/// less room: see [`summary_max_tokens`]).
const SUMMARY_MAX_TOKENS: u32 = 4096;

/// Shortest summary asked for, in tokens.
const SUMMARY_MIN_TOKENS: u32 = 256;

/// The longest summary worth asking for when the conversation has `room`
/// tokens (the window's share left by the system prompt, the tools and
/// the task): at most half of it, or the summary itself crowds out the
/// turns it was made to leave room for.
pub fn summary_max_tokens(room: u64) -> u32 {
    u32::try_from(room / 2)
        .unwrap_or(u32::MAX)
        .clamp(SUMMARY_MIN_TOKENS, SUMMARY_MAX_TOKENS)
}

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

/// Ask the model for a summary of `history` of at most `max_tokens`, in a
/// request that fits `window` tokens; `None` if it fails. With the tokens
/// the request took, which count towards the task's totals.
pub async fn summarise(
    provider: &dyn Provider,
    history: &[Message],
    window: u64,
    max_tokens: u32,
) -> (Option<String>, Usage) {
    let mut usage = Usage::default();
    let req = summary_request(provider, history, window, max_tokens);
    let Ok(mut stream) = provider.stream(&req).await else {
        return (None, usage);
    };
    let mut text = String::new();
    while let Some(ev) = stream.next().await {
        match ev {
            Ok(StreamEvent::TextDelta(d)) => text.push_str(&d),
            // The summary's own tokens count like any request's.
            Ok(StreamEvent::Usage(u)) => usage.add(&u),
            Ok(StreamEvent::Done { .. }) => {
                return ((!text.trim().is_empty()).then_some(text), usage);
            }
            Ok(_) => {}
            Err(e) => {
                tracing::warn!("condensing failed: {e}");
                return (None, usage);
            }
        }
    }
    (None, usage)
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

    /// The system prompt's encoding is shared between tasks, never stale:
    /// whatever prompt came before (from this thread or another test's),
    /// each is encoded as itself.
    #[test]
    fn a_system_prompts_shared_encoding_is_always_its_own() {
        let prompts = [
            "one \"prompt\"\n",
            "another",
            "one \"prompt\"\n",
            "",
            "another",
        ];
        for p in prompts {
            let got = encoded_system(p).expect("encoded");
            assert_eq!(got.0, p);
            assert_eq!(&got.1[..], serde_json::to_vec(p).expect("json").as_slice());
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

    /// The body built from kept parts is byte for byte the body encoded
    /// afresh, in both wire formats, through every kind of history
    /// change: appended messages, tool results filled in, a user message
    /// added to, a condensation summary, a reload, a new tool list.
    #[tokio::test]
    async fn kept_parts_make_the_same_body_as_a_fresh_encoding() {
        use std::sync::Arc;

        use crate::llm::anthropic::Anthropic;
        use crate::llm::scripted::{Script, ScriptedTransport};
        use crate::llm::{OpenAiCompatible, RetryPolicy, ToolDefinition, anthropic, openai};
        use crate::store::{NewTask, Store};

        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(&dir.path().join("roost.db")).expect("store");
        let task = store
            .create_task(&NewTask {
                parent_id: None,
                root_id: None,
                mode: "code".into(),
                workspace: "/ws".into(),
                prompt: "p".into(),
                provider: "scripted".into(),
                model: "m".into(),
                base_url: String::new(),
                profile: String::new(),
                settings: None,
                owner: None,
                active_intent: None,
            })
            .expect("task");
        store
            .append_api(&task.id, &Message::user_text("<task>\nfix \"it\"\n</task>"))
            .expect("first");
        let transport = || {
            Arc::new(ScriptedTransport::new(Script {
                model: "m".into(),
                turns: Vec::new(),
                summary: None,
                summary_usage: None,
                tasks: Vec::new(),
            }))
        };
        let openai_p = OpenAiCompatible::new("scripted", "m", transport(), RetryPolicy::default());
        let anthropic_p = Anthropic::new("claude", transport(), RetryPolicy::default());
        type Fresh = fn(&str, &ChatRequest) -> Result<Vec<u8>, serde_json::Error>;
        let providers: [(&dyn Provider, Fresh); 2] = [
            (&openai_p, openai::request_json),
            (&anthropic_p, anthropic::request_json),
        ];
        let tools = |n: usize| -> Vec<ToolDefinition> {
            (0..n)
                .map(|i| ToolDefinition {
                    name: format!("t{i}"),
                    description: "a \"tool\"\n".into(),
                    parameters: json!({"type": "object", "properties": {"x": {"type": "string"}}}),
                })
                .collect()
        };
        let mut history = History::load(&store, &task.id).expect("history");
        let mut caches: Vec<RequestCache> =
            providers.iter().map(|_| RequestCache::default()).collect();
        let mut tool_count = 2;
        let check =
            |history: &History, caches: &mut Vec<RequestCache>, tool_count: usize, what: &str| {
                for ((provider, fresh), cache) in providers.iter().zip(caches.iter_mut()) {
                    let mut encoded = Vec::new();
                    provider
                        .wire()
                        .tools(&mut encoded, &tools(tool_count))
                        .expect("tools");
                    cache.set_tools(encoded.into());
                    let kept = cache
                        .body(*provider, "system \u{1F600}", history, None)
                        .expect("kept");
                    let req = ChatRequest {
                        system: "system \u{1F600}".into(),
                        messages: model_history(history.visible(), history.summary()),
                        tools: tools(tool_count),
                        max_tokens: None,
                    };
                    let fresh = fresh(provider.model(), &req).expect("fresh");
                    assert_eq!(
                        String::from_utf8_lossy(&kept.to_bytes()),
                        String::from_utf8_lossy(&fresh),
                        "{} after {what}",
                        provider.name()
                    );
                }
            };
        check(&history, &mut caches, tool_count, "the first message");
        for turn in 0..4 {
            let reply = Message {
                role: Role::Assistant,
                content: vec![
                    ContentBlock::Text {
                        text: format!("turn {turn}"),
                    },
                    ContentBlock::ToolUse {
                        id: format!("c{turn}a"),
                        name: "t0".into(),
                        input: json!({"x": "é\u{0}"}),
                    },
                    ContentBlock::ToolUse {
                        id: format!("c{turn}b"),
                        name: "t1".into(),
                        input: json!({}),
                    },
                ],
            };
            let seq = store.append_api(&task.id, &reply).expect("reply");
            history.reload().expect("reload");
            let _ = seq;
            check(&history, &mut caches, tool_count, "a reply");
            let mut results = result(&format!("c{turn}a"));
            let rseq = store.append_api(&task.id, &results).expect("results");
            history.reload().expect("reload");
            check(&history, &mut caches, tool_count, "the first result");
            results.content.extend(result(&format!("c{turn}b")).content);
            history.update(rseq, results).expect("second result");
            check(&history, &mut caches, tool_count, "the second result");
        }
        history
            .add_user_text("<user_message>\nalso this\n</user_message>".into())
            .expect("queued message");
        check(&history, &mut caches, tool_count, "a queued message");
        tool_count = 5;
        check(&history, &mut caches, tool_count, "a new tool list");
        let visible = history.visible().to_vec();
        store
            .condense(&task.id, visible[1].seq, visible[4].seq, "the summary")
            .expect("condensed");
        history.reload().expect("reload");
        check(&history, &mut caches, tool_count, "a condensation");
        history.reload().expect("reload");
        check(&history, &mut caches, tool_count, "a reload");
    }
}
