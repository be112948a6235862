//! The web UI in a real headless Chromium, driven over WebDriver
//! (Debian's `chromium` and `chromium-driver`): sign in with a token,
//! start a task, see its streamed text, approve its edit from the diff,
//! accept the completion — on a phone-sized window. A screenshot is kept
//! under `target/ui-artifacts/`.

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use fantoccini::{ClientBuilder, Locator};
use serde_json::json;

use crate::server::{server_with, write_then_done};
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_web_ui_signs_in_starts_a_task_approves_and_accepts() {
    let s = server_with(write_then_done("hello.txt"), ServerConfig::default()).await;
    let (root, token) = s.tenant("team-a");
    let driver = chromedriver().await;
    let mut caps = serde_json::Map::new();
    caps.insert(
        "goog:chromeOptions".into(),
        json!({"args": ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=390,844"]}),
    );
    // Plain HTTP to the local driver: no TLS stack needed.
    let c = ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
        .capabilities(caps)
        .connect(&driver.url)
        .await
        .expect("a Chromium session");
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
