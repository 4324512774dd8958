//! gemm-ladder: the harness every step of the ladder shares.
//!
//! # Layers, bottom to top
//!
//! Each module below uses only the modules listed before it, so the list reads top to bottom like the
//! code: `tests/layers.rs` reads this list and fails, naming the file and line, on any `crate::` path
//! from a module to one listed after it.
//!
//! 1. [`error`]: the one error type, and how a binary exits with it.
//! 2. [`shape`]: the GEMM's shape, M×N×K, and the contract every step accepts.
//! 3. [`device`]: the GPU and its libraries: discovery and the device's facts ([`device::gpu`],
//!    [`device::libs`]), NVRTC ([`device::nvrtc`]), cuBLAS, NVML clocks, architectures.
//! 4. [`check`]: the problem and its verification: seeded inputs ([`check::problem`]), MXFP8
//!    quantization ([`check::mx`]), comparisons with stated bounds ([`check::verify`]).
//! 5. [`encoding`]: the bit-fields kernels are handed: wgmma and tcgen05 descriptors, swizzles, TMEM
//!    addresses, and TMA tensor maps ([`encoding::tma`]).
//! 6. [`run`]: running a step. Each step registers its kernel files and launch ([`run::registry`],
//!    [`run::steps`]); a session ([`run::session`]) compiles, verifies and times them ([`run::timing`]:
//!    the step and cuBLAS alternately); the size sweep, the printed report, and the record of a run
//!    with its profile in the results file the book is built from ([`run::results`],
//!    [`run::profile`]).
//! 7. [`svg`]: what every figure shares: where figures live, how they are written, the style.
//! 8. [`evidence`]: what explains a step's time: Nsight Compute counters (`--profile`) and in-kernel
//!    timelines (`--timeline`), for which it runs steps through [`run`].
//! 9. [`book`]: the mdBook: directives that turn results into tables, and the figures.
//! 10. [`cli`]: the command lines of `stepNN` and `ladder`, standing on all of the above.
//!
//! The CUDA headers every kernel may include are in `shared/cuda/`.

pub mod book;
pub mod check;
pub mod cli;
pub mod device;
pub mod encoding;
pub mod error;
pub mod evidence;
pub mod run;
pub mod shape;
pub mod svg;

/// The commit this binary was built from (`git describe`), with `-dirty` when its Rust code differed
/// from it. The kernels are read at run time: [`revision`] is what a run records.
pub const GIT_REVISION: &str = env!("GEMM_LADDER_GIT_REVISION");

/// The revision a run names: [`GIT_REVISION`], with `-dirty` also when a kernel this binary runs
/// differs from that commit (an edited kernel in the source tree: [`device::sources`]).
pub fn revision() -> String {
    if GIT_REVISION.ends_with("-dirty") || device::sources::differing_from_commit().is_empty() {
        GIT_REVISION.to_string()
    } else {
        format!("{GIT_REVISION}-dirty")
    }
}

/// What `--version` prints: the crate's version and the revision the binary was built from.
pub const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (", env!("GEMM_LADDER_GIT_REVISION"), ")");
