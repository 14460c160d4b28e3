//! Running phases: closed loop, open loop, warmup, bounds, cancellation, progress.
