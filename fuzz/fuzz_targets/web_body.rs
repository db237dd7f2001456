//! cargo-fuzz harness of `rrd_fuzz::web_body` (the body and what it checks
//! are there, shared with the stable `cargo test -p rrd-fuzz`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| rrd_fuzz::web_body::run(data));
