//! How a server run from the CLI (`roost serve`, `roost mcp serve
//! --http`) learns to stop gracefully.

/// Resolves at SIGINT or SIGTERM (a server's graceful stop).
pub(crate) async fn stop_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut int), Ok(mut term)) = (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
    ) else {
        return std::future::pending().await;
    };
    tokio::select! {
        _ = int.recv() => {}
        _ = term.recv() => {}
    }
}
