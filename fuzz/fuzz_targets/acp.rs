#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| roost_fuzz::acp::run(data));
