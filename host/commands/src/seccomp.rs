//! The system calls a command may not make, as a seccomp filter: a read-only
//! mount does not stop `connect(2)` to a socket file, so a command could
//! reach a Docker daemon, a D-Bus bus, an ssh-agent or a database through
//! one. Unless its profile says `unix_sockets = true`, a command cannot
//! create a Unix socket at all (`socketpair(2)`, which reaches nothing, is
//! allowed); and `io_uring`, whose requests seccomp cannot see, is off.
//! The runtime directories where sockets live are hidden besides (see
//! [`super::sandbox`]). bubblewrap installs the filter (`--seccomp FD`);
//! where a bridge serves the proxy inside the sandbox, the bridge needs a
//! Unix socket itself and installs the filter on the command it starts.

// `prctl(PR_SET_DUMPABLE)` on the bridge itself.
#![allow(unsafe_code)]

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

/// Why the filter cannot be made or installed.
#[derive(Debug, thiserror::Error)]
#[error("seccomp: {0}")]
pub struct SeccompError(String);

/// The filter for a command: Unix sockets refused unless `unix_sockets`,
/// `io_uring` always.
pub fn program(unix_sockets: bool) -> Result<BpfProgram, SeccompError> {
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    if !unix_sockets {
        let unix = SeccompCondition::new(
            0,
            SeccompCmpArgLen::Dword,
            SeccompCmpOp::Eq,
            u64::from(libc::AF_UNIX.unsigned_abs()),
        )
        .map_err(|e| SeccompError(e.to_string()))?;
        rules.insert(
            libc::SYS_socket,
            vec![SeccompRule::new(vec![unix]).map_err(|e| SeccompError(e.to_string()))?],
        );
    }
    for call in [
        libc::SYS_io_uring_setup,
        libc::SYS_io_uring_enter,
        libc::SYS_io_uring_register,
    ] {
        rules.insert(call, Vec::new());
    }
    compile(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EACCES.unsigned_abs()),
    )
}

/// The filter for a line's reader (`policy::isolated`), for the process
/// that installs it: it computes, so it keeps memory, its pipes, signals'
/// return, its exit and a signal to itself (an allocation that fails
/// aborts: SIGABRT); every other call fails (`EPERM`): it opens,
/// connects, runs and signals nothing else.
pub fn reader_program() -> Result<BpfProgram, SeccompError> {
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = [
        libc::SYS_read,
        libc::SYS_write,
        libc::SYS_brk,
        libc::SYS_mmap,
        libc::SYS_munmap,
        libc::SYS_mremap,
        libc::SYS_madvise,
        libc::SYS_mprotect,
        libc::SYS_futex,
        libc::SYS_sched_yield,
        libc::SYS_getrandom,
        libc::SYS_clock_gettime,
        libc::SYS_rt_sigreturn,
        libc::SYS_rt_sigprocmask,
        libc::SYS_sigaltstack,
        libc::SYS_close,
        libc::SYS_exit,
        libc::SYS_exit_group,
        libc::SYS_getpid,
        libc::SYS_gettid,
        libc::SYS_rt_sigaction,
    ]
    .into_iter()
    .map(|call| (call, Vec::new()))
    .collect();
    let itself = SeccompCondition::new(
        0,
        SeccompCmpArgLen::Dword,
        SeccompCmpOp::Eq,
        u64::from(std::process::id()),
    )
    .map_err(|e| SeccompError(e.to_string()))?;
    rules.insert(
        libc::SYS_tgkill,
        vec![SeccompRule::new(vec![itself]).map_err(|e| SeccompError(e.to_string()))?],
    );
    compile(
        rules,
        SeccompAction::Errno(libc::EPERM.unsigned_abs()),
        SeccompAction::Allow,
    )
}

/// `rules` as a program for this machine: a call no rule matches gets
/// `otherwise`, one a rule matches gets `matched`.
fn compile(
    rules: BTreeMap<i64, Vec<SeccompRule>>,
    otherwise: SeccompAction,
    matched: SeccompAction,
) -> Result<BpfProgram, SeccompError> {
    let arch = TargetArch::try_from(std::env::consts::ARCH)
        .map_err(|e| SeccompError(format!("{}: {e}", std::env::consts::ARCH)))?;
    let filter = SeccompFilter::new(rules, otherwise, matched, arch)
        .map_err(|e| SeccompError(e.to_string()))?;
    filter
        .try_into()
        .map_err(|e: seccompiler::BackendError| SeccompError(e.to_string()))
}

/// The filter as the bytes bubblewrap reads from `--seccomp FD`: the
/// kernel's `struct sock_filter` array, native-endian.
pub fn bytes(program: &BpfProgram) -> Vec<u8> {
    let mut out = Vec::with_capacity(program.len() * 8);
    for f in program {
        out.extend_from_slice(&f.code.to_ne_bytes());
        out.push(f.jt);
        out.push(f.jf);
        out.extend_from_slice(&f.k.to_ne_bytes());
    }
    out
}

/// Install `program` on this process (and so on all it starts), with
/// `no_new_privs`: for a process about to run a command.
pub fn apply(program: &BpfProgram) -> Result<(), SeccompError> {
    seccompiler::apply_filter(program).map_err(|e| SeccompError(e.to_string()))
}

/// Make this process undumpable: a process of the same user (the
/// command the bridge starts) can then neither ptrace it nor read its
/// memory through `/proc`, so it cannot borrow the bridge's freedom from
/// the filter.
pub fn undumpable() -> Result<(), SeccompError> {
    // SAFETY: prctl with PR_SET_DUMPABLE and a constant argument.
    let r = unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0) };
    if r == 0 {
        Ok(())
    } else {
        Err(SeccompError(format!(
            "cannot make the bridge undumpable: {}",
            std::io::Error::last_os_error()
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn programs_compile_for_this_machine() {
        let strict = program(false).expect("filter");
        let open = program(true).expect("filter");
        assert!(
            strict.len() > open.len(),
            "the socket rule adds instructions"
        );
        assert_eq!(bytes(&strict).len(), strict.len() * 8);
    }

    /// Under the reader's filter a process runs nothing: `execve` fails.
    #[test]
    fn under_the_readers_filter_nothing_runs() {
        use std::os::unix::process::CommandExt;
        let filter = reader_program().expect("filter");
        let mut c = std::process::Command::new("/bin/true");
        // SAFETY: between fork and exec, only the filter's installation
        // (two system calls on a program made before the fork).
        unsafe {
            c.pre_exec(move || apply(&filter).map_err(|e| std::io::Error::other(e.to_string())));
        }
        let refused = c.status().expect_err("execve is refused");
        assert_eq!(refused.raw_os_error(), Some(libc::EPERM));
    }
}
