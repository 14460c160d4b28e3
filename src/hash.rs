//! Stable hashes and seeded streams: FNV-1a and SplitMix64, identical on every platform and release.
//!
//! Reports and simulator outputs depend on these bits (phase seeds, shard seeds, bootstrap
//! seeds, simulated token ids and text), so std's randomly keyed hasher is never used for them.
//! Request ids sent as UUIDs derive from a two-lane FNV-1a of the readable id, so reruns send
//! the same.

const FNV_OFFSET_BASIS: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// SplitMix64's increment (the golden ratio in 64 bits).
pub const GOLDEN_GAMMA: u64 = 0x9e37_79b9_7f4a_7c15;

/// 64-bit FNV-1a of `bytes`.
pub fn fnv1a_64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(FNV_OFFSET_BASIS, |hash, byte| {
        (hash ^ u64::from(*byte)).wrapping_mul(FNV_PRIME)
    })
}

/// SplitMix64's finaliser (Stafford's mix 13): spreads the bits of `z` over all 64.
pub fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The first output of a SplitMix64 stream started at `state`: spreads small inputs
/// (indices, counts) over all 64 bits.
pub fn splitmix64(state: u64) -> u64 {
    mix64(state.wrapping_add(GOLDEN_GAMMA))
}

/// A shard's own seed from the run's: shard `index` of `count` draws arrivals and prompts
/// independent of every other shard's (and of the same index in a different split).
pub fn mix_seed(seed: u64, index: u32, count: u32) -> u64 {
    seed ^ splitmix64((u64::from(count) << 32) | u64::from(index))
}

/// A SplitMix64 stream: each step adds [`GOLDEN_GAMMA`] to the state and mixes it.
#[derive(Debug, Clone)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    pub fn new(state: u64) -> Self {
        SplitMix64(state)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(GOLDEN_GAMMA);
        mix64(self.0)
    }

    /// Uniform in [0, 1), from the top 53 bits.
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
}

/// A UUID for `readable`, the same on every run: version-4 layout (the form strict validators
/// accept) with its 122 free bits taken from [`IdHash`] of the readable id.
pub fn uuid_for(readable: &str) -> String {
    IdHash::new().update(readable.as_bytes()).uuid()
}

/// 128 bits of a stable hash for request ids: FNV-1a in two 64-bit lanes from different offset
/// bases, each finished with [`mix64`]. It is streamed, so a client hashes its id prefix once
/// and each request's UUID costs only its index's digits (a SHA-256 per request cost more
/// than the rest of building the request). Ids need no cryptographic strength, only stability
/// and no collisions in practice: two lanes keep that to ~2^-128 per pair, where one 64-bit
/// lane would give a few percent over a billion requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IdHash {
    lanes: [u64; 2],
}

impl Default for IdHash {
    fn default() -> Self {
        IdHash::new()
    }
}

impl IdHash {
    pub const fn new() -> Self {
        IdHash {
            lanes: [FNV_OFFSET_BASIS, FNV_OFFSET_BASIS ^ GOLDEN_GAMMA],
        }
    }

    /// The hash of what came before followed by `bytes`.
    #[must_use]
    pub fn update(self, bytes: &[u8]) -> Self {
        let [mut a, mut b] = self.lanes;
        for &byte in bytes {
            a = (a ^ u64::from(byte)).wrapping_mul(FNV_PRIME);
            b = (b ^ u64::from(byte)).wrapping_mul(FNV_PRIME);
        }
        IdHash { lanes: [a, b] }
    }

    /// The two lanes as they stand (mixed by the caller).
    pub fn lanes(self) -> [u64; 2] {
        self.lanes
    }

    /// The hash as a version-4 UUID, lower-case, 8-4-4-4-12.
    pub fn uuid(self) -> String {
        let [a, b] = self.lanes.map(mix64);
        let mut bytes = [0u8; 16];
        bytes[..8].copy_from_slice(&a.to_be_bytes());
        bytes[8..].copy_from_slice(&b.to_be_bytes());
        bytes[6] = (bytes[6] & 0x0f) | 0x40;
        bytes[8] = (bytes[8] & 0x3f) | 0x80;
        // Written in place: this runs once per request, and five slices through `format!` (or
        // a `char` pushed at a time) cost more than the hash.
        let mut text = [b'-'; 36];
        let mut at = 0;
        for (i, byte) in bytes.iter().enumerate() {
            if matches!(i, 4 | 6 | 8 | 10) {
                at += 1;
            }
            text[at..at + 2].copy_from_slice(&HEX_PAIRS[usize::from(*byte)]);
            at += 2;
        }
        std::str::from_utf8(&text)
            .expect("hex digits and dashes")
            .to_string()
    }
}

/// Write `value` as 16 lower-case hex digits into `out[..16]`, as `format!("{value:016x}")`
/// would without its formatting machinery (which costs more per request than the hash).
pub fn write_hex_u64(out: &mut [u8], value: u64) {
    for (pair, byte) in out[..16].chunks_exact_mut(2).zip(value.to_be_bytes()) {
        pair.copy_from_slice(&HEX_PAIRS[usize::from(byte)]);
    }
}

/// Each byte's two lower-case hex digits.
const HEX_PAIRS: [[u8; 2]; 256] = {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut pairs = [[0u8; 2]; 256];
    let mut byte = 0;
    while byte < 256 {
        pairs[byte] = [HEX[byte >> 4], HEX[byte & 0x0f]];
        byte += 1;
    }
    pairs
};

/// Whether `value` is a UUID in its canonical 8-4-4-4-12 hex form (any version).
pub fn is_uuid(value: &str) -> bool {
    let bytes = value.as_bytes();
    bytes.len() == 36
        && bytes.iter().enumerate().all(|(i, b)| match i {
            8 | 13 | 18 | 23 => *b == b'-',
            _ => b.is_ascii_hexdigit(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuid_for_is_the_version_4_form_of_the_two_lane_hash() {
        // Computed apart (Python, from the definition: two FNV-1a-64 lanes, mix64, big-endian,
        // version and variant bits set).
        assert_eq!(uuid_for("run-1-42"), "505b07a8-3962-43f5-8ffc-f0b7ed82f144");
        assert_eq!(uuid_for(""), "f52a15e9-a9b5-489b-a9d3-27596b869820");
        assert!(is_uuid(&uuid_for("")));
    }

    #[test]
    fn id_hash_streams_across_a_prefix() {
        let prefix = IdHash::new().update(b"sb-0000abcd-");
        assert_eq!(prefix.update(b"7").uuid(), uuid_for("sb-0000abcd-7"));
        assert_eq!(
            uuid_for("sb-0000abcd-7"),
            "3263aaa6-c758-4335-b635-279a5a0547c6"
        );
        assert_ne!(prefix.update(b"8").uuid(), prefix.update(b"7").uuid());
    }

    #[test]
    fn shard_seeds_are_distinct_and_stable() {
        let seeds: Vec<u64> = (0..16).map(|i| mix_seed(42, i, 16)).collect();
        let mut unique = seeds.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), seeds.len());
        assert_eq!(mix_seed(42, 3, 16), seeds[3]);
        // The same index of a different split is a different stream.
        assert_ne!(mix_seed(42, 0, 2), mix_seed(42, 0, 3));
    }

    #[test]
    fn fnv1a_64_matches_published_vectors() {
        // From the FNV reference test suite (Noll's fnv test vectors).
        let vectors: [(&[u8], u64); 6] = [
            (b"", 0xcbf2_9ce4_8422_2325),
            (b"a", 0xaf63_dc4c_8601_ec8c),
            (b"foobar", 0x8594_4171_f739_67e8),
            (b"\0", 0xaf63_bd4c_8601_b7df),
            (b"foobar\0", 0x3453_1ca7_168b_8f38),
            (b"chongo was here", 0xa3de_85bd_4912_70ce),
        ];
        for (input, expected) in vectors {
            assert_eq!(fnv1a_64(input), expected, "{input:?}");
        }
    }

    #[test]
    fn splitmix64_matches_reference_stream() {
        // Vigna's splitmix64.c seeded with 1234567 (the vector rand_xoshiro tests against).
        let mut stream = SplitMix64::new(1_234_567);
        let expected = [
            6_457_827_717_110_365_317,
            3_203_168_211_198_807_973,
            9_817_491_932_198_370_423,
            4_593_380_528_125_082_431,
            16_408_922_859_458_223_821,
        ];
        for e in expected {
            assert_eq!(stream.next_u64(), e);
        }
        assert_eq!(splitmix64(1_234_567), expected[0]);
    }

    #[test]
    fn next_f64_is_in_unit_interval() {
        let mut stream = SplitMix64::new(0);
        for _ in 0..1000 {
            let x = stream.next_f64();
            assert!((0.0..1.0).contains(&x));
        }
    }
}
