//! A real PostgreSQL server for tests and benchmarks (Debian's
//! `postgresql` package): `initdb` in a temp dir, started with `pg_ctl` on
//! a free port of 127.0.0.1, stopped when dropped — or, for the one a test
//! process shares ([`shared`]), when that process ends (a watchdog stops
//! it, since statics are never dropped). PostgreSQL refuses to run as
//! root; as root the server runs as the `postgres` user.

#![forbid(unsafe_code)]

use std::os::unix::fs::chown;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

/// A running server.
#[derive(Debug)]
pub struct Postgres {
    dir: tempfile::TempDir,
    port: u16,
    bin: PathBuf,
    /// `(uid, gid)` the server runs as, when this process is root.
    user: Option<(u32, u32)>,
}

/// Why the server could not be started.
#[derive(Debug)]
pub struct Error(pub String);

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "cannot start a test PostgreSQL (install Debian's `postgresql` package): {}",
            self.0
        )
    }
}

impl std::error::Error for Error {}

/// Where `initdb` and `pg_ctl` are: Debian keeps them out of PATH.
fn bin_dir() -> Result<PathBuf, Error> {
    if let Ok(dir) = std::env::var("ROOST_PG_BIN") {
        return Ok(PathBuf::from(dir));
    }
    let mut found: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path().join("bin"))
        .filter(|b| b.join("initdb").exists())
        .collect();
    found.sort();
    if let Some(newest) = found.pop() {
        return Ok(newest);
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .find(|d| d.join("initdb").exists())
        .ok_or_else(|| Error("no initdb under /usr/lib/postgresql/*/bin or on PATH".into()))
}

/// The ids the server runs as when this process is root (PostgreSQL
/// refuses to run as root): the `postgres` user's, or `nobody`'s where the
/// package's user is missing (a machine whose image has the binaries but
/// not the user the package's install script makes).
fn server_user() -> Result<Option<(u32, u32)>, Error> {
    // SAFETY-free check: root's home is the tell-tale, but `id -u` is the truth.
    let me = run_out(Command::new("id").arg("-u"))?;
    if me.trim() != "0" {
        return Ok(None);
    }
    let user = ["postgres", "nobody"]
        .into_iter()
        .find(|u| run_out(Command::new("id").args(["-u", u])).is_ok())
        .ok_or_else(|| {
            Error("neither a `postgres` nor a `nobody` user to run the server as".into())
        })?;
    let uid = run_out(Command::new("id").args(["-u", user]))?;
    let gid = run_out(Command::new("id").args(["-g", user]))?;
    let parse = |s: &str| {
        s.trim()
            .parse::<u32>()
            .map_err(|e| Error(format!("id of user {user}: {e}")))
    };
    Ok(Some((parse(&uid)?, parse(&gid)?)))
}

fn run_out(cmd: &mut Command) -> Result<String, Error> {
    let out = cmd.output().map_err(|e| Error(format!("{cmd:?}: {e}")))?;
    if !out.status.success() {
        return Err(Error(format!(
            "{cmd:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// A port nobody listens on now.
fn free_port() -> Result<u16, Error> {
    let l = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| Error(e.to_string()))?;
    Ok(l.local_addr().map_err(|e| Error(e.to_string()))?.port())
}

impl Postgres {
    /// Initialise and start a server of its own.
    pub fn start() -> Result<Self, Error> {
        let bin = bin_dir()?;
        let user = server_user()?;
        // Outside /tmp: sandboxed commands in the tests get a private /tmp.
        let base = if Path::new("/var/tmp").is_dir() {
            "/var/tmp"
        } else {
            "/tmp"
        };
        let dir = tempfile::Builder::new()
            .prefix("roost-pg-")
            .tempdir_in(base)
            .map_err(|e| Error(e.to_string()))?;
        if let Some((uid, gid)) = user {
            chown(dir.path(), Some(uid), Some(gid)).map_err(|e| Error(e.to_string()))?;
        }
        let pg = Self {
            port: free_port()?,
            dir,
            bin,
            user,
        };
        let data = pg.data();
        pg.run(
            Command::new(pg.bin.join("initdb"))
                .args([
                    "-A",
                    "trust",
                    "-U",
                    "roost",
                    "-E",
                    "UTF8",
                    "--no-sync",
                    "-D",
                ])
                .arg(&data),
        )?;
        pg.pg_ctl_start()?;
        Ok(pg)
    }

    fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    fn command(&self, cmd: &mut Command) {
        use std::os::unix::process::CommandExt;
        if let Some((uid, gid)) = self.user {
            cmd.uid(uid).gid(gid);
        }
        cmd.stdin(Stdio::null()).env("LC_ALL", "C");
    }

    fn run(&self, cmd: &mut Command) -> Result<(), Error> {
        self.command(cmd);
        run_out(cmd).map(|_| ())
    }

    fn pg_ctl_start(&self) -> Result<(), Error> {
        let opts = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off \
             -c max_connections=400 -c shared_buffers=64MB",
            self.port,
            self.dir.path().display()
        );
        self.run(
            Command::new(self.bin.join("pg_ctl"))
                .args(["-w", "-t", "60", "-l"])
                .arg(self.dir.path().join("log"))
                .arg("-D")
                .arg(self.data())
                .args(["-o", &opts, "start"]),
        )
    }

    /// Stop the server (fast: connections are cut, as in an outage).
    pub fn stop(&self) -> Result<(), Error> {
        self.run(
            Command::new(self.bin.join("pg_ctl"))
                .args(["-w", "-m", "fast", "-D"])
                .arg(self.data())
                .arg("stop"),
        )
    }

    /// Start it again after [`Postgres::stop`], on the same port.
    pub fn restart(&self) -> Result<(), Error> {
        self.pg_ctl_start()
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The URL of database `db`.
    pub fn url(&self, db: &str) -> String {
        format!("postgres://roost@127.0.0.1:{}/{db}", self.port)
    }

    /// A new, empty database; its URL.
    pub fn fresh_database(&self) -> Result<String, Error> {
        let name = format!("t{}", uuid::Uuid::new_v4().simple());
        self.run(
            Command::new(self.bin.join("createdb"))
                .args(["-h", "127.0.0.1", "-U", "roost", "-p"])
                .arg(self.port.to_string())
                .arg(&name),
        )?;
        Ok(self.url(&name))
    }

    /// Serve TLS too (with a certificate for `localhost` and 127.0.0.1
    /// signed by a CA of its own, made with the `openssl` command) and
    /// restart; the CA's certificate, for clients to trust.
    pub fn enable_tls(&self) -> Result<PathBuf, Error> {
        let dir = self.dir.path().join("tls");
        let ca = certificate_authority(&dir)?;
        let (key, cert) = (dir.join("server.key"), dir.join("server.crt"));
        let openssl = |args: &[&str]| {
            run_out(Command::new("openssl").args(args).current_dir(&dir)).map(|_| ())
        };
        openssl(&[
            "req",
            "-new",
            "-nodes",
            "-newkey",
            "rsa:2048",
            "-subj",
            "/CN=localhost",
            "-keyout",
            "server.key",
            "-out",
            "server.csr",
        ])?;
        std::fs::write(
            dir.join("san.ext"),
            "subjectAltName=DNS:localhost,IP:127.0.0.1\n",
        )
        .map_err(|e| Error(e.to_string()))?;
        openssl(&[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.crt",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-days",
            "2",
            "-extfile",
            "san.ext",
            "-out",
            "server.crt",
        ])?;
        // The server reads its key only if nobody else can.
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600))
            .map_err(|e| Error(e.to_string()))?;
        if let Some((uid, gid)) = self.user {
            for f in [&key, &cert] {
                chown(f, Some(uid), Some(gid)).map_err(|e| Error(e.to_string()))?;
            }
        }
        let conf = format!(
            "\nssl = on\nssl_cert_file = '{}'\nssl_key_file = '{}'\n",
            cert.display(),
            key.display()
        );
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(self.data().join("postgresql.conf"))
            .map_err(|e| Error(e.to_string()))?;
        std::io::Write::write_all(&mut file, conf.as_bytes()).map_err(|e| Error(e.to_string()))?;
        self.stop()?;
        self.restart()?;
        Ok(ca)
    }

    /// Stop the server when process `pid` ends (for a server in a static,
    /// which is never dropped).
    fn stop_with(&self, pid: u32) -> Result<(), Error> {
        let script = format!(
            "while [ -d /proc/{pid} ]; do sleep 1; done; '{}' -m immediate -D '{}' stop >/dev/null 2>&1; rm -rf '{}'",
            self.bin.join("pg_ctl").display(),
            self.data().display(),
            self.dir.path().display()
        );
        let mut cmd = Command::new("sh");
        cmd.args(["-c", &script])
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        self.command(&mut cmd);
        cmd.spawn().map_err(|e| Error(e.to_string()))?;
        Ok(())
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        let mut cmd = Command::new(self.bin.join("pg_ctl"));
        cmd.args(["-m", "immediate", "-D"])
            .arg(self.data())
            .arg("stop")
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        self.command(&mut cmd);
        let _ = cmd.status();
    }
}

/// A new certificate authority in `dir` (made if missing): its
/// certificate, `dir/ca.crt` (its key beside it).
pub fn certificate_authority(dir: &Path) -> Result<PathBuf, Error> {
    std::fs::create_dir_all(dir).map_err(|e| Error(e.to_string()))?;
    run_out(
        Command::new("openssl")
            .args([
                "req",
                "-x509",
                "-new",
                "-nodes",
                "-newkey",
                "rsa:2048",
                "-days",
                "2",
                "-subj",
                "/CN=Roost test CA",
                "-keyout",
                "ca.key",
                "-out",
                "ca.crt",
            ])
            .current_dir(dir),
    )?;
    Ok(dir.join("ca.crt"))
}

/// The server this test process shares (started on first use); each test
/// takes a [`Postgres::fresh_database`] of it.
pub fn shared() -> Result<&'static Postgres, Error> {
    static PG: OnceLock<Result<Postgres, String>> = OnceLock::new();
    PG.get_or_init(|| {
        let pg = Postgres::start().map_err(|e| e.0)?;
        pg.stop_with(std::process::id()).map_err(|e| e.0)?;
        Ok(pg)
    })
    .as_ref()
    .map_err(|e| Error(e.clone()))
}

/// The variable that makes a missing PostgreSQL a failure instead of a
/// skip: CI sets it (`.ci/run`), so its suite never passes by skipping.
pub const REQUIRE: &str = "ROOST_TESTS_REQUIRE_POSTGRES";

/// Why a PostgreSQL test cannot run here (no server could be started),
/// said once on stderr — or `None`: it can run, or [`REQUIRE`] is set and
/// the test goes on to fail with the reason. A developer without
/// Debian's `postgresql` package sees the store's PostgreSQL tests
/// skipped and why, not a panic per test.
pub fn skip_reason() -> Option<String> {
    let reason = shared().err()?.to_string();
    if std::env::var_os(REQUIRE).is_some() {
        return None;
    }
    static SAID: OnceLock<()> = OnceLock::new();
    SAID.get_or_init(|| eprintln!("skipping the PostgreSQL tests ({REQUIRE} unset): {reason}"));
    Some(reason)
}

/// Return from the test when PostgreSQL cannot run here (see
/// [`skip_reason`]).
#[macro_export]
macro_rules! skip_without_postgres {
    () => {
        if let Some(reason) = $crate::skip_reason() {
            eprintln!("skipped: {reason}");
            return;
        }
    };
}
