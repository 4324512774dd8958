//! How deep the sm80 twins' rings are (steps 08–11). A twin's kernel is registered with the ring
//! every GPU of its family holds, within the 99 KiB of shared memory a block may have on RTX 30/40/50
//! and L4 parts; its launch takes a deeper compilation of the same file where the GPU lets a block
//! have more (an A100's 163 KiB, an H100's 227). How many stages fit is a property of the GPU, asked
//! of the driver, not of the kernel.

use crate::error::{Error, Result};
use crate::run::registry::KernelFile;
use cudarc::driver::{CudaFunction, CudaStream};

/// The shared memory a block of this GPU may opt in to, in bytes.
pub fn optin_smem(stream: &CudaStream) -> Result<u32> {
    use cudarc::driver::sys::CUdevice_attribute as Attr;
    stream
        .context()
        .attribute(Attr::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)
        .map(|bytes| bytes as u32)
        .map_err(Error::cuda("reading the shared memory a block may have"))
}

// ANCHOR: deeper
/// The deeper compilation `deep` (loaded on first use) when `func` is `shallow`'s own compilation and
/// the GPU lets a block have `deep`'s shared memory; `None`: launch `func` as it is (the GPU holds
/// only the shallow ring, or `func` is another text, such as an exercise's edited kernel).
pub fn deeper(
    func: &CudaFunction,
    stream: &CudaStream,
    shallow: &KernelFile,
    deep: &'static KernelFile,
) -> Result<Option<CudaFunction>> {
    if !crate::run::loader::compiled_from(func, shallow) || optin_smem(stream)? < deep.max_dynamic_smem {
        return Ok(None);
    }
    crate::run::loader::function_in(stream, deep).map(Some)
}
// ANCHOR_END: deeper
