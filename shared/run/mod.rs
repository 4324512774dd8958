//! Running a step: the registry of steps and their launches, the session that compiles, verifies and
//! times them, the size sweep, the printed report, the results file with each record's profile, and
//! the provenance of its records (which kernel source each was measured on). The command lines that
//! drive all this are [`crate::cli`], a layer above.
//!
//! # Layers, bottom to top
//!
//! Each file uses only the files listed before it (`tests/layers.rs`; a file's own unit tests may build
//! their fixtures with any file of the folder):
//!
//! 1. [`edit`]: checked edits of a kernel's text (the exercises' starters).
//! 2. [`rounds`]: the order of a loop's launches (no favoured slot) and the median of a contender's.
//! 3. [`workspace`]: the session's one global-memory workspace and each launch's view of it.
//! 4. [`registry`]: the step contract: steps, kernel files, formats and baselines, launches.
//! 5. [`loader`]: compiling and loading a kernel file, once per context.
//! 6. [`ring`]: how deep a `cp.async` ring the GPU holds (the sm80 twins' stages).
//! 7. [`persistent`]: the persistent kernels' launch builder and tensor-map cache.
//! 8. [`steps`]: every step's registration (`steps/stepNN_*/step.rs`).
//! 9. [`exercise`]: the exercises: metadata and one checked edit of a step's kernel each.
//! 10. [`profile`]: what a record keeps of what explains its time.
//! 11. [`results`]: the records and the results files.
//! 12. [`provenance`]: which kernel source a record ran, against the source shown now.
//! 13. [`timing`]: the alternating loop that times the step and its baselines.
//! 14. [`report`]: the printed report of a run.
//! 15. [`ceiling`]: the `mma.sync` ceiling the sm80 twins are read against.
//! 16. [`session`]: compiling, verifying and timing a step on the GPU.
//! 17. [`sweep`]: the size sweep.

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
pub mod rounds;
pub mod session;
pub mod steps;
pub mod sweep;
pub mod timing;
pub mod workspace;
