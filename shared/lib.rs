//! gemm-ladder: the harness every step of the ladder shares, in six rooms.
//!
//! - [`run`]: running a step. Each step registers its kernel files and launch ([`run::registry`],
//!   [`run::steps`]); a session ([`run::session`]) compiles, verifies and times them ([`run::timing`]:
//!   the step and cuBLAS alternately), the command line ([`run::cli`]), the size sweep, the printed
//!   report, and the results file the book is built from ([`run::results`]).
//! - [`check`]: the problem and its verification: seeded inputs ([`check::problem`]), MXFP8
//!   quantization ([`check::mx`]), comparisons with stated bounds ([`check::verify`]).
//! - [`device`]: the GPU and its libraries: discovery ([`device::gpu`], [`device::libs`]), NVRTC
//!   ([`device::nvrtc`]), cuBLAS, NVML clocks, architectures.
//! - [`encoding`]: the bit-fields kernels are handed: wgmma and tcgen05 descriptors, swizzles, TMEM
//!   addresses, and TMA tensor maps ([`encoding::tma`]).
//! - [`evidence`]: what explains a step's time: Nsight Compute counters and in-kernel timelines.
//! - [`book`]: the mdBook: directives that turn results into tables, and the figures.
//!
//! The CUDA headers every kernel may include are in `shared/cuda/`.

pub mod book;
pub mod check;
pub mod device;
pub mod encoding;
pub mod error;
pub mod evidence;
pub mod run;
pub mod shape;

/// The revision of the code this binary was built from (`git describe --dirty`).
pub const GIT_REVISION: &str = env!("GEMM_LADDER_GIT_REVISION");

/// What `--version` prints: the crate's version and the revision the binary was built from.
pub const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (", env!("GEMM_LADDER_GIT_REVISION"), ")");
