#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| roost_fuzz::registry::run(data));
