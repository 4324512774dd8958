//! The problem every step solves and how its answer is checked: seeded inputs, MXFP8 quantization
//! and its reference, and comparisons with stated bounds.
//!
//! # Layers, bottom to top
//!
//! Each file uses only the files listed before it (`tests/layers.rs`):
//!
//! 1. [`problem`]: the problem every step solves and its seeded inputs.
//! 2. [`verify`]: comparisons with stated bounds.
//! 3. [`mx`]: MXFP8 quantization and its reference.

pub mod mx;
pub mod problem;
pub mod verify;
