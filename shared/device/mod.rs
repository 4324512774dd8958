//! The GPU and its libraries: finding the driver, NVRTC and cuBLAS, the device's facts, compiling
//! kernels, cuBLAS and cuBLASLt, NVML clocks, and the architectures kernels are built for.

pub mod arch;
pub mod cublas;
pub mod gpu;
pub mod libs;
pub mod nvml;
pub mod nvrtc;
pub mod sources;
