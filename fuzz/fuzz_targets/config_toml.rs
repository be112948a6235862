#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| roost_fuzz::config_toml::run(data));
