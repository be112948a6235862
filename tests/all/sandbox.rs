//! The sandbox suite: a hostile plugin tries every escape route we know of,
//! one test per row. Each attack must be denied, nothing outside the grant
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
use roost_tests::{engine, fixture_wasm, hostile_workspace, tree_hash};
use serde_json::json;

#[derive(Debug, Clone, Copy, PartialEq)]
enum Expect {
    Denied,
    Allowed,
}

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

macro_rules! sandbox_cases {
    ($($case:ident => $expect:ident),* $(,)?) => {
        $(
            #[tokio::test]
            async fn $case() {
                run_case(stringify!($case), Expect::$expect).await;
            }
        )*
    };
}

sandbox_cases! {
    control_read => Allowed,
    control_write => Allowed,
    control_list => Allowed,
    dotdot_read => Denied,
    dotdot_write => Denied,
    dotdot_from_write_root => Denied,
    dotdot_into_ro_area => Denied,
    relative_dotdot => Denied,
    abs_etc_passwd => Denied,
    abs_write_tmp => Denied,
    abs_host_path => Denied,
    abs_host_path_write => Denied,
    list_root => Denied,
    list_parent => Denied,
    symlink_abs_read => Denied,
    symlink_rel_read => Denied,
    symlink_chain_read => Denied,
    symlink_write_through => Denied,
    symlink_dir_write => Denied,
    symlink_create_abs => Denied,
    symlink_create_rel => Denied,
    symlink_create_to_ro => Denied,
    trailing_slash_symlink_list => Denied,
    trailing_slash_symlink_read => Denied,
    trailing_slash_symlink_mkdir => Denied,
    trailing_slash_symlink_write => Denied,
    trailing_slash_file => Denied,
    hardlink_from_outside => Denied,
    hardlink_ro_into_write_root => Denied,
    hardlink_via_symlink => Denied,
    rename_into_ro_area => Denied,
    rename_out_of_workspace => Denied,
    rename_ro_file_into_root => Denied,
    truncate_ro_file => Denied,
    append_ro_file => Denied,
    write_ro_workspace => Denied,
    create_outside_write_roots => Denied,
    write_root_prefix_confusion => Denied,
    mkdir_ro_area => Denied,
    remove_ro_file => Denied,
    remove_ro_dir => Denied,
    set_times_ro_file => Denied,
    set_len_ro_file => Denied,
    env_vars => Denied,
    args => Denied,
    tcp_connect => Denied,
    tcp_listen => Denied,
    udp_send => Denied,
    dns_lookup => Denied,
    proc_self_environ => Denied,
    proc_self_status => Denied,
    stdin_read => Denied,
    // Host-side routes: authority files, planted links, swapped and nested
    // directories (the sandbox denies them outside the write root; the
    // host suite `host_escapes.rs` covers grants that reach them).
    write_git_config => Denied,
    add_git_hook => Denied,
    rewrite_intents => Denied,
    replace_trace => Denied,
    plant_agent_link => Denied,
    plant_trace_link => Denied,
    plant_agents_md_link => Denied,
    swap_dir_for_link => Denied,
    write_nested => Denied,
    // Inside the write root, so allowed here; the write guard removes it
    // under a finer scope (scope.rs).
    deep_chain => Allowed,
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

/// Network and environment capabilities are refused until Roost grants them.
#[tokio::test]
async fn unsupported_capabilities_are_refused() {
    let ws = hostile_workspace();
    let mut grant = Grant::new(ws.path()).read();
    grant.network.push("example.com".into());
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
