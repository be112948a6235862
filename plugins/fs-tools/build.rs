//! A 128 KiB shadow stack instead of the toolchain's 1 MiB: the stack sits
//! at the bottom of linear memory, so a small one puts the data and the
//! first heap pages inside the part of memory the host keeps resident
//! between calls (no page faults, no madvise per call). An overflow still
//! traps: the stack grows down towards address 0.
fn main() {
    println!("cargo:rustc-link-arg-cdylib=-z");
    println!("cargo:rustc-link-arg-cdylib=stack-size=131072");
}
