//! The problem every step solves and how its answer is checked: seeded inputs, MXFP8 quantization
//! and its reference, and comparisons with stated bounds.

pub mod mx;
pub mod problem;
pub mod verify;
