//! Prompts generated ahead, off the threads that time requests, into a bounded queue.
//!
//! Prompt `i` is a pure function of the workload, the seed and `i`, so generator threads can
//! build them before they are needed. The first few are built when the queue starts (they
//! also measure the cost), so a window never starts by waiting; after those `k`, thread `t`
//! of `T` builds prompts `k + t, k + t + T, …` into a lane of its own, and the reader takes
//! lane `(i − k) mod T` for prompt `i`, so prompts come out in exactly the order a single
//! `PromptSource::next_prompt` loop gives. Cheap prompts travel
//! in batches, so the reader wakes a generator once per batch, not once per request. Lanes
//! are bounded (by the depth the load asks for and by a byte budget), so long phases and very
//! long prompts hold little memory; a generator blocks when its lane is full and ends when
//! the queue is dropped.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tokio::sync::mpsc;

use super::{Prompt, PromptInput, PromptSource};

/// Prompt bytes the lanes may hold together, whatever the depth asked for.
pub const BYTE_BUDGET: usize = 64 << 20;
/// Generator threads at most.
pub const MAX_THREADS: usize = 4;
/// Above this CPU cost per prompt, one thread per core generates.
const ONE_THREAD_COST: Duration = Duration::from_micros(200);
/// Prompts built (and timed) before the queue starts, to size it and estimate the cost.
const SAMPLE_PROMPTS: u64 = 4;
/// The sampling stops after this much CPU time, however few prompts it built.
const SAMPLE_BUDGET: Duration = Duration::from_millis(50);
/// About this much generator work goes into one batch.
const BATCH_WORK: Duration = Duration::from_micros(100);
/// Prompts in one batch at most.
const MAX_BATCH: usize = 64;
/// The longest [`PromptQueue::start`] waits for the lanes' first fill.
const PREFILL_WAIT: Duration = Duration::from_secs(1);

/// A phase's prompts, built ahead on threads of their own.
pub struct PromptQueue {
    source: Arc<PromptSource>,
    reader: tokio::sync::Mutex<Reader>,
    stats: Arc<Stats>,
    threads: usize,
    lane_depth: usize,
    batch: usize,
    sample_cost: Duration,
}

struct Reader {
    /// The sampled prompts, `0..head_len`: ready before any generator runs.
    head: std::vec::IntoIter<Prompt>,
    head_len: u64,
    lanes: Vec<Lane>,
    next: u64,
}

/// One generator's batches, and what is left of the batch being read.
struct Lane {
    batches: mpsc::Receiver<Vec<Prompt>>,
    current: std::vec::IntoIter<Prompt>,
}

#[derive(Default)]
struct Stats {
    built: AtomicU64,
    cpu_ns: AtomicU64,
    taken: AtomicU64,
    /// Takes that found the prompt not built yet.
    waits: AtomicU64,
    wait_ns: AtomicU64,
}

/// What the queue measured.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct QueueStats {
    /// Generator threads.
    pub threads: usize,
    /// Prompts each lane holds at most.
    pub lane_depth: usize,
    /// Prompts per batch.
    pub batch: usize,
    /// CPU seconds per prompt on a generator thread (the start-up sample until prompts flow).
    pub cpu_s_per_prompt: f64,
    pub built: u64,
    pub taken: u64,
    /// Takes that had to wait for their prompt, and how long they waited in all.
    pub waits: u64,
    pub wait_s: f64,
}

impl QueueStats {
    /// Prompts per second the generators sustain with the cores they have.
    pub fn prompts_per_s(&self) -> f64 {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        self.threads.min(cores) as f64 / self.cpu_s_per_prompt.max(1e-9)
    }
}

impl PromptQueue {
    /// Starts generating `source`'s prompts, about `depth` ahead of the reader; the thread
    /// count follows the measured cost of a prompt. Returns once the lanes are full (at most
    /// [`PREFILL_WAIT`]), so call it before the requests it feeds start.
    pub fn start(source: PromptSource, depth: usize) -> PromptQueue {
        Self::start_with(source, depth, None)
    }

    /// [`PromptQueue::start`] with a fixed number of generator threads.
    pub fn with_threads(source: PromptSource, depth: usize, threads: usize) -> PromptQueue {
        Self::start_with(source, depth, Some(threads.clamp(1, MAX_THREADS)))
    }

    fn start_with(source: PromptSource, depth: usize, threads: Option<usize>) -> PromptQueue {
        let source = Arc::new(source);
        let Sample {
            prompts: head,
            cost: sample_cost,
            bytes,
        } = sample(&source);
        let head_len = head.len() as u64;
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let threads = threads.unwrap_or(if sample_cost > ONE_THREAD_COST {
            cores.min(MAX_THREADS)
        } else {
            1
        });
        let by_bytes = (BYTE_BUDGET / bytes.max(1)).max(threads);
        let lane_depth = depth.clamp(1, by_bytes).div_ceil(threads).max(1);
        let per_batch = (BATCH_WORK.as_nanos() / sample_cost.as_nanos().max(1)) as usize;
        let batch = per_batch.clamp(1, MAX_BATCH).min(lane_depth);
        let stats = Arc::new(Stats::default());
        let mut lanes = Vec::with_capacity(threads);
        let (filled_tx, filled) = std::sync::mpsc::channel::<()>();
        for lane in 0..threads {
            let (tx, rx) = mpsc::channel(lane_depth.div_ceil(batch));
            lanes.push(Lane {
                batches: rx,
                current: Vec::new().into_iter(),
            });
            let source = source.clone();
            let stats = stats.clone();
            let filled = filled_tx.clone();
            let spawned = std::thread::Builder::new()
                .name(format!("prompts-{lane}"))
                .spawn(move || {
                    let lane = LanePlan {
                        first: head_len + lane as u64,
                        step: threads as u64,
                        batch,
                    };
                    generate(&source, &lane, &tx, &stats, filled)
                });
            // Without the thread the lane closes at once and the reader builds inline.
            drop(spawned);
        }
        // The lanes fill before the first window opens, so their first fill never competes
        // with the requests for the CPU; a slow source stops the wait after PREFILL_WAIT.
        drop(filled_tx);
        let deadline = Instant::now() + PREFILL_WAIT;
        for _ in 0..threads {
            let left = deadline.saturating_duration_since(Instant::now());
            if filled.recv_timeout(left).is_err() {
                break;
            }
        }
        PromptQueue {
            source,
            reader: tokio::sync::Mutex::new(Reader {
                head: head.into_iter(),
                head_len,
                lanes,
                next: 0,
            }),
            stats,
            threads,
            lane_depth,
            batch,
            sample_cost,
        }
    }

    /// The next prompt in the source's order. Waits (without blocking the thread) when the
    /// generators are behind.
    pub async fn next(&self) -> Prompt {
        let mut reader = self.reader.lock().await;
        let index = reader.next;
        reader.next += 1;
        self.stats.taken.fetch_add(1, Ordering::Relaxed);
        if index < reader.head_len
            && let Some(prompt) = reader.head.next()
        {
            return prompt;
        }
        let slot = (index.saturating_sub(reader.head_len) % reader.lanes.len() as u64) as usize;
        let lane = &mut reader.lanes[slot];
        if let Some(prompt) = lane.current.next() {
            return prompt;
        }
        let batch = match lane.batches.try_recv() {
            Ok(batch) => Some(batch),
            Err(mpsc::error::TryRecvError::Empty) => {
                let waited = Instant::now();
                let batch = lane.batches.recv().await;
                self.stats.waits.fetch_add(1, Ordering::Relaxed);
                self.stats
                    .wait_ns
                    .fetch_add(waited.elapsed().as_nanos() as u64, Ordering::Relaxed);
                batch
            }
            Err(mpsc::error::TryRecvError::Disconnected) => None,
        };
        if let Some(batch) = batch {
            lane.current = batch.into_iter();
            if let Some(prompt) = lane.current.next() {
                return prompt;
            }
        }
        // A generator that is gone (it could not start, or panicked) leaves its prompts to
        // the reader: slower, but the same prompts.
        self.source.prompt(index)
    }

    /// The source the prompts come from (its tokenizer description, tolerance, …).
    pub fn source(&self) -> &PromptSource {
        &self.source
    }

    pub fn stats(&self) -> QueueStats {
        let built = self.stats.built.load(Ordering::Relaxed);
        let cpu_ns = self.stats.cpu_ns.load(Ordering::Relaxed);
        // Until enough prompts flowed, the start-up sample is the better estimate.
        let cpu_s_per_prompt = if built >= SAMPLE_PROMPTS * 4 {
            cpu_ns as f64 / 1e9 / built as f64
        } else {
            self.sample_cost.as_secs_f64()
        };
        QueueStats {
            threads: self.threads,
            lane_depth: self.lane_depth,
            batch: self.batch,
            cpu_s_per_prompt,
            built,
            taken: self.stats.taken.load(Ordering::Relaxed),
            waits: self.stats.waits.load(Ordering::Relaxed),
            wait_s: self.stats.wait_ns.load(Ordering::Relaxed) as f64 / 1e9,
        }
    }
}

/// What the start-up sample measured; its prompts are the queue's first.
struct Sample {
    prompts: Vec<Prompt>,
    /// CPU time per prompt after the first (which fills caches).
    cost: Duration,
    /// The largest prompt's size in bytes.
    bytes: usize,
}

fn sample(source: &PromptSource) -> Sample {
    let first = source.prompt(0);
    let mut bytes = prompt_bytes(&first);
    let mut prompts = vec![first];
    let started = thread_cpu();
    for index in 1..=SAMPLE_PROMPTS {
        let prompt = source.prompt(index);
        bytes = bytes.max(prompt_bytes(&prompt));
        prompts.push(prompt);
        if thread_cpu().saturating_sub(started) > SAMPLE_BUDGET {
            break;
        }
    }
    let cost = thread_cpu().saturating_sub(started) / (prompts.len() as u32 - 1).max(1);
    Sample {
        prompts,
        cost,
        bytes,
    }
}

fn prompt_bytes(prompt: &Prompt) -> usize {
    match &prompt.input {
        PromptInput::Text(t) => t.len(),
        PromptInput::Messages(m) => m.iter().map(|m| m.content.len() + m.role.len()).sum(),
        PromptInput::Batch { query, texts } => {
            query.as_ref().map_or(0, String::len) + texts.iter().map(String::len).sum::<usize>()
        }
    }
}

/// Which prompts one generator builds: `first`, `first + step`, …, `batch` at a time.
struct LanePlan {
    first: u64,
    step: u64,
    batch: usize,
}

/// Builds `lane`'s prompts into `tx` until the queue is dropped; says once on `filled` when
/// the lane is first full.
fn generate(
    source: &PromptSource,
    lane: &LanePlan,
    tx: &mpsc::Sender<Vec<Prompt>>,
    stats: &Stats,
    filled: std::sync::mpsc::Sender<()>,
) {
    let mut filled = Some(filled);
    let mut index = lane.first;
    loop {
        let before = thread_cpu();
        let batch: Vec<Prompt> = (0..lane.batch)
            .map(|k| source.prompt(index + k as u64 * lane.step))
            .collect();
        index += lane.batch as u64 * lane.step;
        stats.cpu_ns.fetch_add(
            thread_cpu().saturating_sub(before).as_nanos() as u64,
            Ordering::Relaxed,
        );
        stats.built.fetch_add(lane.batch as u64, Ordering::Relaxed);
        // Blocks while the lane is full; fails once the queue is dropped.
        if tx.blocking_send(batch).is_err() {
            return;
        }
        if tx.capacity() == 0
            && let Some(filled) = filled.take()
        {
            let _ = filled.send(());
        }
    }
}

/// This thread's CPU time.
fn thread_cpu() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec; CLOCK_THREAD_CPUTIME_ID always exists on Linux.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return Duration::ZERO;
    }
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}
