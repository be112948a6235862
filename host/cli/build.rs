//! How the `roost` binary is linked.
//!
//! Every `roost` command starts a 110 MB position-independent program
//! whose ~97,000 relative relocations the dynamic loader applies before
//! `main`: 2.3 MB of `.rela.dyn` entries read and applied, a sixth of the
//! CPU of a `roost tool list` (BENCHMARKS.md, P10). Packed relative
//! relocations (`DT_RELR`) carry the same addresses in 26 KB. The layout
//! (ASLR, RELRO, BIND_NOW) is unchanged. glibc applies them from 2.36 on,
//! and the linker then records that the binary needs `GLIBC_ABI_DT_RELR`,
//! so on an older C library it refuses to start with the loader's message
//! instead of running unrelocated; a build against an older glibc, or for
//! another target, links as before.

use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let var = |k: &str| std::env::var(k).unwrap_or_default();
    let native = var("TARGET") == var("HOST");
    let linux_gnu = var("CARGO_CFG_TARGET_OS") == "linux" && var("CARGO_CFG_TARGET_ENV") == "gnu";
    if native && linux_gnu && glibc_at_least((2, 36)) {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
}

/// Whether the build machine's glibc (the one the binary links against
/// when building for this machine) is at least `want`.
fn glibc_at_least(want: (u32, u32)) -> bool {
    let Ok(out) = Command::new("getconf").arg("GNU_LIBC_VERSION").output() else {
        return false;
    };
    // "glibc 2.36"
    let text = String::from_utf8_lossy(&out.stdout);
    let Some(version) = text.trim().strip_prefix("glibc ") else {
        return false;
    };
    let mut parts = version.split('.').map(|p| p.parse::<u32>().ok());
    match (parts.next().flatten(), parts.next().flatten()) {
        (Some(major), Some(minor)) => (major, minor) >= want,
        _ => false,
    }
}
