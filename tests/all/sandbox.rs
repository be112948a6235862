//! The sandbox suite: a hostile plugin tries every escape route we know of,
//! every route of `tests/escape-routes.txt`. Each attack must be denied, nothing outside the grant
//! may change on disk (the workspace and a canary directory beside it are
//! hashed before and after), and the host must keep working. Positive
//! controls (`control_*`) prove the grant itself works, so a suite that
//! denies everything would fail.

use std::collections::BTreeMap;
use std::io::Read;
use std::net::{TcpListener, UdpSocket};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use roost_sandbox::capability::Grant;
use roost_sandbox::plugins::LoadedPlugin;
use roost_tests::{Expect, engine, escape_routes, fixture_wasm, hostile_workspace, tree_hash};
use serde_json::json;

fn hostile() -> Arc<LoadedPlugin> {
    engine()
        .load_file("hostile", &fixture_wasm("hostile"))
        .expect("hostile fixture loads")
}

/// Everything under the test root except the write root `workspace/out`.
fn outside_grant(root: &Path) -> BTreeMap<String, String> {
    tree_hash(root)
        .into_iter()
        .filter(|(k, _)| !k.starts_with("workspace/out/") && k != "workspace/out")
        .collect()
}

async fn run_case(case: &str, expect: Expect) {
    let ws = hostile_workspace();
    let tcp = TcpListener::bind("127.0.0.1:0").expect("tcp listener");
    tcp.set_nonblocking(true).expect("nonblocking");
    let udp = UdpSocket::bind("127.0.0.1:0").expect("udp socket");
    udp.set_read_timeout(Some(Duration::from_millis(50)))
        .expect("timeout");
    let port = if case.starts_with("udp") {
        udp.local_addr().expect("addr").port()
    } else {
        tcp.local_addr().expect("addr").port()
    };
    let target = ws.canary().join("secret.txt");
    let before = outside_grant(ws.root());

    let plugin = hostile();
    let grant = Grant::new(ws.path()).read().write("out");
    let args = json!({"case": case, "port": port, "target": target.display().to_string()});
    let result = engine()
        .call(&plugin, "attempt", &args.to_string(), &grant)
        .await;

    let (escaped, detail) = match &result {
        Ok(out) => {
            let data = out.data.as_ref().expect("hostile returns data");
            (
                data["escaped"].as_bool().expect("escaped flag"),
                data["detail"].to_string(),
            )
        }
        Err(e) => (false, e.to_string()),
    };
    match expect {
        Expect::Denied => assert!(!escaped, "{case}: the attack SUCCEEDED: {detail}"),
        Expect::Allowed => assert!(escaped, "{case}: positive control failed: {detail}"),
        Expect::Host | Expect::Door => panic!("{case} is driven by a test of its own"),
    }
    assert_eq!(
        before,
        outside_grant(ws.root()),
        "{case}: something outside the grant changed on disk"
    );
    assert!(
        !Path::new("/tmp/roost-hostile-pwned").exists(),
        "{case}: wrote /tmp"
    );
    assert!(
        tcp.accept().is_err(),
        "{case}: a TCP connection reached the host"
    );
    let mut buf = [0u8; 8];
    assert!(
        udp.recv(&mut buf).is_err(),
        "{case}: a UDP datagram reached the host"
    );

    // The host survives and the plugin keeps working.
    let again = engine()
        .call(
            &plugin,
            "attempt",
            &json!({"case": "control_read"}).to_string(),
            &grant,
        )
        .await
        .expect("follow-up call works");
    assert_eq!(
        again.data.as_ref().expect("data")["escaped"],
        true,
        "follow-up read failed"
    );
    let mut secret = String::new();
    std::fs::File::open(ws.canary().join("secret.txt"))
        .and_then(|mut f| f.read_to_string(&mut secret))
        .expect("canary");
    assert_eq!(secret, "canary secret\n");
}

/// One named test per route of `tests/escape-routes.txt`, generated from
/// the list at build time: `allowed` and `denied` routes run here, each in
/// its own workspace; a `host` route must have a test of its own name in
/// `host_escapes.rs`, and a `door` route one in the module it names, or
/// the build fails.
mod route {
    use super::{Expect, run_case};

    macro_rules! route_test {
        ($case:ident, allowed) => {
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                run_case(stringify!($case), Expect::Allowed).await;
            }
        };
        ($case:ident, denied) => {
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                run_case(stringify!($case), Expect::Denied).await;
            }
        };
        ($case:ident, host) => {
            #[allow(unused_imports)]
            use crate::host_escapes::$case as _;
        };
        ($case:ident, door, $module:ident) => {
            #[allow(unused_imports)]
            use crate::$module::$case as _;
        };
    }

    roost_tests::foreach_route!(route_test);
}

/// The route list the tests are generated from is the one the suites read
/// at run time, and it was not cut.
#[test]
fn the_route_list_is_whole() {
    let routes = escape_routes();
    assert!(
        routes
            .iter()
            .filter(|r| matches!(r.expect, Expect::Allowed | Expect::Denied))
            .count()
            > 50,
        "the route list was cut"
    );
    let mut cases: Vec<&str> = routes.iter().map(|r| r.case.as_str()).collect();
    cases.sort_unstable();
    let before = cases.len();
    cases.dedup();
    assert_eq!(before, cases.len(), "a route is listed twice");
}

/// The fixture tries only listed routes, so the list is the whole story.
#[tokio::test]
pub(crate) async fn an_unlisted_route_is_refused_by_the_fixture() {
    let ws = hostile_workspace();
    let err = engine()
        .call(
            &hostile(),
            "attempt",
            &json!({"case": "not_a_route"}).to_string(),
            &Grant::new(ws.path()).read(),
        )
        .await
        .expect_err("refused");
    assert!(err.message.contains("not a route listed"), "{err}");
}

/// A grant without read access mounts nothing: even the workspace is gone.
#[tokio::test]
async fn no_read_grant_means_no_workspace() {
    let ws = hostile_workspace();
    let r = engine()
        .call(
            &hostile(),
            "attempt",
            &json!({"case": "control_read"}).to_string(),
            &Grant::new(ws.path()),
        )
        .await
        .expect("call runs");
    assert_eq!(r.data.as_ref().expect("data")["escaped"], false);
}

/// A write root reached through a symlink (here one that leads out of the
/// workspace) is refused before the plugin runs.
#[tokio::test]
async fn write_root_through_symlink_is_refused() {
    let ws = hostile_workspace();
    let grant = Grant::new(ws.path()).read().write("ts_link");
    let err = engine()
        .call(
            &hostile(),
            "attempt",
            &json!({"case": "control_read"}).to_string(),
            &grant,
        )
        .await
        .expect_err("grant refused");
    assert!(
        err.message.contains("symbolic link") && err.message.contains("ts_link"),
        "{err}"
    );
    let grant = Grant::new(ws.path()).read().write("../canary");
    assert!(
        engine()
            .call(
                &hostile(),
                "attempt",
                &json!({"case": "control_read"}).to_string(),
                &grant
            )
            .await
            .is_err()
    );
}

/// Environment variables are refused: Roost never passes any to a plugin
/// (network is granted per origin, through wasi:http: `egress.rs`).
#[tokio::test]
async fn unsupported_capabilities_are_refused() {
    let ws = hostile_workspace();
    let mut grant = Grant::new(ws.path()).read();
    grant.env.push(("HOME".into(), "/root".into()));
    assert!(
        engine()
            .call(
                &hostile(),
                "attempt",
                &json!({"case": "control_read"}).to_string(),
                &grant
            )
            .await
            .is_err()
    );
}
