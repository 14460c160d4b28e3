//! Baselines as code.
