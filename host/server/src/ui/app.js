// Roost's web UI: one page over the same /v1 API a script uses. Every
// text from a task (the model, tools, files) is shown with textContent,
// never parsed as HTML.
"use strict";

const api = "/v1";
let token = localStorage.getItem("roost-token") || "";
let current = null;      // the task shown
let stream = null;       // its event stream's controller
let lastSeq = 0;         // the last event seq shown (Last-Event-ID)
let openText = null;     // the element streamed text goes into

const $ = (id) => document.getElementById(id);
const el = (tag, cls, text) => {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
};

async function call(method, path, body) {
  const headers = { authorization: "Bearer " + token };
  if (body !== undefined) headers["content-type"] = "application/json";
  const r = await fetch(api + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await r.text();
  const data = text ? JSON.parse(text) : null;
  if (!r.ok) {
    const err = new Error((data && data.message) || r.statusText);
    err.status = r.status;
    throw err;
  }
  return data;
}

function show(signedIn) {
  $("signin").hidden = signedIn;
  $("home").hidden = !signedIn;
  $("signout").hidden = !signedIn;
}

async function signIn(t) {
  token = t;
  let me;
  try {
    me = await call("GET", "/me");
  } catch (e) {
    $("signin-error").textContent = e.status === 401 ? "That token is not valid." : e.message;
    token = "";
    show(false);
    return;
  }
  if (t) localStorage.setItem("roost-token", t);
  $("signin-error").textContent = "";
  // Who is signed in, and where their workspaces lie.
  $("who").textContent = "Signed in as " + me.tenant;
  $("who").title = "Workspace root: " + me.root;
  show(true);
  // Without tokens there is nothing to sign out of.
  $("signout").hidden = !me.auth;
  refreshTasks();
  loadModes();
  loadProfiles();
}

// Fill a <select> with [value, label] pairs, keeping the choice made if
// it is still there, else `preferred`.
function fillSelect(select, options, preferred) {
  const chosen = select.value;
  select.replaceChildren();
  for (const [value, label] of options) {
    const o = el("option", "", label);
    o.value = value;
    select.append(o);
  }
  const values = options.map(([v]) => v);
  if (values.includes(chosen)) select.value = chosen;
  else if (values.includes(preferred)) select.value = preferred;
}

// The modes of the workspace typed (its own `.roomodes` too), or of the
// root while none is.
async function loadModes() {
  const ws = $("nt-workspace").value.trim() || ".";
  let modes;
  try {
    modes = await call("GET", "/modes?workspace=" + encodeURIComponent(ws));
  } catch (e) {
    return;  // Not a workspace (yet): the list stays as it was.
  }
  fillSelect($("nt-mode"), modes.map((m) => [m.slug, m.name + " (" + m.slug + ")"]), "code");
}

async function loadProfiles() {
  let profiles;
  try {
    profiles = await call("GET", "/profiles");
  } catch (e) {
    profiles = [];
  }
  const def = profiles.find((p) => p.default);
  const options = [["", def ? "Server default (" + def.name + ")" : "Server default"]];
  for (const p of profiles) options.push([p.name, p.model ? p.name + " · " + p.model : p.name]);
  fillSelect($("nt-profile"), options, "");
}

async function refreshTasks() {
  if ($("home").hidden) return;  // Not signed in.
  let list;
  try {
    list = await call("GET", "/tasks?limit=50");
  } catch (e) {
    return;
  }
  const ul = $("tasks");
  ul.replaceChildren();
  for (const t of list.tasks) {
    const li = el("li", t.id === current ? "current" : "");
    li.dataset.id = t.id;
    const shown = t.queued ? "queued" : t.interrupted ? "interrupted" : t.status;
    li.append(el("span", "status " + (t.queued ? "queued" : t.status), shown));
    li.append(el("span", "", t.prompt.split("\n")[0].slice(0, 80)));
    li.addEventListener("click", () => openTask(t.id));
    ul.append(li);
  }
}

function diffBlock(diff) {
  const pre = el("div", "diff");
  for (const line of diff.split("\n")) {
    let cls = "";
    if (line.startsWith("+") && !line.startsWith("+++")) cls = "add";
    else if (line.startsWith("-") && !line.startsWith("---")) cls = "del";
    else if (line.startsWith("@@")) cls = "hunk";
    pre.append(el("span", cls, line + "\n"));
  }
  return pre;
}

// A result the model reports (attempt_completion), as text.
function completionBlock(args, tag) {
  const box = el("div", tag ? "completion child" : "completion");
  box.append(el("strong", "", tag + "Result"), el("div", "", (args && args.result) || ""));
  return box;
}

function logAppend(node) {
  const log = $("log");
  log.append(node);
  log.scrollTop = log.scrollHeight;
}

// An event of a subtask the open task follows (it comes through the
// task's stream under the subtask's id): a compact line, and its questions.
function onChildEvent(env) {
  // Ids begin with their creation time: siblings differ at the end.
  const tag = "[child " + env.task_id.slice(-8) + "] ";
  switch (env.event) {
    case "message_final":
      if (env.text) logAppend(el("div", "msg child", tag + env.text));
      break;
    case "tool_call_requested":
      if (env.tool === "attempt_completion") logAppend(completionBlock(env.args, tag));
      else logAppend(el("div", "tool child", tag + "» " + env.tool + " " + JSON.stringify(env.args)));
      break;
    case "tool_call_denied":
      logAppend(el("div", "error child", tag + "✗ denied" + (env.feedback ? ": " + env.feedback : "")));
      break;
    case "ask_required":
      refreshAsks();
      break;
  }
}

function onEvent(env) {
  if (current && env.task_id && env.task_id !== current) {
    onChildEvent(env);
    return;
  }
  if (env.seq) lastSeq = Math.max(lastSeq, env.seq);
  switch (env.event) {
    case "subtask_started":
      openText = null;
      logAppend(el("div", "tool", "⤷ subtask " + env.child_id.slice(-8) + " · " + env.mode + ": " + env.message));
      break;
    case "group_started":
      openText = null;
      logAppend(el("div", "tool", "⤷ parallel group " + env.group_id.slice(-8) + " · " + env.children + " subtasks · " + env.strategy));
      break;
    case "group_finished":
      logAppend(el("div", env.status === "completed" ? "result" : "error",
        "⤶ parallel group " + env.group_id.slice(-8) + " " + env.status));
      break;
    case "subtask_finished":
      logAppend(el("div", env.status === "completed" ? "result" : "error",
        "⤶ subtask " + env.child_id.slice(-8) + " " + env.status + ": " + env.result));
      refreshAsks();
      break;
    case "message_partial":
      if (!openText) { openText = el("div", "msg"); logAppend(openText); }
      openText.textContent += env.delta;
      break;
    case "message_final":
      if (!openText && env.text) logAppend(el("div", "msg", env.text));
      openText = null;
      break;
    case "tool_call_requested":
      openText = null;
      // The result is said once, here; its question only asks to accept it.
      if (env.tool === "attempt_completion") logAppend(completionBlock(env.args, ""));
      else logAppend(el("div", "tool", "» " + env.tool + " " + JSON.stringify(env.args)));
      break;
    case "tool_call_result": {
      const r = env.result || {};
      const text = r.ok !== undefined ? r.ok : "error [" + r.error.code + "]: " + r.error.message;
      logAppend(el("div", "result", text.split("\n").slice(0, 8).join("\n")));
      if (env.diff) logAppend(diffBlock(env.diff));
      break;
    }
    case "tool_call_denied":
      logAppend(el("div", "error", "✗ denied" + (env.feedback ? ": " + env.feedback : "")));
      break;
    case "todos_updated":
      $("todos").replaceChildren(el("strong", "", "Todo list"), el("pre", "", env.markdown));
      break;
    case "ask_required":
      refreshAsks();
      break;
    case "completed":
      logAppend(el("div", "done", "✔ completed"));
      refreshAsks();
      refreshTasks();
      break;
    case "aborted":
    case "failed":
    case "paused":
      logAppend(el("div", "error", env.event + ": " + (env.reason || env.error || "")));
      refreshTasks();
      break;
  }
}

// Follow a task's events: fetch keeps the Authorization header (an
// EventSource cannot send one); reconnects resume after lastSeq.
async function follow(id) {
  if (stream) stream.abort();
  const ctl = new AbortController();
  stream = ctl;
  while (current === id && !ctl.signal.aborted) {
    try {
      const headers = { authorization: "Bearer " + token };
      if (lastSeq) headers["last-event-id"] = String(lastSeq);
      const r = await fetch(api + "/tasks/" + id + "/events", { headers, signal: ctl.signal });
      if (!r.ok) return;
      const reader = r.body.getReader();
      const dec = new TextDecoder();
      let buf = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buf += dec.decode(value, { stream: true });
        let cut;
        while ((cut = buf.indexOf("\n\n")) >= 0) {
          const frame = buf.slice(0, cut);
          buf = buf.slice(cut + 2);
          const data = frame.split("\n").filter((l) => l.startsWith("data:")).map((l) => l.slice(5).trimStart()).join("");
          if (data) onEvent(JSON.parse(data));
        }
      }
      // The task's stream ended: it finished or stopped.
      const t = await call("GET", "/tasks/" + id);
      if (!["running", "waiting_for_approval", "waiting_for_input", "waiting_for_subtask"].includes(t.status)) return;
    } catch (e) {
      if (ctl.signal.aborted) return;
    }
    await new Promise((res) => setTimeout(res, 1000));
  }
}

async function decide(id, askId, decision) {
  try {
    await call("POST", "/tasks/" + id + "/asks/" + askId, decision);
  } catch (e) {
    logAppend(el("div", "error", e.message));
  }
  refreshAsks();
}

async function refreshAsks() {
  if (!current) return;
  const id = current;
  let asks = [];
  try {
    asks = await call("GET", "/tasks/" + id + "/asks?tree=true");
  } catch (e) {
    return;
  }
  const box = $("asks");
  box.replaceChildren();
  for (const a of asks) {
    const card = el("div", "ask");
    card.dataset.askId = a.ask_id;
    card.dataset.kind = a.kind;
    // A subtask's question is answered where its task is.
    const owner = a.task_id || id;
    const who = owner === id ? "" : "[child " + owner.slice(-8) + "] ";
    // A result is in the log above (completionBlock): not repeated here.
    card.append(el("div", "", who + (a.kind === "completion" ? "Accept the result above?" : a.question)));
    if (a.ask.preview) card.append(diffBlock(a.ask.preview));
    if (a.kind === "followup" && a.ask.suggestions) {
      for (const s of a.ask.suggestions) card.append(el("div", "", "• " + s));
    }
    const buttons = el("div", "buttons");
    const feedback = el("input");
    feedback.placeholder = a.kind === "tool" || a.kind === "scope" || a.kind === "hook" ? "Feedback (with Deny)" : "Your answer";
    const btn = (label, cls, fn) => {
      const b = el("button", cls, label);
      b.type = "button";
      b.addEventListener("click", fn);
      buttons.append(b);
    };
    if (a.kind === "tool" || a.kind === "scope" || a.kind === "hook") {
      btn("Approve", "primary", () => decide(owner, a.ask_id, { decision: "approve" }));
      if (a.kind === "tool") btn("Approve for task", "", () => decide(owner, a.ask_id, { decision: "approve_for_task" }));
      btn("Deny", "danger", () => decide(owner, a.ask_id, { decision: "deny", feedback: feedback.value || undefined }));
    } else if (a.kind === "completion") {
      btn("Accept", "primary", () => decide(owner, a.ask_id, { decision: "accept" }));
      btn("Send feedback", "", () => feedback.value && decide(owner, a.ask_id, { decision: "answer", text: feedback.value }));
    } else {
      btn("Answer", "primary", () => feedback.value && decide(owner, a.ask_id, { decision: "answer", text: feedback.value }));
    }
    card.append(feedback, buttons);
    box.append(card);
  }
  // A question waiting for the person is what they need to see.
  if (box.firstChild) box.firstChild.scrollIntoView({ block: "nearest" });
}

async function openTask(id) {
  current = id;
  lastSeq = 0;
  openText = null;
  $("chat").hidden = false;
  $("log").replaceChildren();
  $("todos").replaceChildren();
  $("asks").replaceChildren();
  try {
    const t = await call("GET", "/tasks/" + id);
    $("chat-head").replaceChildren(el("strong", "", t.prompt.split("\n")[0]), el("div", "", t.mode + " · " + t.model + " · " + t.workspace));
  } catch (e) {
    return;
  }
  refreshTasks();
  refreshAsks();
  follow(id);
}

$("signin-form").addEventListener("submit", (e) => {
  e.preventDefault();
  signIn($("token").value.trim());
});
$("signout").addEventListener("click", () => {
  localStorage.removeItem("roost-token");
  token = "";
  current = null;
  $("who").textContent = "";
  $("who").title = "";
  if (stream) stream.abort();
  show(false);
});
$("nt-workspace").addEventListener("change", loadModes);
$("new-task").addEventListener("submit", async (e) => {
  e.preventDefault();
  const body = { prompt: $("nt-prompt").value, workspace: $("nt-workspace").value };
  if ($("nt-mode").value) body.mode = $("nt-mode").value;
  if ($("nt-profile").value) body.profile = $("nt-profile").value;
  try {
    const t = await call("POST", "/tasks", body);
    $("nt-error").textContent = "";
    $("nt-prompt").value = "";
    openTask(t.id);
  } catch (err) {
    $("nt-error").textContent = err.message;
  }
});
$("say").addEventListener("submit", async (e) => {
  e.preventDefault();
  const text = $("say-text").value;
  if (!current || !text.trim()) return;
  try {
    await call("POST", "/tasks/" + current + "/messages", { text });
    $("say-text").value = "";
    follow(current);
  } catch (err) {
    logAppend(el("div", "error", err.message));
  }
});

// A server without tokens (--no-auth) says so in the page: nobody signs in.
const needsToken = document.querySelector('meta[name="roost-auth"]').content !== "none";
if (token || !needsToken) signIn(token); else show(false);
setInterval(refreshTasks, 5000);
