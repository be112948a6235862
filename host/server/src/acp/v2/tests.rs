//! Every kind of update and request Roost's ACP front-end makes, converted
//! to draft v2 and read back by v2's own types (a conversion that drops or
//! misnames a field fails here, not at an editor).

use super::*;
use agent_client_protocol::v1::schema::{
    ContentChunk, Cost, Diff, PermissionOption, PermissionOptionKind, Plan, PlanEntry,
    PlanEntryPriority, PlanEntryStatus, SessionUpdate, ToolCall, ToolCallContent, ToolCallLocation,
    ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields, ToolKind, UsageUpdate,
};

fn text(t: &str) -> v1::ContentBlock {
    super::super::updates::text(t)
}

fn kind_of(u: &v2::SessionUpdate) -> String {
    serde_json::to_value(u).expect("json")["sessionUpdate"]
        .as_str()
        .expect("kind")
        .to_owned()
}

#[test]
fn every_update_roost_sends_converts_to_v2() {
    let ids = Ids::fresh();
    let call = ToolCall::new("c1", "write_to_file a.txt")
        .kind(ToolKind::Edit)
        .status(ToolCallStatus::Pending)
        .locations(vec![ToolCallLocation::new("/ws/a.txt")])
        .raw_input(json!({"path": "a.txt"}));
    let update = ToolCallUpdate::new(
        "c1",
        ToolCallUpdateFields::new()
            .status(ToolCallStatus::Completed)
            .content(vec![
                ToolCallContent::Diff(Diff::new("/ws/a.txt", "new\n").old_text("old\n".to_owned())),
                ToolCallContent::from(text("done")),
            ]),
    );
    let plan = Plan::new(vec![PlanEntry::new(
        "read a",
        PlanEntryPriority::Medium,
        PlanEntryStatus::InProgress,
    )]);
    let cases = [
        (
            SessionUpdate::AgentMessageChunk(ContentChunk::new(text("hi"))),
            "agent_message_chunk",
        ),
        (
            SessionUpdate::AgentThoughtChunk(ContentChunk::new(text("hm"))),
            "agent_thought_chunk",
        ),
        (
            SessionUpdate::UserMessageChunk(ContentChunk::new(text("do it"))),
            "user_message_chunk",
        ),
        (SessionUpdate::ToolCall(call), "tool_call_update"),
        (SessionUpdate::ToolCallUpdate(update), "tool_call_update"),
        (SessionUpdate::Plan(plan), "plan_update"),
        (
            super::super::commands::available(),
            "available_commands_update",
        ),
        (
            SessionUpdate::UsageUpdate(UsageUpdate::new(120, 128_000).cost(Cost::new(0.5, "USD"))),
            "usage_update",
        ),
    ];
    for (v1_update, want) in cases {
        let converted = update_v2(&v1_update, &ids, "s1")
            .unwrap_or_else(|e| panic!("{v1_update:?} does not convert: {e:?}"));
        assert_eq!(kind_of(&converted), want);
        let v = serde_json::to_value(&converted).expect("json");
        match want {
            "agent_message_chunk" => assert_eq!(v["messageId"], json!(ids.agent)),
            "agent_thought_chunk" => assert_eq!(v["messageId"], json!(ids.thought)),
            "user_message_chunk" => assert_eq!(v["messageId"], json!(ids.user)),
            "plan_update" => assert_eq!(v["plan"]["entries"][0]["content"], "read a"),
            "available_commands_update" => {
                let names: Vec<&str> = v["availableCommands"]
                    .as_array()
                    .expect("commands")
                    .iter()
                    .filter_map(|c| c["name"].as_str())
                    .collect();
                assert_eq!(names, ["undo", "checkpoints", "mode"], "{v}");
            }
            "usage_update" => assert_eq!(v["cost"]["amount"], 0.5, "{v}"),
            "tool_call_update" if v["toolCallId"] == "c1" && v.get("locations").is_some() => {
                assert_eq!(v["locations"][0]["path"], "/ws/a.txt", "{v}");
                assert_eq!(v["rawInput"]["path"], "a.txt", "{v}");
                assert_eq!(v["kind"], "edit", "{v}");
                assert_eq!(v["title"], "write_to_file a.txt", "{v}");
            }
            // Nothing of a call's content is dropped (v2 skips what it
            // cannot read).
            "tool_call_update" if v["toolCallId"] == "c1" && v.get("content").is_some() => {
                assert_eq!(v["content"].as_array().map(Vec::len), Some(2), "{v}");
            }
            _ => {}
        }
    }
}

#[test]
fn a_diff_and_the_status_survive_the_conversion() {
    let update = ToolCallUpdate::new(
        "c1",
        ToolCallUpdateFields::new()
            .status(ToolCallStatus::Failed)
            .content(vec![ToolCallContent::Diff(
                Diff::new("/ws/a.txt", "new\n").old_text("old\n".to_owned()),
            )]),
    );
    let v = serde_json::to_value(
        update_v2(&SessionUpdate::ToolCallUpdate(update), &Ids::fresh(), "s").expect("converts"),
    )
    .expect("json");
    assert_eq!(v["status"], "failed");
    assert_eq!(v["content"][0]["type"], "diff", "{v}");
    assert_eq!(v["content"][0]["changes"][0]["operation"], "modify", "{v}");
    assert_eq!(v["content"][0]["changes"][0]["path"], "/ws/a.txt", "{v}");
    let patch = v["content"][0]["patch"]["text"].as_str().expect("a patch");
    assert!(
        patch.starts_with("diff --git /ws/a.txt /ws/a.txt\n--- /ws/a.txt\n+++ /ws/a.txt\n"),
        "{patch}"
    );
    assert!(patch.contains("-old\n+new\n"), "{patch}");
    // A new file is an `add` from /dev/null.
    let added = ToolCallUpdate::new(
        "c2",
        ToolCallUpdateFields::new()
            .content(vec![ToolCallContent::Diff(Diff::new("/ws/b.txt", "b\n"))]),
    );
    let v = serde_json::to_value(
        update_v2(&SessionUpdate::ToolCallUpdate(added), &Ids::fresh(), "s").expect("converts"),
    )
    .expect("json");
    assert_eq!(v["content"][0]["changes"][0]["operation"], "add", "{v}");
    let patch = v["content"][0]["patch"]["text"].as_str().expect("a patch");
    assert!(patch.contains("--- /dev/null\n+++ /ws/b.txt\n"), "{patch}");
    // The text beside it is kept too.
    assert_eq!(v["content"].as_array().map(Vec::len), Some(1));
}

#[test]
fn a_permission_request_converts_with_its_call_as_subject() {
    let request = v1::RequestPermissionRequest::new(
        "s1",
        ToolCallUpdate::new(
            "c1",
            ToolCallUpdateFields::new().title("Run write_to_file?"),
        ),
        vec![
            PermissionOption::new("allow_once", "Allow", PermissionOptionKind::AllowOnce),
            PermissionOption::new("reject_once", "Reject", PermissionOptionKind::RejectOnce),
        ],
    );
    let v = serde_json::to_value(permission_v2(&request).expect("converts")).expect("json");
    assert_eq!(v["title"], "Run write_to_file?");
    assert_eq!(v["subject"]["type"], "tool_call");
    assert_eq!(v["subject"]["toolCall"]["toolCallId"], "c1");
    assert_eq!(v["options"][1]["optionId"], "reject_once");
    assert_eq!(v["options"][1]["kind"], "reject_once");
    assert_eq!(v["options"].as_array().map(Vec::len), Some(2));
}

#[test]
fn every_stop_reason_is_an_idle_state() {
    for (stop, want) in [
        (Ok(v1::StopReason::EndTurn), "end_turn"),
        (Ok(v1::StopReason::MaxTurnRequests), "max_turn_requests"),
        (Ok(v1::StopReason::Cancelled), "cancelled"),
        (Ok(v1::StopReason::Refusal), "refusal"),
        (Err(invalid("the prompt is empty")), "error"),
    ] {
        let v = serde_json::to_value(idle(stop)).expect("json");
        assert_eq!(v["sessionUpdate"], "state_update", "{v}");
        assert_eq!(v["state"], "idle", "{v}");
        assert_eq!(v["stopReason"], want, "{v}");
    }
}

#[test]
fn the_commands_a_session_offers_are_all_there_in_v2() {
    let names: Vec<String> = available_commands()
        .expect("converts")
        .iter()
        .map(|c| c.name().to_owned())
        .collect();
    assert_eq!(names, ["undo", "checkpoints", "mode"]);
    let v = serde_json::to_value(available_commands().expect("converts")).expect("json");
    assert_eq!(v[0]["input"]["type"], "text", "{v}");
    assert_eq!(v[0]["input"]["hint"], "checkpoint number (optional)", "{v}");
}

#[test]
fn a_config_option_is_named_by_config_id_in_v2() {
    let o = option_v2(json!({"id": "profile", "name": "Model", "type": "select",
        "currentValue": "one", "options": [{"value": "one", "name": "one"}]}));
    let parsed: v2::SessionConfigOption = from_json(o).expect("a v2 option");
    assert_eq!(&*parsed.config_id.0, "profile");
}

#[test]
fn a_v2_choice_of_profile_reads_as_v1s() {
    let req: v2::SetSessionConfigOptionRequest = from_json(json!({
        "sessionId": "s1", "configId": "profile", "type": "id", "value": "two"
    }))
    .expect("a v2 request");
    let v1_req: v1::SetSessionConfigOptionRequest = convert(&req).expect("v1's");
    let v = serde_json::to_value(&v1_req).expect("json");
    assert_eq!(v["configId"], "profile", "{v}");
    assert_eq!(v["value"], "two", "{v}");
    assert!(v.get("type").is_none_or(|t| t != "boolean"), "{v}");
}

#[test]
fn v2s_mcp_servers_read_as_v1s() {
    let servers: Vec<v2::McpServer> = from_json(json!([
        {"type": "stdio", "name": "fs", "command": "/usr/bin/node", "args": ["x.js"],
         "env": [{"name": "TOKEN", "value": "t"}]},
        {"type": "stdio", "name": "bare", "command": "/usr/bin/true"},
        {"type": "http", "name": "remote", "url": "https://mcp.example.com/mcp"},
    ]))
    .expect("v2 servers");
    let v1_servers: Vec<v1::McpServer> =
        from_json(mcp_v1(&servers).expect("converts")).expect("v1's");
    assert_eq!(v1_servers.len(), 3);
    assert!(
        matches!(&v1_servers[0], v1::McpServer::Stdio(s) if s.env.len() == 1 && s.args == ["x.js"])
    );
    assert!(matches!(&v1_servers[1], v1::McpServer::Stdio(s) if s.args.is_empty()));
    assert!(matches!(&v1_servers[2], v1::McpServer::Http(h) if h.headers.is_empty()));
}
