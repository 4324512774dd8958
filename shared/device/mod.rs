//! The GPU and its libraries: finding the driver, NVRTC and cuBLAS, the device's facts, compiling
//! kernels, cuBLAS and cuBLASLt, NVML clocks, and the architectures kernels are built for.
//!
//! # Layers, bottom to top
//!
//! Each file uses only the files listed before it (`tests/layers.rs`):
//!
//! 1. [`arch`]: the architectures kernels are built for.
//! 2. [`libs`]: finding the CUDA libraries (and tools) before cudarc touches them.
//! 3. [`nvml`]: NVML clocks and power.
//! 4. [`sources`]: the kernels' and headers' text (from the source tree, else embedded).
//! 5. [`nvrtc`]: compiling kernels.
//! 6. [`cublas`]: cuBLAS and cuBLASLt.
//! 7. [`gpu`]: the device and its facts.

pub mod arch;
pub mod cublas;
pub mod gpu;
pub mod libs;
pub mod nvml;
pub mod nvrtc;
pub mod sources;
