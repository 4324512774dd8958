//! Running a step: the registry of steps and their launches, the session that compiles, verifies and
//! times them, the command line, the size sweep, the printed report and the results file.

pub mod cli;
pub mod exercise;
pub mod registry;
pub mod report;
pub mod results;
pub mod session;
pub mod steps;
pub mod sweep;
pub mod timing;
