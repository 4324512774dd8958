//! The exercises of step11 (mxfp8); the harness gathers them in `shared/run/exercise.rs`.

#[allow(unused_imports)]
use crate::run::exercise::{Exercise, Kind, Prediction};

pub const EXERCISES: &[Exercise] = &[];
