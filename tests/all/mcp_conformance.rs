//! The MCP conformance suite (npm `@modelcontextprotocol/conformance`,
//! run on the Node 22 it needs, from npm too) against `roost mcp serve`
//! over streamable HTTP and against Roost's MCP client (`roost mcp list`
//! and `roost mcp call` on a server the suite runs). What Roost does not
//! pass is listed, with why, in `tests/mcp/conformance-baseline.yml`; the
//! suite fails on any other failure and on a listed scenario that passes.

use std::process::{Command, Stdio};

use roost_tests::{mcp_bin, mcp_script};

fn conformance(args: &[&str]) -> std::process::Output {
    Command::new(mcp_bin("node"))
        .arg(mcp_bin("conformance"))
        .args(args)
        .arg("--expected-failures")
        .arg(mcp_script("conformance-baseline.yml"))
        .env("ROOST", env!("CARGO_BIN_EXE_roost"))
        .stdin(Stdio::null())
        .output()
        .expect("the conformance suite runs")
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

#[test]
fn roost_mcp_serve_passes_the_conformance_suite_but_its_baseline() {
    let ws = roost_tests::TestWorkspace::new();
    ws.write("a.txt", "hello\n");
    let port = free_port();
    let mut server = Command::new(env!("CARGO_BIN_EXE_roost"))
        .arg("--data-dir")
        .arg(ws.root().join("data"))
        .args(["mcp", "serve", "--read", "--workspace"])
        .arg(ws.path())
        .args(["--http", &format!("127.0.0.1:{port}")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("roost mcp serve starts");
    let mut up = false;
    for _ in 0..600 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            up = true;
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let out = up.then(|| {
        conformance(&[
            "server",
            "--url",
            &format!("http://127.0.0.1:{port}/mcp"),
            "--suite",
            "all",
        ])
    });
    let _ = server.kill();
    let _ = server.wait();
    let out = out.expect("roost mcp serve listens");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.contains("Baseline check passed"),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn roost_mcp_client_passes_the_conformance_suite_but_its_baseline() {
    let client = format!("sh {}", mcp_script("conformance-client.sh").display());
    for scenario in [
        "initialize",
        "tools_call",
        "sse-retry",
        "elicitation-sep1034-client-defaults",
    ] {
        let out = conformance(&["client", "--command", &client, "--scenario", scenario]);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{scenario}: {text}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
