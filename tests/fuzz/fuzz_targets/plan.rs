#![no_main]
//! Fuzz target: see `entries::plan`.

#[path = "../entries.rs"]
mod entries;

libfuzzer_sys::fuzz_target!(|data: &[u8]| entries::plan(data));
