//! Prefix cache: chained block hashes over prompt token ids, capacity in tokens, LRU eviction.

use std::collections::{BTreeMap, HashMap};

use super::rng::mix64;

/// Chained hashes of the prompt's full blocks: block i's hash covers blocks 0..=i. The
/// request's `cache_salt`, when it has one, seeds the chain (as in vLLM), so prompts with
/// different salts share no block.
pub(crate) fn block_hashes(ids: &[u32], block_tokens: u32, salt: Option<&str>) -> Vec<u64> {
    let block = block_tokens.max(1) as usize;
    let root = salt.map_or(0x5eed_u64, |s| {
        mix64(0x5eed_u64 ^ crate::hash::fnv1a_64(s.as_bytes()))
    });
    ids.chunks_exact(block)
        .scan(root, |parent, chunk| {
            let mut hash = mix64(*parent);
            for id in chunk {
                hash = mix64(hash ^ u64::from(*id));
            }
            *parent = hash;
            Some(hash)
        })
        .collect()
}

#[derive(Debug)]
pub(crate) struct PrefixCache {
    block_tokens: u64,
    capacity_blocks: usize,
    /// block hash → last-use tick
    blocks: HashMap<u64, u64>,
    /// last-use tick → block hash, oldest first
    lru: BTreeMap<u64, u64>,
    tick: u64,
    pub evicted_blocks: u64,
}

impl PrefixCache {
    pub fn new(capacity_tokens: u64, block_tokens: u32) -> Self {
        let block_tokens = u64::from(block_tokens.max(1));
        PrefixCache {
            block_tokens,
            capacity_blocks: usize::try_from(capacity_tokens / block_tokens).unwrap_or(usize::MAX),
            blocks: HashMap::new(),
            lru: BTreeMap::new(),
            tick: 0,
            evicted_blocks: 0,
        }
    }

    /// Look up a prompt's blocks, then make them all resident; returns the cached tokens.
    /// Like vLLM, the last prompt token is always computed, so at most `prompt_tokens - 1`
    /// (rounded down to whole blocks) count as cached.
    pub fn admit(&mut self, hashes: &[u64], prompt_tokens: u64) -> u64 {
        let hit_blocks = hashes
            .iter()
            .take_while(|hash| self.blocks.contains_key(hash))
            .count() as u64;
        let max_cached_blocks = prompt_tokens.saturating_sub(1) / self.block_tokens;
        let cached_tokens = hit_blocks.min(max_cached_blocks) * self.block_tokens;
        if self.capacity_blocks == 0 {
            return cached_tokens;
        }
        // Touch the tail first so that, under pressure, a prompt's tail goes before its head
        // (a chained tail block is useless without its head).
        for hash in hashes.iter().rev() {
            self.tick += 1;
            if let Some(old_tick) = self.blocks.insert(*hash, self.tick) {
                self.lru.remove(&old_tick);
            }
            self.lru.insert(self.tick, *hash);
            while self.blocks.len() > self.capacity_blocks {
                let Some((_, victim)) = self.lru.pop_first() else {
                    break;
                };
                self.blocks.remove(&victim);
                self.evicted_blocks += 1;
            }
        }
        cached_tokens
    }

    /// Drop every resident block (the engines' reset/flush endpoints); returns how many.
    pub fn clear(&mut self) -> usize {
        let dropped = self.blocks.len();
        self.blocks.clear();
        self.lru.clear();
        dropped
    }

    #[cfg(test)]
    pub fn resident_blocks(&self) -> usize {
        self.blocks.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chained_hashes_depend_on_prefix() {
        let a = block_hashes(&[1, 2, 3, 4, 5], 2, None);
        let b = block_hashes(&[9, 2, 3, 4], 2, None);
        assert_eq!(a.len(), 2);
        assert_ne!(a[1], b[1], "same block, different prefix");
    }

    #[test]
    fn hits_then_evicts_lru() {
        let mut cache = PrefixCache::new(64, 16);
        let p1: Vec<u32> = (0..40).collect();
        let h1 = block_hashes(&p1, 16, None);
        assert_eq!(cache.admit(&h1, 40), 0);
        assert_eq!(cache.admit(&h1, 40), 32);
        // A prompt of exactly 32 tokens: the last token is recomputed, so one block counts.
        assert_eq!(cache.admit(&h1, 32), 16);
        let p2: Vec<u32> = (100..164).collect();
        let h2 = block_hashes(&p2, 16, None);
        assert_eq!(cache.admit(&h2, 64), 0);
        assert_eq!(cache.resident_blocks(), 4);
        assert_eq!(cache.evicted_blocks, 2);
        assert_eq!(cache.admit(&h1, 40), 0, "evicted by the larger working set");
    }

    #[test]
    fn a_cache_salt_keeps_equal_prompts_apart() {
        let mut cache = PrefixCache::new(1024, 16);
        let ids: Vec<u32> = (0..40).collect();
        let salted = |salt| block_hashes(&ids, 16, salt);
        assert_eq!(cache.admit(&salted(Some("run-a")), 40), 0);
        assert_eq!(
            cache.admit(&salted(Some("run-a")), 40),
            32,
            "one salt shares"
        );
        assert_eq!(
            cache.admit(&salted(Some("run-b")), 40),
            0,
            "another salt does not"
        );
        assert_eq!(cache.admit(&salted(None), 40), 0, "nor does no salt");
    }

    #[test]
    fn clear_forgets_every_block() {
        let mut cache = PrefixCache::new(1024, 16);
        let h = block_hashes(&(0..40).collect::<Vec<u32>>(), 16, None);
        cache.admit(&h, 40);
        assert_eq!(cache.clear(), 2);
        assert_eq!(cache.admit(&h, 40), 0, "cold after a clear");
    }
}
