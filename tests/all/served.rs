//! A `roost serve` process a test starts: a free port, its log, waiting
//! until it answers, and polling a task until it settles. Killed when
//! dropped.

use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::Duration;

/// A port nothing listens on now (the server binds it next).
pub(crate) fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("port")
        .port()
}

/// The running server.
pub(crate) struct Served {
    child: Child,
    /// `http://127.0.0.1:PORT/v1`.
    pub(crate) base: String,
    log: PathBuf,
}

impl Served {
    /// Start `cmd` (a `roost serve` command line without `--listen`) on a
    /// free port, its stderr in `log`.
    pub(crate) fn start(mut cmd: Command, log: &Path) -> Self {
        let port = free_port();
        let child = cmd
            .arg("--listen")
            .arg(format!("127.0.0.1:{port}"))
            .stdout(std::process::Stdio::null())
            .stderr(std::fs::File::create(log).expect("log"))
            .spawn()
            .expect("serve starts");
        Self {
            child,
            base: format!("http://127.0.0.1:{port}/v1"),
            log: log.to_path_buf(),
        }
    }

    /// What the server has logged so far.
    pub(crate) fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Wait until it answers `/health` (a bounded number of polls).
    pub(crate) async fn ready(&self, client: &reqwest::Client) {
        for _ in 0..600 {
            if client
                .get(format!("{}/health", self.base))
                .send()
                .await
                .is_ok()
            {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("serve did not start: {}", self.log());
    }

    /// `POST /tasks` of `prompt` in the root workspace (`--no-auth`): the
    /// new task's id.
    pub(crate) async fn create(&self, client: &reqwest::Client, prompt: &str) -> String {
        let body: serde_json::Value = client
            .post(format!("{}/tasks", self.base))
            .json(&serde_json::json!({"prompt": prompt, "workspace": "."}))
            .send()
            .await
            .expect("create")
            .json()
            .await
            .expect("json");
        body["id"]
            .as_str()
            .unwrap_or_else(|| panic!("{body}"))
            .to_owned()
    }

    /// `GET path` as `token` (none: `--no-auth`), its body as text.
    pub(crate) async fn get(
        &self,
        client: &reqwest::Client,
        path: &str,
        token: Option<&str>,
    ) -> String {
        let mut req = client.get(format!("{}{path}", self.base));
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        let r = req.send().await.expect("GET");
        r.text().await.unwrap_or_default()
    }

    /// Poll `GET path` until `done` holds of its body (a bounded number of
    /// polls); the body it held of.
    pub(crate) async fn until(
        &self,
        client: &reqwest::Client,
        path: &str,
        token: Option<&str>,
        done: impl Fn(&str) -> bool,
    ) -> String {
        let mut last = String::new();
        for _ in 0..600 {
            let body = self.get(client, path, token).await;
            if done(&body) {
                return body;
            }
            last = body;
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("{path} never settled: {last}\n{}", self.log());
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
