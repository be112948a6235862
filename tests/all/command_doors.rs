//! The command sandbox as an attacker meets it, end to end through the
//! `roost` binary, run as root (as CI runs it, and as containers and VMs
//! often do) and as an unprivileged user: a command holds no capability
//! and is not root; it cannot remount, unmount or write outside its
//! scope; it cannot see Roost's data dir, its config file or its task
//! store wherever they are; it cannot reach a host service through a Unix
//! socket file; it is bounded in processes, memory and file size. The
//! workspace, a canary beside it, another tenant's root, the config and
//! the store are hashed before and after.

use std::collections::BTreeMap;
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixListener;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use roost_tests::identity::{Identity, NOBODY, chown_tree, identities};
use roost_tests::tree_hash;
use serde_json::{Value, json};

use crate::scene::Scene;
use crate::served::Served;

/// A Unix socket server outside every write root that counts who
/// connects: a stand-in for a Docker daemon, a D-Bus bus, an ssh-agent.
fn socket_server(path: &Path) -> Arc<AtomicUsize> {
    let listener = UnixListener::bind(path).expect("bind socket");
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o777)).expect("chmod");
    let count = Arc::new(AtomicUsize::new(0));
    let seen = count.clone();
    std::thread::spawn(move || {
        for mut c in listener.incoming().flatten() {
            seen.fetch_add(1, Ordering::SeqCst);
            let mut buf = [0u8; 16];
            let _ = c.read(&mut buf);
        }
    });
    count
}

/// Connect once from outside the sandbox: the socket does answer, so a
/// refusal inside is the sandbox's doing.
fn control_connect(path: &Path, count: &AtomicUsize) {
    let before = count.load(Ordering::SeqCst);
    drop(std::os::unix::net::UnixStream::connect(path).expect("control connect"));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while count.load(Ordering::SeqCst) == before {
        assert!(
            std::time::Instant::now() < deadline,
            "the control connection was never accepted"
        );
        std::thread::yield_now();
    }
}

/// What the commands of a `--json` run printed, from its event lines.
fn command_output(stdout: &str) -> String {
    stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["event"] == "command_output")
        .filter_map(|v| v["chunk"].as_str().map(str::to_owned))
        .collect()
}

fn command_call(line: &str) -> Value {
    json!({"text": "", "tool_calls": [{"name": "execute_command", "args": {"command": line}}]})
}

#[test]
pub(crate) fn a_command_holds_no_privilege_sees_none_of_roosts_files_and_reaches_no_socket() {
    for who in identities() {
        attack_as(who);
    }
}

fn attack_as(who: Identity) {
    let scene = Scene::new();
    let [
        ws,
        canary,
        other,
        data,
        etc,
        store_dir,
        sockets,
        runtime,
        _home,
    ] = scene.dirs([
        "ws",
        "canary",
        "tenants/ada",
        "data",
        "etc",
        "store",
        "sockets",
        "xdg-runtime",
        "home",
    ]);
    std::fs::create_dir_all(ws.join("out")).expect("mkdir out");
    std::fs::write(ws.join("src.txt"), "the workspace\n").expect("ws file");
    std::fs::write(canary.join("canary.txt"), "outside the workspace\n").expect("canary");
    std::fs::write(other.join("secret.txt"), "ada's secret\n").expect("other tenant");
    std::fs::write(
        ws.join("probe_sockets.py"),
        "import socket, sys\n\
         for p in sys.argv[1:]:\n\
         \x20   try:\n\
         \x20       s = socket.socket(socket.AF_UNIX)\n\
         \x20       s.connect(p)\n\
         \x20       print('CONNECTED', p)\n\
         \x20   except OSError as e:\n\
         \x20       print('REFUSED', p, e)\n",
    )
    .expect("probe");
    std::fs::write(
        ws.join("probe_fork.py"),
        "import os, time\n\
         n = 0\n\
         try:\n\
         \x20   while n < 3000:\n\
         \x20       pid = os.fork()\n\
         \x20       if pid == 0:\n\
         \x20           time.sleep(120)\n\
         \x20           os._exit(0)\n\
         \x20       n += 1\n\
         except OSError as e:\n\
         \x20   print('STOPPED', e)\n\
         print('FORKED', n, flush=True)\n\
         os._exit(0)\n",
    )
    .expect("probe");
    // The config elsewhere than ~/.config/roost, with a secret in it; the
    // store elsewhere than the data dir.
    let config = etc.join("roost.toml");
    std::fs::write(
        &config,
        "[secrets.CANARY_TOKEN]\nvalue = \"sk-canary-secret-in-config\"\nhosts = [\"example.com\"]\n\n\
         [commands]\nallowed_commands = [\"*\"]\nprofile = \"tight\"\n\n\
         [command_profiles.tight.limits]\nprocesses = 64\nmemory_mb = 256\nfile_size_mb = 1\n",
    )
    .expect("config");
    let store = store_dir.join("tasks.db");
    // Sockets: one in a plain directory, one in the runtime directory.
    let plain_socket = sockets.join("agent.sock");
    let runtime_socket = runtime.join("bus");
    let plain = socket_server(&plain_socket);
    let rt = socket_server(&runtime_socket);
    control_connect(&plain_socket, &plain);
    control_connect(&runtime_socket, &rt);
    let (plain_before, rt_before) = (plain.load(Ordering::SeqCst), rt.load(Ordering::SeqCst));

    let lines = [
        "grep -E '^(CapEff|CapPrm|CapBnd|NoNewPrivs)' /proc/self/status; echo UID=$(id -u)"
            .to_owned(),
        format!(
            "mount -o remount,rw / 2>&1; mount -o remount,rw {ws} 2>&1; umount {data} 2>&1; umount -l {data} 2>&1; \
             echo pwned | tee {canary}/pwned.txt /etc/roost-pwned {other}/pwned.txt 2>&1; \
             echo DONE-MOUNTS",
            ws = ws.display(),
            data = data.display(),
            canary = canary.display(),
            other = other.display()
        ),
        format!(
            "cat {config} 2>&1; head -c 64 {store} 2>&1; ls -A {data} 2>&1; echo DONE-FILES",
            config = config.display(),
            store = store.display(),
            data = data.display()
        ),
        format!(
            "python3 probe_sockets.py {} {}",
            plain_socket.display(),
            runtime_socket.display()
        ),
        "python3 probe_fork.py".to_owned(),
        "python3 -c 'b = bytearray(600 << 20); print(\"ALLOCATED\", len(b))' 2>&1 | tail -n 1"
            .to_owned(),
        "head -c 5000000 /dev/zero > out/big.bin; echo WROTE $(stat -c %s out/big.bin)".to_owned(),
    ];
    let mut turns: Vec<Value> = lines.iter().map(|l| command_call(l)).collect();
    turns.push(json!({"text": "", "tool_calls": [{"name": "attempt_completion", "args": {"result": "done"}}]}));
    let script = scene.p("script.json");
    std::fs::write(&script, json!({ "turns": turns }).to_string()).expect("script");

    if who == Identity::Nobody {
        chown_tree(scene.base.path(), NOBODY);
        // The sockets stay the test's; anyone may connect outside.
        for s in [&plain_socket, &runtime_socket] {
            std::os::unix::fs::lchown(s, Some(0), Some(0)).expect("chown socket");
        }
    }
    let hashed = |p: &Path| -> BTreeMap<String, String> {
        let mut h = tree_hash(p);
        h.retain(|k, _| !k.starts_with("out"));
        h
    };
    let before = [
        hashed(&ws),
        tree_hash(&canary),
        tree_hash(&other),
        tree_hash(&etc),
    ];

    let mut c = scene.roost(who, &config);
    c.env("XDG_RUNTIME_DIR", &runtime)
        .env("ROOST_STORE_URL", &store)
        .args([
            "run",
            "attack",
            "--yes",
            "--allow-commands",
            "--json",
            "--workspace",
        ])
        .arg(&ws)
        .arg("--script")
        .arg(&script);
    let out = c.output().expect("roost runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let text = command_output(&stdout);
    let ctx = format!("as {who:?}\n--- command output\n{text}\n--- stderr\n{stderr}");
    assert!(out.status.success(), "{ctx}\n--- stdout\n{stdout}");

    // 1. No capability, none to gain, never uid 0, no_new_privs.
    for cap in ["CapEff", "CapPrm", "CapBnd"] {
        assert!(
            text.contains(&format!("{cap}:\t0000000000000000")),
            "{cap}: {ctx}"
        );
    }
    assert!(text.contains("NoNewPrivs:\t1"), "{ctx}");
    assert!(text.contains("UID=") && !text.contains("UID=0\n"), "{ctx}");
    // 2. Nothing remounted or unmounted; nothing written outside.
    assert!(text.contains("DONE-MOUNTS"), "{ctx}");
    assert!(!canary.join("pwned.txt").exists(), "{ctx}");
    assert!(!other.join("pwned.txt").exists(), "{ctx}");
    assert!(!Path::new("/etc/roost-pwned").exists(), "{ctx}");
    // 3. The config (with its secret) and the store are not there to read.
    assert!(text.contains("DONE-FILES"), "{ctx}");
    assert!(!text.contains("sk-canary-secret-in-config"), "{ctx}");
    assert!(!text.contains("SQLite format"), "{ctx}");
    assert!(!text.contains("roost.db"), "the data dir is listed: {ctx}");
    // 4. No socket file reached (the servers saw only the controls).
    assert!(!text.contains("CONNECTED"), "{ctx}");
    assert_eq!(text.matches("REFUSED").count(), 2, "{ctx}");
    assert_eq!(plain.load(Ordering::SeqCst), plain_before, "{ctx}");
    assert_eq!(rt.load(Ordering::SeqCst), rt_before, "{ctx}");
    // 5. Processes, memory and file size bounded by the profile.
    let forked: usize = text
        .lines()
        .find_map(|l| l.strip_prefix("FORKED "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no FORKED line: {ctx}"));
    assert!(forked < 64, "{forked} processes under a limit of 64: {ctx}");
    assert!(!text.contains("ALLOCATED"), "{ctx}");
    let big = std::fs::metadata(ws.join("out/big.bin"))
        .map(|m| m.len())
        .unwrap_or(0);
    assert!(
        big <= 1 << 20,
        "a {big}-byte file under a 1 MiB limit: {ctx}"
    );

    let after = [
        hashed(&ws),
        tree_hash(&canary),
        tree_hash(&other),
        tree_hash(&etc),
    ];
    assert_eq!(before, after, "{ctx}");
}

/// `roost serve --allow-commands` with two tenants: Bob's command sees
/// its own workspace and the system, not Ada's root, the server's data
/// dir, its config or its store — as root and as an unprivileged user.
#[test]
pub(crate) fn a_tenants_command_on_a_server_sees_no_other_tenant_and_none_of_the_servers_state() {
    for who in identities() {
        // The default profile (the whole file system, narrowed on a
        // server), and one whose `read` names the folder of every
        // tenant's root (each root but the task's own hidden).
        tenant_attack_as(who, false);
        tenant_attack_as(who, true);
    }
}

fn tenant_attack_as(who: Identity, shared_parent: bool) {
    let scene = Scene::new();
    let [ada_proj, bob_ws, data, etc, _home] =
        scene.dirs(["tenants/ada/proj", "tenants/bob/ws", "data", "etc", "home"]);
    let (ada, bob) = (scene.p("tenants/ada"), scene.p("tenants/bob"));
    std::fs::write(ada_proj.join("secret.txt"), "ada-secret-text\n").expect("ada");
    std::fs::write(bob_ws.join("mine.txt"), "bob-own-text\n").expect("bob");
    let config = etc.join("server.toml");
    let profile = if shared_parent {
        format!(
            "profile = \"shared\"\n\n[command_profiles.shared]\nread = [\"{}\"]\n",
            scene.p("tenants").display()
        )
    } else {
        String::new()
    };
    std::fs::write(
        &config,
        format!(
            "[secrets.SERVER_TOKEN]\nvalue = \"server-secret-in-config\"\nhosts = [\"example.com\"]\n\n\
             [commands]\nallowed_commands = [\"*\"]\n{profile}"
        ),
    )
    .expect("config");
    let line = format!(
        "cat mine.txt; cat {ada}/proj/secret.txt 2>&1; ls {tenants} 2>&1; ls -A {data} 2>&1; \
         cat {config} 2>&1; printf 'DONE-%s-TENANT\\n' 2",
        ada = ada.display(),
        tenants = scene.p("tenants").display(),
        data = data.display(),
        config = config.display(),
    );
    let script = scene.p("script.json");
    std::fs::write(
        &script,
        json!({"turns": [
            command_call(&line),
            {"text": "", "tool_calls": [{"name": "attempt_completion", "args": {"result": "done"}}]}
        ]})
        .to_string(),
    )
    .expect("script");
    if who == Identity::Nobody {
        chown_tree(scene.base.path(), NOBODY);
    }
    let before = [tree_hash(&ada), tree_hash(&etc)];
    let run = |args: &[&str]| {
        let mut c = who.command(&scene.bin);
        c.env_clear()
            .env("PATH", "/usr/local/bin:/usr/bin:/bin")
            .env("HOME", scene.p("home"))
            .env("ROOST_CONFIG", &config)
            .arg("--data-dir")
            .arg(&data)
            .args(args);
        c
    };
    let token = |tenant: &str, root: &Path| {
        let o = run(&[
            "token",
            "create",
            "--tenant",
            tenant,
            "--root",
            &root.display().to_string(),
        ])
        .output()
        .expect("token create");
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stdout).trim().to_owned()
    };
    let _ada_token = token("ada", &ada);
    let bob_token = token("bob", &bob);
    let server = Served::start(
        run(&[
            "serve",
            "--allow-commands",
            "--script",
            &script.display().to_string(),
        ]),
        &scene.p("serve.log"),
    );
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let text = rt.block_on(async {
        let client = reqwest::Client::new();
        server.ready(&client).await;
        let r = client
            .post(format!("{}/tasks", server.base))
            .bearer_auth(&bob_token)
            .json(&json!({"prompt": "look around", "workspace": "ws", "approve": ["command"]}))
            .send()
            .await
            .expect("create");
        let status = r.status().as_u16();
        let body: Value = r.json().await.expect("json");
        assert_eq!(status, 201, "{body}");
        let id = body["id"].as_str().expect("id").to_owned();
        server
            .until(
                &client,
                &format!("/tasks/{id}/messages"),
                Some(&bob_token),
                |text| text.contains("DONE-2-TENANT"),
            )
            .await
    });
    drop(server);
    let ctx = format!("as {who:?}, shared parent {shared_parent}: {text}");
    assert!(
        text.contains("bob-own-text"),
        "its own workspace is there: {ctx}"
    );
    assert!(!text.contains("ada-secret-text"), "{ctx}");
    assert!(!text.contains("roost.db"), "the data dir is listed: {ctx}");
    assert!(!text.contains("server-secret-in-config"), "{ctx}");
    if !shared_parent {
        // Ada's root is not even there to list.
        assert!(
            !text.contains("bob\\nada") && !text.contains("ada\\nbob"),
            "{ctx}"
        );
    }
    assert_eq!(before, [tree_hash(&ada), tree_hash(&etc)], "{ctx}");
}

/// A minimal MCP stdio server (Python) whose one tool, `probe`, tries
/// from inside its sandbox what a hostile server would: its privileges,
/// Roost's config and store, a host service's socket, a file outside.
const PROBE_SERVER: &str = r#"import json, os, socket, sys
def probe(a):
    out = []
    with open('/proc/self/status') as f:
        out += [l.strip() for l in f if l.startswith(('CapEff', 'CapBnd', 'NoNewPrivs'))]
    out.append('UID=%d' % os.getuid())
    for p in a['read']:
        try:
            with open(p) as f:
                out.append('READ %s %s' % (p, f.read(200)))
        except OSError as e:
            out.append('NOREAD %s %s' % (p, e))
    for p in a['sockets']:
        try:
            s = socket.socket(socket.AF_UNIX)
            s.connect(p)
            out.append('CONNECTED %s' % p)
        except OSError as e:
            out.append('REFUSED %s %s' % (p, e))
    try:
        with open(a['write'], 'w') as f:
            f.write('pwned')
        out.append('WROTE')
    except OSError as e:
        out.append('NOWRITE %s' % e)
    return '\n'.join(out)
for line in sys.stdin:
    m = json.loads(line)
    r = None
    if m.get('method') == 'initialize':
        r = {'protocolVersion': m['params']['protocolVersion'], 'capabilities': {'tools': {}},
             'serverInfo': {'name': 'probe', 'version': '1'}}
    elif m.get('method') == 'tools/list':
        r = {'tools': [{'name': 'probe', 'description': 'probe', 'inputSchema': {'type': 'object'}}]}
    elif m.get('method') == 'tools/call':
        r = {'content': [{'type': 'text', 'text': probe(m['params']['arguments'])}]}
    elif 'id' in m:
        r = {}
    if 'id' in m:
        sys.stdout.write(json.dumps({'jsonrpc': '2.0', 'id': m['id'], 'result': r}) + '\n')
        sys.stdout.flush()
"#;

/// An MCP stdio server runs in the command sandbox: as root and as an
/// unprivileged user, it holds no privilege, cannot read Roost's config
/// (with its secret) or store, reaches no host socket and writes nothing
/// outside.
#[test]
pub(crate) fn an_mcp_server_holds_no_privilege_and_reaches_none_of_roosts_files() {
    for who in identities() {
        mcp_attack_as(who);
    }
}

fn mcp_attack_as(who: Identity) {
    let scene = Scene::new();
    let [ws, canary, data, etc, sockets, xdg, server_dir, _home] = scene.dirs([
        "ws", "canary", "data", "etc", "sockets", "xdg", "server", "home",
    ]);
    std::fs::create_dir_all(xdg.join("roost")).expect("mkdir");
    std::fs::write(canary.join("canary.txt"), "outside\n").expect("canary");
    let server = server_dir.join("probe.py");
    std::fs::write(&server, PROBE_SERVER).expect("server");
    let config = etc.join("roost.toml");
    std::fs::write(
        &config,
        "[secrets.CANARY_TOKEN]\nvalue = \"sk-mcp-canary-in-config\"\nhosts = [\"example.com\"]\n",
    )
    .expect("config");
    let store = scene.p("store.db");
    std::fs::write(
        xdg.join("roost/mcp_settings.json"),
        json!({"mcpServers": {"probe": {"command": "python3", "args": [server.display().to_string()]}}})
            .to_string(),
    )
    .expect("mcp settings");
    let socket_path = sockets.join("daemon.sock");
    let hits = socket_server(&socket_path);
    control_connect(&socket_path, &hits);
    let hits_before = hits.load(Ordering::SeqCst);
    if who == Identity::Nobody {
        chown_tree(scene.base.path(), NOBODY);
        std::os::unix::fs::lchown(&socket_path, Some(0), Some(0)).expect("chown socket");
    }
    let before = [tree_hash(&ws), tree_hash(&canary), tree_hash(&etc)];
    let args = json!({
        "read": [config.display().to_string(), store.display().to_string(),
                 data.join("roost.db").display().to_string()],
        "sockets": [socket_path.display().to_string()],
        "write": canary.join("pwned.txt").display().to_string(),
    });
    // The store exists before the server starts: make it by listing.
    let roost = |extra: &[&str]| {
        let mut c = scene.roost(who, &config);
        c.env("XDG_CONFIG_HOME", &xdg)
            .env("ROOST_STORE_URL", &store)
            .args(extra);
        c.output().expect("roost runs")
    };
    let _ = roost(&["history", "list"]);
    let out = roost(&[
        "mcp",
        "call",
        "probe",
        "probe",
        "--workspace",
        &ws.display().to_string(),
        "--args",
        &args.to_string(),
    ]);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let ctx = format!("as {who:?}: {text}");
    assert!(out.status.success(), "{ctx}");
    assert!(text.contains("CapEff:\\t0000000000000000"), "{ctx}");
    assert!(text.contains("CapBnd:\\t0000000000000000"), "{ctx}");
    assert!(text.contains("NoNewPrivs:\\t1"), "{ctx}");
    assert!(!text.contains("UID=0\\n"), "{ctx}");
    assert!(!text.contains("\\nREAD /"), "{ctx}");
    assert!(!text.contains("sk-mcp-canary-in-config"), "{ctx}");
    assert!(!text.contains("CONNECTED"), "{ctx}");
    assert!(text.contains("NOWRITE"), "{ctx}");
    assert_eq!(hits.load(Ordering::SeqCst), hits_before, "{ctx}");
    assert_eq!(
        before,
        [tree_hash(&ws), tree_hash(&canary), tree_hash(&etc)],
        "{ctx}"
    );
}

/// The deny list through the binary, as root and as an unprivileged user,
/// under `--yes` and `allowed_commands = ["*"]`: no spelling of a denied
/// `rm` (a path, a wrapper, variables that make `git status` run it)
/// deletes its file; the workspace and a canary are hashed before and
/// after.
#[test]
pub(crate) fn a_denied_command_runs_by_no_spelling_through_the_binary() {
    for who in identities() {
        spellings_as(who);
    }
}

fn spellings_as(who: Identity) {
    let scene = Scene::new();
    let [ws, canary, _data, etc, _home] = scene.dirs(["ws", "canary", "data", "etc", "home"]);
    let lines = crate::command_policy::spellings();
    for i in 0..lines.len() {
        std::fs::write(ws.join(format!("f{i}")), "keep me\n").expect("file");
    }
    std::fs::write(ws.join("tracked.txt"), "tracked\n").expect("tracked");
    std::fs::write(canary.join("canary.txt"), "outside\n").expect("canary");
    for args in [&["init", "-q"][..], &["add", "tracked.txt"][..]] {
        let ok = std::process::Command::new("git")
            .args(args)
            .current_dir(&ws)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .status()
            .expect("git runs")
            .success();
        assert!(ok, "git {args:?}");
    }
    let config = etc.join("roost.toml");
    std::fs::write(
        &config,
        "[commands]\nallowed_commands = [\"*\"]\ndenied_commands = [\"rm\"]\n",
    )
    .expect("config");
    let mut turns: Vec<Value> = lines.iter().map(|l| command_call(l)).collect();
    turns.push(json!({"text": "", "tool_calls": [{"name": "attempt_completion", "args": {"result": "done"}}]}));
    let script = scene.p("script.json");
    std::fs::write(&script, json!({ "turns": turns }).to_string()).expect("script");
    if who == Identity::Nobody {
        chown_tree(scene.base.path(), NOBODY);
    }
    let before = [tree_hash(&ws), tree_hash(&canary)];
    let out = scene
        .roost(who, &config)
        .args([
            "run",
            "delete",
            "--yes",
            "--allow-commands",
            "--json",
            "--workspace",
        ])
        .arg(&ws)
        .arg("--script")
        .arg(&script)
        .output()
        .expect("roost runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let ctx = format!(
        "as {who:?}: {stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        stdout.matches("is denied by the rule `rm`").count(),
        lines.len() - 1,
        "{ctx}"
    );
    assert_eq!(before, [tree_hash(&ws), tree_hash(&canary)], "{ctx}");
}

/// A command with network runs under the bridge that serves its proxy:
/// the filter still refuses it a Unix socket (the bridge installs it), and
/// the bridge — which needs one — is out of its reach (undumpable: no
/// ptrace, no `/proc/PID/mem`, `maps` or `environ`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
pub(crate) async fn a_networked_command_gets_no_unix_socket_and_cannot_reach_its_bridge() {
    use roost_tests::user::ScriptedUser;
    let (allowed, _) = crate::commands::http_server("hello");
    let line = "python3 -c 'import socket; socket.socket(socket.AF_UNIX)' 2>&1 | tail -n 1; \
                head -c 64 /proc/$PPID/maps 2>&1; head -c 64 /proc/$PPID/environ 2>&1; echo; \
                grep -c . /proc/$PPID/status; echo END-OF-PROBE";
    let h = crate::commands::with_net_profile(vec![crate::commands::run(line)], allowed);
    let (id, _) = h.run(&ScriptedUser::default(), "probe").await;
    let r = crate::commands::results(&h, &id);
    let out = &r[0].0;
    assert!(out.contains("END-OF-PROBE"), "{out}");
    // The filter: refused.
    assert!(
        out.contains("PermissionError") || out.contains("Permission denied"),
        "{out}"
    );
    // The bridge's memory map and environment: not readable.
    assert!(
        out.contains("/maps' for reading: Permission denied"),
        "{out}"
    );
    assert!(
        out.contains("/environ' for reading: Permission denied"),
        "{out}"
    );
}

/// The filtering proxy through the binary, as root and as an
/// unprivileged user: a request pipelined behind an allowed one, to an
/// origin the profile does not name, is refused and recorded, and that
/// origin is never contacted.
#[test]
pub(crate) fn a_pipelined_request_is_judged_through_the_binary() {
    for who in identities() {
        pipelined_as(who);
    }
}

fn pipelined_as(who: Identity) {
    let scene = Scene::new();
    let [ws, _data, etc, _home] = scene.dirs(["ws", "data", "etc", "home"]);
    let (allowed, allowed_hits) = crate::commands::http_server("hello-from-allowed");
    let (other, other_hits) = crate::commands::http_server("should-not-see");
    let config = etc.join("roost.toml");
    std::fs::write(
        &config,
        format!(
            "[commands]\nallowed_commands = [\"*\"]\nprofile = \"net\"\n\n\
             [command_profiles.net]\nnetwork = [\"http://127.0.0.1:{allowed}\"]\n"
        ),
    )
    .expect("config");
    let script = scene.p("script.json");
    std::fs::write(
        &script,
        json!({"turns": [
            command_call(&crate::command_policy::pipelined(allowed, other)),
            {"text": "", "tool_calls": [{"name": "attempt_completion", "args": {"result": "done"}}]}
        ]})
        .to_string(),
    )
    .expect("script");
    if who == Identity::Nobody {
        chown_tree(scene.base.path(), NOBODY);
    }
    let out = scene
        .roost(who, &config)
        .args([
            "run",
            "pipeline",
            "--yes",
            "--allow-commands",
            "--workspace",
        ])
        .arg(&ws)
        .arg("--script")
        .arg(&script)
        .output()
        .expect("roost runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let ctx = format!("as {who:?}: {text}");
    assert!(text.contains("hello-from-allowed"), "{ctx}");
    assert!(text.contains("403 Forbidden"), "{ctx}");
    assert!(!text.contains("should-not-see"), "{ctx}");
    assert!(
        text.contains(&format!("http://127.0.0.1:{other}")),
        "the refusal is recorded: {ctx}"
    );
    assert_eq!(allowed_hits.load(Ordering::SeqCst), 1, "{ctx}");
    assert_eq!(other_hits.load(Ordering::SeqCst), 0, "{ctx}");
}

/// Bad input at the doors' new settings gets a clear error and runs
/// nothing: a `limits` value of the wrong type, an unknown profile key,
/// and the bridge's internal subcommand called by hand with garbage.
#[test]
pub(crate) fn bad_door_settings_get_a_clear_error() {
    let scene = Scene::new();
    let [ws, _data, etc, _home] = scene.dirs(["ws", "data", "etc", "home"]);
    for (toml, names) in [
        (
            "[commands]\nallowed_commands = [\"*\"]\n[command_profiles.x.limits]\nprocesses = \"many\"\n",
            "processes",
        ),
        (
            "[commands]\nallowed_commands = [\"*\"]\n[command_profiles.x]\nunix_socket = true\n",
            "unix_socket",
        ),
    ] {
        let config = etc.join("roost.toml");
        std::fs::write(&config, toml).expect("config");
        let out = scene
            .roost(Identity::Caller, &config)
            .args(["run", "x", "--yes", "--allow-commands", "--workspace"])
            .arg(&ws)
            .output()
            .expect("roost runs");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{err}");
        assert!(err.contains(names) && err.contains("roost.toml"), "{err}");
    }
    for args in [
        &["__command-bridge"][..],
        &["__command-bridge", "--unix-sockets=maybe", "s", "1", "true"],
    ] {
        let out = std::process::Command::new(&scene.bin)
            .args(args)
            .output()
            .expect("runs");
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("usage"),
            "{args:?}"
        );
    }
}

/// A line the policy proves read-only runs with the workspace mounted
/// read-only (no lease, guard or checkpoint), so a judgement that is wrong
/// makes it fail to write, never write unguarded: the command reads the
/// workspace, and its own mount table says the workspace is read-only
/// there, while a mutating line's says read-write — as root and as an
/// unprivileged user, the workspace unchanged.
#[test]
fn a_read_only_line_sees_the_workspace_read_only() {
    for who in identities() {
        read_only_as(who);
    }
}

fn read_only_as(who: Identity) {
    let scene = Scene::new();
    let [ws, etc, _home] = scene.dirs(["ws", "etc", "home"]);
    std::fs::write(ws.join("src.txt"), "tracked\n").expect("file");
    let config = etc.join("roost.toml");
    std::fs::write(&config, "[commands]\nallowed_commands = [\"*\"]\n").expect("config");
    // The workspace's own line of the command's mount table (its mount
    // point is the fifth field, its options the sixth).
    let mounts = format!("grep -F -- ' {} ' /proc/self/mountinfo", ws.display());
    let turns = vec![
        command_call(&format!("cat src.txt; {mounts}; echo READ-DONE")),
        command_call(&format!("{mounts}; touch made.txt; echo WRITE-DONE")),
        json!({"text": "", "tool_calls": [{"name": "attempt_completion", "args": {"result": "done"}}]}),
    ];
    let script = scene.p("script.json");
    std::fs::write(&script, json!({ "turns": turns }).to_string()).expect("script");
    if who == Identity::Nobody {
        chown_tree(scene.base.path(), NOBODY);
    }
    let before = tree_hash(&ws);
    let mut c = scene.roost(who, &config);
    c.args([
        "run",
        "mounts",
        "--yes",
        "--allow-commands",
        "--json",
        "--workspace",
    ])
    .arg(&ws)
    .arg("--script")
    .arg(&script);
    let out = c.output().expect("roost runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let text = command_output(&stdout);
    let ctx = format!(
        "as {who:?}\n--- command output\n{text}\n--- stderr\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{ctx}\n--- stdout\n{stdout}");
    let (read, write) = text
        .split_once("READ-DONE")
        .unwrap_or_else(|| panic!("the read ran: {ctx}"));
    assert!(read.contains("tracked"), "{ctx}");
    assert!(write.contains("WRITE-DONE"), "{ctx}");
    // The options of the workspace's mount in each command's table (the
    // last line for the mount point is the one on top).
    let options = |table: &str| -> String {
        table
            .lines()
            .filter_map(|l| {
                let f: Vec<&str> = l.split(' ').collect();
                (f.get(4).copied() == ws.to_str())
                    .then(|| f.get(5).copied().unwrap_or("").to_owned())
            })
            .next_back()
            .unwrap_or_default()
    };
    let has = |options: &str, flag: &str| options.split(',').any(|o| o == flag);
    let (ro, rw) = (options(read), options(write));
    assert!(
        has(&ro, "ro"),
        "the read-only line's workspace: {ro:?}: {ctx}"
    );
    assert!(
        has(&rw, "rw"),
        "the mutating line's workspace: {rw:?}: {ctx}"
    );
    // The mutating line wrote; the read-only one nothing.
    let mut after = tree_hash(&ws);
    assert!(after.remove("made.txt").is_some(), "{ctx}");
    assert_eq!(before, after, "the workspace changed: {ctx}");
}
