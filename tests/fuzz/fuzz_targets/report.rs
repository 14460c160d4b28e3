#![no_main]
//! Fuzz target: see `entries::report`.

#[path = "../entries.rs"]
mod entries;

libfuzzer_sys::fuzz_target!(|data: &[u8]| entries::report(data));
