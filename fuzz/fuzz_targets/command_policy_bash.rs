#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| roost_fuzz::command_policy_bash::run(data));
