//! gemm-ladder: the harness every step of the ladder shares.
//!
//! A step registers its kernel files and launch (see [`registry`]); the harness compiles them with
//! NVRTC ([`nvrtc`]), runs them on inputs drawn from a printed seed ([`problem`], [`session`]), checks
//! each against the step before it and against cuBLAS ([`verify`], [`cublas`]), times them with CUDA
//! events ([`timing`]), and records what it measured for the book ([`results`], [`figure`], [`book`]).

pub mod arch;
pub mod book;
pub mod book_evidence;
pub mod book_include;
pub mod cli;
pub mod cublas;
pub mod encoding;
pub mod error;
pub mod evidence;
pub mod figure;
pub mod figure_banks;
pub mod figure_sweep;
pub mod gpu;
pub mod libs;
pub mod mx;
pub mod nvml;
pub mod nvrtc;
pub mod problem;
pub mod quoted;
pub mod registry;
pub mod report;
pub mod results;
pub mod session;
pub mod steps;
pub mod sweep;
pub mod timeline;
pub mod timing;
pub mod tma;
pub mod verify;

/// The revision of the code this binary was built from (`git describe --dirty`).
pub const GIT_REVISION: &str = env!("GEMM_LADDER_GIT_REVISION");
