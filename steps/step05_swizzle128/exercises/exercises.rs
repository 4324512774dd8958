//! The exercises of step05 (swizzle128); the harness gathers them in `shared/run/exercise.rs`.

#[allow(unused_imports)]
use crate::run::exercise::{Exercise, Kind, Prediction};

pub const EXERCISES: &[Exercise] = &[];
