//! Running a step: the registry of steps and their launches, the session that compiles, verifies and
//! times them, the size sweep, the printed report, the results file with each record's profile, and
//! the provenance of its records (which kernel source each was measured on). The command lines that
//! drive all this are [`crate::cli`], a layer above.

pub mod ceiling;
pub mod edit;
pub mod exercise;
pub mod loader;
pub mod persistent;
pub mod profile;
pub mod provenance;
pub mod registry;
pub mod report;
pub mod results;
pub mod ring;
pub mod session;
pub mod steps;
pub mod sweep;
pub mod timing;
