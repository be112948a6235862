//! `roost __command-bridge --unix-sockets=allow|deny SOCKET PORT PROGRAM
//! ARGS…`, run by the host inside a command's sandbox (never by a
//! person): it serves the host's filtering proxy, reachable only as the
//! Unix socket SOCKET, on the sandbox's own loopback at PORT — the sandbox
//! has no other network — then runs the command under the seccomp filter
//! of its profile (the bridge itself needs a Unix socket, so bubblewrap
//! cannot install the filter for it) and exits as the command did. Plain
//! threads, no runtime: it starts before every networked command.

// Installs the seccomp filter between fork and exec (`pre_exec`).
#![allow(unsafe_code)]

use std::ffi::OsString;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::process::ExitCode;

/// The hidden subcommand's name.
pub const NAME: &str = "__command-bridge";

/// Run the bridge with its arguments (after the subcommand's name).
pub fn run(args: &[OsString]) -> ExitCode {
    let unix_sockets = match args.first().and_then(|a| a.to_str()) {
        Some("--unix-sockets=allow") => true,
        Some("--unix-sockets=deny") => false,
        _ => {
            eprintln!("usage: roost {NAME} --unix-sockets=allow|deny SOCKET PORT PROGRAM [ARGS…]");
            return ExitCode::from(2);
        }
    };
    let args = args.get(1..).unwrap_or_default();
    let (Some(socket), Some(port), Some(program)) = (args.first(), args.get(1), args.get(2)) else {
        eprintln!("usage: roost {NAME} --unix-sockets=allow|deny SOCKET PORT PROGRAM [ARGS…]");
        return ExitCode::from(2);
    };
    // Fail closed: no filter (or a bridge the command could ptrace to
    // get round it), no command.
    if let Err(e) = roost_core::commands::seccomp::undumpable() {
        eprintln!("roost: the command's sandbox is not complete: {e}");
        return ExitCode::from(126);
    }
    let filter = match roost_core::commands::seccomp::program(unix_sockets) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("roost: the command's sandbox is not complete: {e}");
            return ExitCode::from(126);
        }
    };
    let Some(port) = port.to_str().and_then(|p| p.parse::<u16>().ok()) else {
        eprintln!("roost {NAME}: bad port");
        return ExitCode::from(2);
    };
    let socket = PathBuf::from(socket);
    match TcpListener::bind(("127.0.0.1", port)) {
        Ok(listener) => {
            std::thread::spawn(move || {
                for conn in listener.incoming().flatten() {
                    let socket = socket.clone();
                    std::thread::spawn(move || relay(conn, &socket));
                }
            });
        }
        Err(e) => eprintln!("roost: the command's network proxy is not available: {e}"),
    }
    let mut command = std::process::Command::new(program);
    command.args(args.get(3..).unwrap_or_default());
    // SAFETY: installing a prepared filter makes only system calls
    // (prctl, seccomp), no allocation.
    unsafe {
        use std::os::unix::process::CommandExt;
        command.pre_exec(move || {
            roost_core::commands::seccomp::apply(&filter).map_err(std::io::Error::other)
        });
    }
    match command.status() {
        Ok(status) => {
            use std::os::unix::process::ExitStatusExt;
            let code = status
                .code()
                .or_else(|| status.signal().map(|s| 128 + s))
                .unwrap_or(1);
            ExitCode::from(u8::try_from(code).unwrap_or(1))
        }
        Err(e) => {
            eprintln!("roost: cannot run {}: {e}", program.to_string_lossy());
            ExitCode::from(127)
        }
    }
}

/// Copy one connection both ways to the proxy's socket.
fn relay(tcp: TcpStream, socket: &std::path::Path) {
    let Ok(unix) = UnixStream::connect(socket) else {
        return;
    };
    let (Ok(mut tcp_r), Ok(mut unix_w)) = (tcp.try_clone(), unix.try_clone()) else {
        return;
    };
    let up = std::thread::spawn(move || {
        let _ = pipe(&mut tcp_r, &mut unix_w);
        let _ = unix_w.shutdown(Shutdown::Write);
    });
    let (mut unix_r, mut tcp_w) = (unix, tcp);
    let _ = pipe(&mut unix_r, &mut tcp_w);
    let _ = tcp_w.shutdown(Shutdown::Write);
    let _ = up.join();
}

fn pipe(from: &mut impl Read, to: &mut impl Write) -> std::io::Result<()> {
    let mut buf = [0u8; 16 * 1024];
    loop {
        let n = from.read(&mut buf)?;
        if n == 0 {
            return Ok(());
        }
        to.write_all(&buf[..n])?;
    }
}
