//! Network egress of plugins: a real component (`tests/fixtures/plugins/
//! egress`) makes `wasi:http` requests to real HTTP servers on 127.0.0.1;
//! the host lets through only granted origins, refuses everything else
//! with an error code inside the plugin and a record in the call's report,
//! fills `{{secret:NAME}}` placeholders only on the wire, and bounds
//! request counts and response sizes. The engine path (install, grant,
//! task, trace) is driven with the scripted model. No timing assertions.

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use roost_core::asks::{Answer, Ask};
use roost_core::config::SecretStore;
use roost_core::engine::{EngineBuilder, TaskSpec};
use roost_core::events::TaskEvent;
use roost_core::install::Plugins;
use roost_core::llm::scripted::{Script, ScriptedTransport};
use roost_core::llm::{OpenAiCompatible, RetryPolicy};
use roost_core::store::Store;
use roost_core::task::{ApprovalPolicy, TaskConfig, TaskOutcome};
use roost_sandbox::capability::{Grant, Limits, NetworkGrant, Origin, SecretValue};
use roost_sandbox::plugins::{
    EngineConfig, LoadedPlugin, NetworkReport, PluginEngine, Resolve, Resolved,
};
use roost_tests::harness::{call, complete, turn};
use roost_tests::http::{Server, reply};
use roost_tests::{TestWorkspace, cache_dir, fixture_wasm};
use serde_json::{Value, json};

use crate::cli::{roost, text};

/// A resolver for made-up names only: anything else is "not found", so no
/// test ever asks real DNS. Records every name it was asked.
#[derive(Debug, Default)]
struct MapResolver {
    names: BTreeMap<String, Vec<IpAddr>>,
    asked: Mutex<Vec<String>>,
}

impl Resolve for MapResolver {
    fn resolve(&self, host: &str, port: u16) -> Resolved {
        if let Ok(mut asked) = self.asked.lock() {
            asked.push(host.to_owned());
        }
        let found: Option<Vec<SocketAddr>> = self
            .names
            .get(host)
            .map(|ips| ips.iter().map(|ip| SocketAddr::new(*ip, port)).collect());
        Box::pin(async move {
            found.ok_or_else(|| std::io::Error::new(std::io::ErrorKind::NotFound, "no such host"))
        })
    }
}

/// The resolver of [`egress_engine`].
fn resolver() -> Arc<MapResolver> {
    static R: OnceLock<Arc<MapResolver>> = OnceLock::new();
    R.get_or_init(|| {
        let mut names = BTreeMap::new();
        // A granted name that points at this machine (DNS rebinding).
        names.insert(
            "rebind.test.example".to_owned(),
            vec!["127.0.0.1".parse().expect("ip")],
        );
        // One public and one private address: refused as a whole.
        names.insert(
            "mixed.test.example".to_owned(),
            vec![
                "93.184.216.34".parse().expect("ip"),
                "10.0.0.7".parse().expect("ip"),
            ],
        );
        Arc::new(MapResolver {
            names,
            asked: Mutex::default(),
        })
    })
    .clone()
}

/// A plugin engine whose name lookups go to [`resolver`].
fn egress_engine() -> Arc<PluginEngine> {
    static E: OnceLock<Arc<PluginEngine>> = OnceLock::new();
    E.get_or_init(|| {
        let resolve: Arc<dyn Resolve> = resolver();
        Arc::new(
            PluginEngine::new(EngineConfig {
                pooling: false,
                resolver: resolve,
                ..EngineConfig::with_cache_dir(cache_dir())
            })
            .expect("engine"),
        )
    })
    .clone()
}

fn plugin() -> Arc<LoadedPlugin> {
    static P: OnceLock<Arc<LoadedPlugin>> = OnceLock::new();
    P.get_or_init(|| {
        egress_engine()
            .load_file("egress", &fixture_wasm("egress"))
            .expect("egress fixture loads")
    })
    .clone()
}

/// Call `fetch` with `args` under `network`; the plugin's output (its view
/// of every exchange, and its environment) and the call's report.
async fn fetch(network: NetworkGrant, args: Value) -> (Value, NetworkReport) {
    let ws = TestWorkspace::new();
    let grant = Grant::new(ws.path()).network(network);
    let report = egress_engine()
        .call_with_report(&plugin(), "fetch", &args.to_string(), &grant)
        .await;
    let out = report.result.expect("fetch reports errors in its output");
    (out.data.expect("fetch returns data"), report.network)
}

/// The one exchange of a fetch.
fn only(out: &Value) -> &Value {
    let results = out["results"].as_array().expect("results");
    assert_eq!(results.len(), 1, "{out}");
    &results[0]
}

#[tokio::test]
pub(crate) async fn a_granted_origin_gets_its_response() {
    let server = Server::ok("hello egress");
    let (out, report) = fetch(
        NetworkGrant::allow([server.origin()]),
        json!({"url": server.url("/data?token=abc123"), "headers": {"x-plain": "1"}}),
    )
    .await;
    let r = only(&out);
    assert_eq!(r["status"], 200, "{out}");
    assert_eq!(r["body"], "hello egress");
    assert!(r["error"].is_null(), "{out}");
    let seen = server.received();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].path, "/data?token=abc123");
    assert_eq!(seen[0].header("x-plain"), Some("1"));
    // The record: allowed, status and bytes, the query's text left out.
    assert_eq!(report.records.len(), 1);
    let rec = &report.records[0];
    assert!(rec.allowed && rec.refused.is_none(), "{rec:?}");
    assert_eq!(rec.method, "GET");
    assert_eq!(rec.url, format!("http://127.0.0.1:{}/data?…", server.port));
    assert_eq!((rec.status, rec.bytes), (Some(200), 12));
    assert!(out["env"].as_array().expect("env").is_empty(), "{out}");
}

/// Every way out that is not the granted origin is refused in the host,
/// before any connection: the plugin gets an error code, the report says
/// why, and no server hears of it.
#[tokio::test]
async fn everything_but_the_granted_origin_is_refused() {
    let granted = Server::ok("granted");
    let other = Server::ok("other");
    let grant = || {
        NetworkGrant::allow([
            granted.origin(),
            Origin::parse("api.test.example").expect("origin"),
        ])
    };
    let cases = [
        (
            format!("http://127.0.0.1:{}/", other.port),
            "HttpRequestDenied",
            "is not granted",
        ),
        (
            "https://unlisted.test.example/".to_owned(),
            "HttpRequestDenied",
            "is not granted",
        ),
        (
            // Plain http to a name, even one granted over https.
            "http://api.test.example/".to_owned(),
            "HttpRequestDenied",
            "plain http only ever goes to loopback",
        ),
        (
            format!("http://127.0.0.1:{}@evil.test.example/", granted.port),
            "HttpRequestDenied",
            "user name or password",
        ),
        (
            format!("http://localhost:{}/", granted.port),
            "HttpRequestDenied",
            "is not granted",
        ),
        (
            // A name that spells an address is just a name: not granted,
            // so refused before any lookup.
            format!("http://127.0.0.1.nip.io:{}/", granted.port),
            "HttpRequestDenied",
            "is not granted",
        ),
        (
            format!("ftp://127.0.0.1:{}/", granted.port),
            "HttpRequestDenied",
            "not http or https",
        ),
    ];
    for (url, code, why) in cases {
        let (out, report) = fetch(grant(), json!({"url": url})).await;
        let recorded = &report.records[0].url;
        assert!(
            !recorded.contains(&format!("127.0.0.1:{}@", granted.port)),
            "no user name in the record: {recorded}"
        );
        let r = only(&out);
        assert_eq!(r["error"], code, "{url}: {out}");
        assert!(r["status"].is_null(), "{url}: {out}");
        assert_eq!(report.records.len(), 1, "{url}");
        let rec = &report.records[0];
        assert!(!rec.allowed, "{url}: {rec:?}");
        let refused = rec.refused.as_deref().unwrap_or_default();
        assert!(refused.contains(why), "{url}: {refused}");
    }
    assert!(granted.received().is_empty());
    assert!(other.received().is_empty());
    let asked = resolver().asked.lock().expect("lock").clone();
    assert!(
        !asked
            .iter()
            .any(|n| n.contains("nip.io") || n.contains("unlisted")),
        "refused names were never looked up: {asked:?}"
    );
}

/// A redirect reaches the plugin as it is; following it is a new request,
/// checked like any other.
#[tokio::test]
async fn redirects_are_never_followed_by_the_host() {
    let elsewhere = Server::ok("you should not be here");
    let target = elsewhere.url("/landing");
    let redirecting = Server::start(move |_| reply(302, &[("Location", &target)], ""));
    let grant = || NetworkGrant::allow([redirecting.origin()]);
    let (out, report) = fetch(grant(), json!({"url": redirecting.url("/")})).await;
    let r = only(&out);
    assert_eq!(r["status"], 302, "{out}");
    assert_eq!(r["location"], elsewhere.url("/landing"));
    assert_eq!(report.records.len(), 1);

    let (out, report) = fetch(
        grant(),
        json!({"url": redirecting.url("/"), "follow": true}),
    )
    .await;
    let results = out["results"].as_array().expect("results");
    assert_eq!(results.len(), 2, "{out}");
    assert_eq!(results[0]["status"], 302);
    assert_eq!(results[1]["error"], "HttpRequestDenied", "{out}");
    assert_eq!(report.records.len(), 2);
    assert!(report.records[0].allowed);
    assert!(!report.records[1].allowed);
    assert!(elsewhere.received().is_empty());
}

/// A granted name is resolved by the host, and refused when any address it
/// resolves to is not public: a name pointed at 127.0.0.1 (DNS rebinding)
/// never reaches the server listening there.
#[tokio::test]
async fn a_granted_name_resolving_to_a_private_address_is_refused() {
    let server = Server::ok("internal");
    for name in ["rebind.test.example", "mixed.test.example"] {
        let origin = Origin::parse(&format!("{name}:{}", server.port)).expect("origin");
        let (out, report) = fetch(
            NetworkGrant::allow([origin]),
            json!({"url": format!("https://{name}:{}/", server.port)}),
        )
        .await;
        let r = only(&out);
        assert_eq!(r["error"], "DestinationIpProhibited", "{name}: {out}");
        let rec = &report.records[0];
        assert!(!rec.allowed, "{rec:?}");
        let refused = rec.refused.as_deref().unwrap_or_default();
        assert!(refused.contains("not a public address"), "{refused}");
    }
    assert!(server.received().is_empty());
    let asked = resolver().asked.lock().expect("lock").clone();
    assert!(
        asked.iter().any(|n| n == "rebind.test.example"),
        "{asked:?}"
    );
}

#[tokio::test]
async fn the_request_count_is_bounded_per_call() {
    let server = Server::ok("hi");
    let grant = NetworkGrant {
        max_requests: 2,
        ..NetworkGrant::allow([server.origin()])
    };
    let (out, report) = fetch(grant.clone(), json!({"url": server.url("/"), "repeat": 3})).await;
    let results = out["results"].as_array().expect("results");
    assert_eq!(results[0]["status"], 200);
    assert_eq!(results[1]["status"], 200);
    assert_eq!(results[2]["error"], "ConnectionLimitReached", "{out}");
    let refused = report.records[2].refused.as_deref().unwrap_or_default();
    assert!(refused.contains("more than 2 requests"), "{refused}");
    assert_eq!(server.received().len(), 2);
    // The bound is per call: the next call gets its own.
    let (out, _) = fetch(grant, json!({"url": server.url("/")})).await;
    assert_eq!(only(&out)["status"], 200);
}

#[tokio::test]
async fn the_response_size_is_bounded() {
    let big = "x".repeat(1000);
    let declared = Server::start(move |_| reply(200, &[], &big));
    let streamed = Server::start(|_| {
        let mut out =
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n".to_vec();
        for _ in 0..10 {
            out.extend_from_slice(format!("64\r\n{}\r\n", "y".repeat(100)).as_bytes());
        }
        out.extend_from_slice(b"0\r\n\r\n");
        out
    });
    let small = Server::ok("small");
    let grant = NetworkGrant {
        max_response_bytes: 300,
        ..NetworkGrant::allow([declared.origin(), streamed.origin(), small.origin()])
    };
    // Content-Length over the bound: refused before any byte.
    let (out, report) = fetch(grant.clone(), json!({"url": declared.url("/")})).await;
    assert_eq!(only(&out)["error"], "HttpResponseBodySize", "{out}");
    let err = report.records[0].error.as_deref().unwrap_or_default();
    assert!(err.contains("over the bound of 300 bytes"), "{err}");
    // No length given: the body stops at the bound.
    let (out, report) = fetch(grant.clone(), json!({"url": streamed.url("/")})).await;
    let r = only(&out);
    assert_eq!(r["status"], 200, "{out}");
    let body_error = r["error"].as_str().unwrap_or_default();
    assert!(
        body_error.starts_with("body: HTTP response body size exceeds limit"),
        "{out}"
    );
    assert!(r["body"].as_str().unwrap_or_default().len() <= 300, "{out}");
    let rec = &report.records[0];
    assert!(rec.bytes <= 300, "{rec:?}");
    assert!(
        rec.error
            .as_deref()
            .unwrap_or_default()
            .contains("over the bound"),
        "{rec:?}"
    );
    // The host and the next request are unaffected.
    let (out, _) = fetch(grant, json!({"url": small.url("/")})).await;
    assert_eq!(only(&out)["body"], "small");
}

/// Secrets are filled only for origins they are bound to, only when
/// granted and only when their value can go into a header.
#[tokio::test]
async fn secrets_go_only_where_they_are_bound() {
    let bound = Server::ok("bound");
    let unbound = Server::ok("unbound");
    let grant = NetworkGrant::allow([bound.origin(), unbound.origin()])
        .secret(
            "TOKEN",
            Some(SecretValue::new("tok-3f9a1c")),
            [bound.origin()],
        )
        .secret(
            "SPLIT",
            Some(SecretValue::new("a\r\nx-injected: 1")),
            [bound.origin()],
        );
    let auth = |name: &str| json!({"authorization": format!("Bearer {{{{secret:{name}}}}}")});
    let cases = [
        (unbound.url("/"), auth("TOKEN"), "may not be sent to"),
        (bound.url("/"), auth("OTHER"), "was not granted"),
        (bound.url("/"), auth("SPLIT"), "cannot go into a header"),
    ];
    for (url, headers, why) in cases {
        let (out, report) = fetch(grant.clone(), json!({"url": url, "headers": headers})).await;
        assert_eq!(only(&out)["error"], "HttpRequestDenied", "{out}");
        let refused = report.records[0].refused.as_deref().unwrap_or_default();
        assert!(refused.contains(why), "{refused}");
        assert!(!format!("{report:?}").contains("tok-3f9a1c"));
    }
    assert!(bound.received().is_empty());
    assert!(unbound.received().is_empty());
    // Where it is bound, it goes out; the plugin never holds it.
    let (out, report) = fetch(
        grant,
        json!({"url": bound.url("/"), "headers": auth("TOKEN")}),
    )
    .await;
    let r = only(&out);
    assert_eq!(r["status"], 200, "{out}");
    assert!(!out.to_string().contains("tok-3f9a1c"), "{out}");
    assert_eq!(
        bound.received()[0].header("authorization"),
        Some("Bearer tok-3f9a1c")
    );
    assert_eq!(
        report.records[0].secrets,
        vec!["authorization: Bearer {{secret:TOKEN}}".to_owned()]
    );
}

/// Tool listing and a grant without network reach nothing.
#[tokio::test]
async fn no_grant_means_no_network() {
    let server = Server::ok("hi");
    let (out, report) = fetch(NetworkGrant::default(), json!({"url": server.url("/")})).await;
    assert_eq!(only(&out)["error"], "HttpRequestDenied", "{out}");
    assert!(!report.records[0].allowed);
    assert!(server.received().is_empty());
}

// ---- the engine path: install, grant, task, trace ----

/// A plugin folder for the egress fixture asking for `network` and
/// `secrets`.
fn egress_plugin_dir(root: &Path, network: &[String], secrets: &[&str]) -> PathBuf {
    let dir = root.join("egress-plugin");
    std::fs::create_dir_all(&dir).expect("mkdir");
    std::fs::copy(fixture_wasm("egress"), dir.join("egress.wasm")).expect("copy");
    let quoted = |v: &[String]| {
        v.iter()
            .map(|s| format!("\"{s}\""))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let secrets: Vec<String> = secrets.iter().map(|s| (*s).to_owned()).collect();
    std::fs::write(
        dir.join("plugin.toml"),
        format!(
            "[plugin]\nname = \"egress\"\nversion = \"0.1.0\"\nworld = \"tool-plugin\"\nwit_version = \"0.2.0\"\ncomponent = \"egress.wasm\"\n\n[capabilities]\nread = \"none\"\nnetwork = [{}]\nsecrets = [{}]\n",
            quoted(network),
            quoted(&secrets)
        ),
    )
    .expect("manifest");
    dir
}

/// Install the egress fixture in `data` with what it asks for, then run a
/// task whose model makes `calls` (one per turn) and completes; the task
/// id, its engine and every event it published.
async fn run_installed(
    data: &Path,
    ws: &Path,
    network: &[String],
    secrets: &[&str],
    store_secrets: SecretStore,
    calls: Vec<Value>,
) -> (String, Arc<roost_core::engine::Engine>, Vec<Value>) {
    install_egress(data, network, secrets);
    let mut turns: Vec<Value> = calls
        .into_iter()
        .map(|args| turn("", vec![call("fetch", args)]))
        .collect();
    turns.push(complete("fetched"));
    run_installed_turns(data, ws, turns, store_secrets).await
}

/// Install the egress fixture in `data` with what it asks for.
fn install_egress(data: &Path, network: &[String], secrets: &[&str]) {
    let store = Store::open(&Store::default_path(data)).expect("store");
    let plugins = Plugins::new(data, &store, &roost_tests::engine(), Limits::default());
    let c = plugins
        .prepare(&egress_plugin_dir(data, network, secrets), None)
        .expect("prepares");
    plugins
        .install(&c, &Plugins::requested(&c))
        .expect("installs");
}

/// [`run_installed`] with the model's whole script: `turns`, the last one
/// completing (the egress fixture installed beforehand).
async fn run_installed_turns(
    data: &Path,
    ws: &Path,
    turns: Vec<Value>,
    store_secrets: SecretStore,
) -> (String, Arc<roost_core::engine::Engine>, Vec<Value>) {
    let script: Script = serde_json::from_value(json!({ "turns": turns })).expect("script");
    let transport = Arc::new(ScriptedTransport::per_conversation(script));
    let engine = EngineBuilder::new(data)
        .plugin_engine(roost_tests::engine())
        .provider(Arc::new(OpenAiCompatible::new(
            "scripted",
            "scripted",
            transport,
            RetryPolicy::default(),
        )))
        .config(TaskConfig {
            policy: ApprovalPolicy::yes(),
            ..TaskConfig::default()
        })
        .installed_plugins(true)
        .secrets(store_secrets)
        .build()
        .expect("engine");
    let id = engine
        .create_task(&TaskSpec {
            prompt: "fetch it".into(),
            workspace: ws.to_path_buf(),
            mode: "code".into(),
            ..TaskSpec::default()
        })
        .await
        .expect("created");
    let mut rx = engine.subscribe(&id).expect("subscribe");
    engine.start(&id).expect("started");
    // Every event, accepting the result when it is put to a person.
    let mut events = Vec::new();
    loop {
        let e = rx.recv().await.expect("event");
        if let TaskEvent::AskRequired { ask_id, ask, .. } = &e.event {
            assert!(matches!(ask, Ask::Completion { .. }), "{ask:?}");
            engine
                .answer(&id, ask_id, Answer::Yes)
                .await
                .expect("answered");
        }
        let end = matches!(
            e.event,
            TaskEvent::Completed { .. } | TaskEvent::Failed { .. } | TaskEvent::Aborted { .. }
        );
        events.push(serde_json::to_value(&*e).expect("event json"));
        if end {
            break;
        }
    }
    let outcome = engine.wait(&id).await.expect("outcome");
    assert_eq!(
        outcome,
        TaskOutcome::Completed {
            result: "fetched".into()
        },
        "{events:?}"
    );
    (id, engine, events)
}

/// The tool results of a task, in order (what the model was given).
fn tool_results(engine: &roost_core::engine::Engine, id: &str) -> Vec<String> {
    let history = engine.agent().store.load_api(id, true).expect("history");
    let text =
        serde_json::to_value(history.iter().map(|m| &m.message).collect::<Vec<_>>()).expect("json");
    let mut out = Vec::new();
    for m in text.as_array().into_iter().flatten() {
        for block in m["content"].as_array().into_iter().flatten() {
            if block["type"] == "tool_result" {
                out.push(block["content"].as_str().unwrap_or_default().to_owned());
            }
        }
    }
    out
}

/// The fetch output at the start of a tool result (a note may follow it).
fn fetch_output(result: &str) -> Value {
    let json = result.split("\n[network]").next().unwrap_or(result);
    serde_json::from_str(json).unwrap_or_else(|e| panic!("{e}: {result}"))
}

fn trace_entries(ws: &Path) -> Vec<Value> {
    std::fs::read_to_string(ws.join(".orchestration/agent_trace.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).expect("trace line"))
        .collect()
}

/// Every file of the store (the database, its WAL and shared memory).
fn store_bytes(data: &Path) -> Vec<u8> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(data).expect("data dir").flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if name.starts_with("roost.db") || name.ends_with(".db") || name.contains(".db-") {
            out.extend(std::fs::read(e.path()).unwrap_or_default());
        }
    }
    out
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w == needle.as_bytes())
}

/// The secret echo test, through the whole path: a manifest asks for an
/// origin and a secret, the install records the grant, the task's call gets
/// it, the plugin writes a placeholder, the server receives the value. The
/// plugin's own view holds only the placeholder and an empty environment,
/// and the value is nowhere in the trace, the store, the events or the
/// history.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_secret_reaches_the_server_and_nothing_else() {
    const VALUE: &str = "egress-secret-7c1e5d0b9a";
    let server = Server::ok("received");
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(ws.join(".orchestration")).expect("ws");
    let granted = format!("http://127.0.0.1:{}", server.port);
    let (id, engine, events) = run_installed(
        &data,
        &ws,
        std::slice::from_ref(&granted),
        &["EGRESS_TOKEN"],
        SecretStore::isolated().with("EGRESS_TOKEN", VALUE, Vec::new()),
        vec![json!({
            "url": server.url("/echo"),
            "headers": {"authorization": "Bearer {{secret:EGRESS_TOKEN}}"},
        })],
    )
    .await;
    // The server got the value.
    let seen = server.received();
    assert_eq!(seen.len(), 1);
    assert_eq!(
        seen[0].header("authorization"),
        Some(format!("Bearer {VALUE}").as_str())
    );
    // The plugin held only the placeholder and saw no environment.
    let results = tool_results(&engine, &id);
    let out = fetch_output(&results[0]);
    let r = &out["results"][0];
    assert_eq!(r["status"], 200, "{out}");
    assert_eq!(
        r["sent_headers"],
        json!([["authorization", "Bearer {{secret:EGRESS_TOKEN}}"]])
    );
    assert_eq!(out["env"], json!([]));
    // The trace records the request and the placeholder, never the value.
    let trace = trace_entries(&ws);
    let net: Vec<&Value> = trace.iter().filter(|e| e["kind"] == "network").collect();
    assert_eq!(net.len(), 1, "{trace:?}");
    let rec = &net[0]["network"][0];
    assert_eq!(rec["allowed"], true);
    assert_eq!(rec["status"], 200);
    assert_eq!(
        rec["secrets"],
        json!(["authorization: Bearer {{secret:EGRESS_TOKEN}}"])
    );
    let trace_text =
        std::fs::read_to_string(ws.join(".orchestration/agent_trace.jsonl")).expect("trace");
    assert!(!trace_text.contains(VALUE));
    // Nowhere in the store, the events or the history.
    let store = &engine.agent().store;
    let ui = store.load_ui(&id).expect("ui");
    assert!(ui.iter().any(|m| m.subtype == "network"), "{ui:?}");
    assert!(!format!("{ui:?}").contains(VALUE));
    assert!(!results.concat().contains(VALUE));
    let (logged, _) = engine.events_after(&id, 0).await.expect("events");
    assert!(
        !serde_json::to_string(&logged)
            .expect("json")
            .contains(VALUE)
    );
    assert!(
        !serde_json::to_string(&events)
            .expect("json")
            .contains(VALUE)
    );
    drop(engine);
    assert!(
        !contains(&store_bytes(&data), VALUE),
        "the store holds the secret"
    );
    assert!(contains(&store_bytes(&data), "{{secret:EGRESS_TOKEN}}"));
}

/// An installed plugin's granted origin works in a task; a request beyond
/// its grant is refused, traced, shown as a UI row and a warning, and the
/// model is told why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_installed_plugin_gets_exactly_its_granted_origins() {
    let server = Server::ok("hello");
    let other = Server::ok("other");
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(ws.join(".orchestration")).expect("ws");
    let (id, engine, events) = run_installed(
        &data,
        &ws,
        &[format!("http://127.0.0.1:{}", server.port)],
        &[],
        SecretStore::isolated(),
        vec![
            json!({"url": server.url("/ok")}),
            json!({"url": other.url("/no")}),
        ],
    )
    .await;
    let results = tool_results(&engine, &id);
    let first = fetch_output(&results[0]);
    assert_eq!(first["results"][0]["status"], 200, "{first}");
    assert_eq!(first["results"][0]["body"], "hello");
    let second = fetch_output(&results[1]);
    assert_eq!(second["results"][0]["error"], "HttpRequestDenied");
    assert!(
        results[1].contains("[network] the host refused: GET"),
        "{}",
        results[1]
    );
    assert!(other.received().is_empty());
    let trace = trace_entries(&ws);
    let net: Vec<&Value> = trace.iter().filter(|e| e["kind"] == "network").collect();
    assert_eq!(net.len(), 2, "{trace:?}");
    assert_eq!(net[0]["network"][0]["allowed"], true);
    assert_eq!(net[0]["network"][0]["bytes"], 5);
    assert_eq!(net[1]["network"][0]["allowed"], false);
    assert!(
        net[1]["network"][0]["refused"]
            .as_str()
            .unwrap_or_default()
            .contains("is not granted"),
        "{trace:?}"
    );
    let ui = engine.agent().store.load_ui(&id).expect("ui");
    let rows: Vec<&str> = ui
        .iter()
        .filter(|m| m.subtype == "network")
        .map(|m| m.text.as_str())
        .collect();
    assert_eq!(rows.len(), 2, "{ui:?}");
    assert!(rows[1].contains("refused"), "{rows:?}");
    assert!(
        events.iter().any(|e| e["event"] == "warning"
            && e["message"]
                .as_str()
                .unwrap_or_default()
                .contains("refused")),
        "{events:?}"
    );
}

/// `roost tool call --plugin … --allow-net … --secret …`: the development
/// path, with the value from `ROOST_SECRET_<NAME>`.
#[test]
fn tool_call_allow_net_and_secret_flags() {
    let server = Server::ok("cli");
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).expect("ws");
    let wasm = fixture_wasm("egress");
    let args = json!({
        "url": server.url("/cli"),
        "headers": {"authorization": "token {{secret:CLI_TOKEN}}"},
    })
    .to_string();
    let o = roost(&data)
        .env("ROOST_SECRET_CLI_TOKEN", "cli-secret-0d4b")
        .args([
            "tool", "call", "fetch", "--json", "--args", &args, "--plugin",
        ])
        .arg(&wasm)
        .arg("--allow-net")
        .arg(format!("http://127.0.0.1:{}", server.port))
        .args(["--secret", "CLI_TOKEN", "--workspace"])
        .arg(&ws)
        .output()
        .expect("run");
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(!t.contains("cli-secret-0d4b"), "{t}");
    let v: Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(v["ok"]["data"]["results"][0]["status"], 200, "{v}");
    assert_eq!(v["network"][0]["allowed"], true, "{v}");
    assert_eq!(
        server.received()[0].header("authorization"),
        Some("token cli-secret-0d4b")
    );
    // Without --allow-net the same call is refused inside the plugin.
    let o = roost(&data)
        .args([
            "tool", "call", "fetch", "--json", "--args", &args, "--plugin",
        ])
        .arg(&wasm)
        .arg("--workspace")
        .arg(&ws)
        .output()
        .expect("run");
    let v: Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(
        v["ok"]["data"]["results"][0]["error"], "HttpRequestDenied",
        "{v}"
    );
    // Flags that cannot be honoured are errors.
    for bad in [
        vec!["--secret", "CLI_TOKEN"],
        vec!["--allow-net", "http://example.com"],
        vec!["--allow-net", "127.0.0.1:1", "--secret", "lower"],
    ] {
        let o = roost(&data)
            .args(["tool", "call", "fetch", "--args", &args, "--plugin"])
            .arg(&wasm)
            .args(&bad)
            .arg("--workspace")
            .arg(&ws)
            .output()
            .expect("run");
        assert!(!o.status.success(), "{bad:?} accepted: {}", text(&o));
    }
    // A first-party tool gets no network.
    let o = roost(&data)
        .args([
            "tool",
            "call",
            "read_file",
            "--args",
            "{\"path\":\"x\"}",
            "--allow-net",
            "api.example.com",
            "--workspace",
        ])
        .arg(&ws)
        .output()
        .expect("run");
    assert!(!o.status.success());
    assert!(text(&o).contains("first-party"), "{}", text(&o));
}

/// A server on 127.0.0.1 that answers no request until `n` are open, then
/// answers each with its own path: calls made one after another never get
/// past the first (it waits out its deadline and fails).
fn barrier_server(n: usize) -> u16 {
    use std::io::{BufRead, BufReader, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    std::thread::spawn(move || {
        let mut open = Vec::new();
        for conn in listener.incoming() {
            let Ok(conn) = conn else { continue };
            let Ok(read_half) = conn.try_clone() else {
                continue;
            };
            let mut reader = BufReader::new(read_half);
            let mut line = String::new();
            if reader.read_line(&mut line).is_err() {
                continue;
            }
            let path = line.split_whitespace().nth(1).unwrap_or("").to_owned();
            loop {
                let mut h = String::new();
                if reader.read_line(&mut h).is_err() || h.trim().is_empty() {
                    break;
                }
            }
            open.push((conn, path));
            if open.len() == n {
                for (mut conn, path) in open.drain(..) {
                    let reply = roost_tests::http::reply(200, &[], &path);
                    let _ = conn.write_all(&reply);
                    let _ = conn.flush();
                }
            }
        }
    });
    port
}

/// The reads of one reply run at the same time, and their results come
/// back in call order: two fetches of one reply reach a server that
/// answers neither until both have arrived.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reads_of_one_reply_run_together_and_answer_in_call_order() {
    let port = barrier_server(2);
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).expect("ws");
    let origin = format!("http://127.0.0.1:{port}");
    install_egress(&data, std::slice::from_ref(&origin), &[]);
    let (id, engine, events) = run_installed_turns(
        &data,
        &ws,
        vec![
            turn(
                "",
                vec![
                    call("fetch", json!({"url": format!("{origin}/first")})),
                    call("fetch", json!({"url": format!("{origin}/second")})),
                ],
            ),
            complete("fetched"),
        ],
        SecretStore::isolated(),
    )
    .await;
    // The two fetches' results, then the completion's.
    let results = tool_results(&engine, &id);
    assert_eq!(results.len(), 3, "{results:?}");
    for (result, path) in results.iter().zip(["/first", "/second"]) {
        let out = fetch_output(result);
        assert_eq!(out["results"][0]["status"], 200, "{out}");
        assert_eq!(out["results"][0]["body"], path, "{out}");
    }
    // The results were announced in call order too.
    let ids = |kind: &str| -> Vec<&str> {
        events
            .iter()
            .filter(|e| e["event"] == kind && e["tool"] == "fetch")
            .filter_map(|e| e["id"].as_str())
            .collect()
    };
    let (announced, requested) = (ids("tool_call_result"), ids("tool_call_requested"));
    assert_eq!(announced.len(), 2, "{events:?}");
    assert_eq!(announced, requested, "{events:?}");
}
