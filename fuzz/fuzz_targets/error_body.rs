#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| roost_fuzz::error_body::run(data));
