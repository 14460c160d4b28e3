use super::*;

#[test]
fn shard_seeds_are_distinct_and_stable() {
    let seeds: Vec<u64> = (0..16)
        .map(|i| ShardSpec::new(i, 16).unwrap().mix_seed(42))
        .collect();
    let mut unique = seeds.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(unique.len(), seeds.len());
    assert_eq!(ShardSpec::new(3, 16).unwrap().mix_seed(42), seeds[3]);
    // The same index of a different split is a different stream.
    assert_ne!(
        ShardSpec::new(0, 2).unwrap().mix_seed(42),
        ShardSpec::new(0, 3).unwrap().mix_seed(42)
    );
}
