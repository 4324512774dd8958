//! The exercises of step09 (epilogue_double_buffer); the harness gathers them in `shared/run/exercise.rs`.

#[allow(unused_imports)]
use crate::run::exercise::{Exercise, Kind, Prediction};

pub const EXERCISES: &[Exercise] = &[];
