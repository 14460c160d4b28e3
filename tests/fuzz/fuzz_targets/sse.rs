#![no_main]
//! Fuzz target: see `entries::sse`.

#[path = "../entries.rs"]
mod entries;

libfuzzer_sys::fuzz_target!(|data: &[u8]| entries::sse(data));
