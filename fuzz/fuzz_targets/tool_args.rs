#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| roost_fuzz::tool_args::run(data));
