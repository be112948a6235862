//! The web UI in a real headless Chromium, driven over WebDriver
//! (Debian's `chromium` and `chromium-driver`): sign in with a token,
//! start a task, see its streamed text, approve its edit from the diff,
//! accept the completion — on a phone-sized window. Who is signed in, the
//! modes and profiles to choose from, a result said once, an icon and a
//! console without errors. Screenshots are kept under
//! `target/ui-artifacts/`.

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use fantoccini::{ClientBuilder, Locator};
use serde_json::json;

use crate::server::{server_with, server_with_toml, write_then_done};
use roost_server::ServerConfig;

/// A chromedriver on a free port, stopped when dropped.
struct Driver {
    child: Child,
    url: String,
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

async fn chromedriver() -> Driver {
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let child = Command::new("chromedriver")
        .arg(format!("--port={port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("chromedriver runs (Debian: apt install chromium chromium-driver)");
    // It listens once it has started.
    for _ in 0..200 {
        if tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_ok()
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Driver {
        child,
        url: format!("http://127.0.0.1:{port}"),
    }
}

/// A headless Chromium session of `driver`, phone-sized, keeping its
/// console's messages (see [`console`]).
async fn browser(driver: &Driver) -> fantoccini::Client {
    let mut caps = serde_json::Map::new();
    caps.insert(
        "goog:chromeOptions".into(),
        json!({"args": ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=390,844"]}),
    );
    caps.insert("goog:loggingPrefs".into(), json!({"browser": "ALL"}));
    // Plain HTTP to the local driver: no TLS stack needed.
    ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
        .capabilities(caps)
        .connect(&driver.url)
        .await
        .expect("a Chromium session")
}

/// The messages the page's console got since the last call (failed loads
/// among them: a missing icon is a `404` there), from chromedriver's log
/// endpoint.
async fn console(driver: &Driver, c: &fantoccini::Client) -> Vec<serde_json::Value> {
    let session = c
        .session_id()
        .await
        .expect("session")
        .expect("a session id");
    let r = reqwest::Client::new()
        .post(format!("{}/session/{session}/se/log", driver.url))
        .header("content-type", "application/json")
        .body(json!({"type": "browser"}).to_string())
        .send()
        .await
        .expect("the driver's log");
    let v: serde_json::Value =
        serde_json::from_str(&r.text().await.expect("log")).expect("log JSON");
    v["value"].as_array().cloned().unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_web_ui_signs_in_starts_a_task_approves_and_accepts() {
    let s = server_with(write_then_done("hello.txt"), ServerConfig::default()).await;
    let (root, token) = s.tenant("team-a");
    let driver = chromedriver().await;
    let c = browser(&driver).await;
    let wait = Duration::from_secs(60);
    let find = |css: &'static str| {
        let c = c.clone();
        async move {
            c.wait()
                .at_most(wait)
                .for_element(Locator::Css(css))
                .await
                .unwrap_or_else(|e| panic!("{css}: {e}"))
        }
    };

    c.goto(&format!("{}/", s.base)).await.expect("the page");
    // A wrong token is refused on the page.
    find("#token")
        .await
        .send_keys("roost_nope_nope")
        .await
        .expect("type");
    find("#signin-form button")
        .await
        .click()
        .await
        .expect("click");
    let refused = find("#signin-error").await;
    for _ in 0..100 {
        if !refused.text().await.unwrap_or_default().is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(refused.text().await.expect("text").contains("not valid"));
    c.execute("document.getElementById('token').value = ''", vec![])
        .await
        .expect("clear");
    find("#token").await.send_keys(&token).await.expect("type");
    find("#signin-form button")
        .await
        .click()
        .await
        .expect("click");

    // A new task.
    find("#nt-workspace")
        .await
        .send_keys("ws")
        .await
        .expect("type");
    find("#nt-prompt")
        .await
        .send_keys("write hello.txt")
        .await
        .expect("type");
    find("#new-task button").await.click().await.expect("start");

    // Its streamed text, then the edit's question with its diff.
    let ask = find(".ask[data-kind='tool']").await;
    let log = find("#log").await.text().await.expect("log");
    assert!(log.contains("Writing."), "{log}");
    let diff = ask.text().await.expect("ask");
    assert!(diff.contains("+hi"), "{diff}");
    let shot = c.screenshot().await.expect("screenshot");
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/ui-artifacts");
    std::fs::create_dir_all(&dir).expect("artifacts dir");
    std::fs::write(dir.join("web-ui-approval.png"), &shot).expect("screenshot kept");
    find(".ask[data-kind='tool'] button.primary")
        .await
        .click()
        .await
        .expect("approve");

    // The result to accept, then done.
    find(".ask[data-kind='completion'] button.primary")
        .await
        .click()
        .await
        .expect("accept");
    find(".done").await;
    let log = find("#log").await.text().await.expect("log");
    assert!(
        log.contains("Created hello.txt") || log.contains("hello.txt"),
        "{log}"
    );
    assert_eq!(
        std::fs::read_to_string(root.join("ws/hello.txt")).expect("written"),
        "hi\n"
    );
    let shot = c.screenshot().await.expect("screenshot");
    std::fs::write(dir.join("web-ui-done.png"), &shot).expect("screenshot kept");
    c.close().await.expect("close");
}

/// Signed in, the page says as whom; its Mode list is `GET /v1/modes` of
/// the workspace typed (its own `.roomodes` included) and its Profile list
/// the server's profiles (`GET /v1/profiles`), and what is chosen there is
/// what the task runs with. The result is shown once — while it waits to
/// be accepted and after. The page has an icon (served, `image/svg+xml`)
/// and its console no error: no failed load, no `404`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_web_ui_says_who_offers_modes_and_profiles_and_shows_a_result_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let careful = dir.path().join("careful.json");
    std::fs::write(
        &careful,
        json!({"model": "m", "turns": [{"text": "", "tool_calls": [{"name": "attempt_completion", "args": {"result": "Checked: RESULT-SEEN-ONCE"}}]}]}).to_string(),
    )
    .expect("script");
    let s = server_with_toml(
        json!({"turns": []}),
        &format!(
            "[profiles.careful]\nprovider = \"scripted\"\nmodel = \"careful-model\"\nscript = \"{}\"\n",
            careful.display()
        ),
        ServerConfig::default(),
    )
    .await;
    let (root, token) = s.tenant("team-a");
    std::fs::write(
        root.join("ws/.roomodes"),
        "customModes:\n  - slug: reviewer\n    name: Reviewer\n    roleDefinition: You review.\n    groups: [read]\n",
    )
    .expect("project modes");
    let driver = chromedriver().await;
    let c = browser(&driver).await;
    let wait = Duration::from_secs(60);
    let find = |css: &'static str| {
        let c = c.clone();
        async move {
            c.wait()
                .at_most(wait)
                .for_element(Locator::Css(css))
                .await
                .unwrap_or_else(|e| panic!("{css}: {e}"))
        }
    };
    // `script`'s value (a function body), polled until `done` holds.
    let poll = |script: &'static str, done: fn(&serde_json::Value) -> bool| {
        let c = c.clone();
        async move {
            let mut v = serde_json::Value::Null;
            for _ in 0..600 {
                v = c.execute(script, vec![]).await.expect(script);
                if done(&v) {
                    return v;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            panic!("{script}: {v}");
        }
    };
    let options = |id: &'static str| {
        let c = c.clone();
        async move {
            c.execute(
                "return [...document.getElementById(arguments[0]).options].map(o => o.value)",
                vec![json!(id)],
            )
            .await
            .expect("options")
        }
    };
    let slugs = |ws: &'static str| {
        let s = &s;
        let token = &token;
        async move {
            let (status, modes) = s.get(&format!("/v1/modes?workspace={ws}"), token).await;
            assert_eq!(status, 200, "{modes}");
            json!(
                modes
                    .as_array()
                    .expect("modes")
                    .iter()
                    .map(|m| m["slug"].clone())
                    .collect::<Vec<_>>()
            )
        }
    };

    c.goto(&format!("{}/", s.base)).await.expect("the page");
    // The icon the page names is there, as SVG.
    let icon = c
        .execute_async(
            "const done = arguments[arguments.length - 1];
             const link = document.querySelector('link[rel=icon]');
             if (!link) { done('no icon link'); return; }
             fetch(link.href).then(r => done(r.status + ' ' + r.headers.get('content-type')), e => done(String(e)));",
            vec![],
        )
        .await
        .expect("the icon");
    assert_eq!(icon, json!("200 image/svg+xml"));

    find("#token").await.send_keys(&token).await.expect("type");
    find("#signin-form button")
        .await
        .click()
        .await
        .expect("click");
    // Who is signed in.
    let who = poll("return document.getElementById('who').textContent", |v| {
        v.as_str().is_some_and(|t| !t.is_empty())
    })
    .await;
    assert_eq!(who, json!("Signed in as team-a"));

    // The modes of the root, then of the workspace typed: the server's
    // lists, `code` chosen first.
    let root_modes = slugs(".").await;
    poll(
        "return document.getElementById('nt-mode').options.length",
        |v| v.as_u64().is_some_and(|n| n > 0),
    )
    .await;
    assert_eq!(options("nt-mode").await, root_modes);
    assert_eq!(
        c.execute("return document.getElementById('nt-mode').value", vec![])
            .await
            .expect("mode"),
        json!("code")
    );
    find("#nt-workspace")
        .await
        .send_keys("ws")
        .await
        .expect("type");
    find("#nt-prompt")
        .await
        .send_keys("check it")
        .await
        .expect("type");
    poll(
        "return [...document.getElementById('nt-mode').options].some(o => o.value === 'reviewer')",
        |v| v == &json!(true),
    )
    .await;
    let ws_modes = slugs("ws").await;
    assert_ne!(ws_modes, root_modes);
    assert_eq!(options("nt-mode").await, ws_modes);
    // The profiles, the server's default first.
    assert_eq!(
        options("nt-profile").await,
        json!(["", "careful", "quick", "replay"])
    );
    let first = c
        .execute(
            "return document.getElementById('nt-profile').options[0].textContent",
            vec![],
        )
        .await
        .expect("label");
    assert_eq!(first, json!("Server default (replay)"));
    find("#nt-mode")
        .await
        .select_by_value("reviewer")
        .await
        .expect("mode");
    find("#nt-profile")
        .await
        .select_by_value("careful")
        .await
        .expect("profile");
    find("#new-task button").await.click().await.expect("start");

    // The result, once: while it waits to be accepted…
    let count =
        "return document.getElementById('chat').innerText.split('RESULT-SEEN-ONCE').length - 1";
    find(".ask[data-kind='completion']").await;
    assert_eq!(c.execute(count, vec![]).await.expect("count"), json!(1));
    let shot = c.screenshot().await.expect("screenshot");
    let artifacts =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/ui-artifacts");
    std::fs::create_dir_all(&artifacts).expect("artifacts dir");
    std::fs::write(artifacts.join("web-ui-result.png"), &shot).expect("screenshot kept");
    find(".ask[data-kind='completion'] button.primary")
        .await
        .click()
        .await
        .expect("accept");
    // …and once it is.
    find(".done").await;
    assert_eq!(c.execute(count, vec![]).await.expect("count"), json!(1));

    // The task runs with what was chosen.
    let (_, list) = s.get("/v1/tasks", &token).await;
    let task = &list["tasks"][0];
    assert_eq!(
        (&task["mode"], &task["profile"], &task["status"]),
        (&json!("reviewer"), &json!("careful"), &json!("completed")),
        "{task}"
    );
    // Nothing failed to load; nothing went wrong on the page.
    let logged = console(&driver, &c).await;
    assert!(logged.iter().all(|m| m["level"] != "SEVERE"), "{logged:?}");
    c.close().await.expect("close");
}
