//! How deep the sm80 twins' rings are (steps 08–11). A twin's kernel is registered with the ring
//! every GPU of its family holds, within the 99 KiB of shared memory a block may have on RTX 30/40/50
//! and L4 parts; its launch takes a deeper compilation of the same file where the GPU lets a block
//! have more (an A100's 163 KiB, an H100's 227). How many stages fit is a property of the GPU, asked
//! of the driver, not of the kernel. The deeper compilation is of whatever text the launch was handed
//! (the step's file, or an exercise's edit of it), and a record reads what it says of the kernel from
//! the compilation that ran ([`loader::ran`]).

use crate::error::{Error, Result};
use crate::run::loader;
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
/// The deeper compilation of `func`'s text (loaded on first use) when `func` was compiled at
/// `shallow`'s defines and the GPU lets a block have `deep`'s shared memory: the text compiled at
/// `deep`'s defines, with its shared memory. The text is `func`'s own, so an exercise's edited kernel
/// runs at the depth the step's own kernel runs at. `None`: launch `func` as it is (the GPU holds only
/// the shallow ring, or `func` was built otherwise, such as an instrumented build).
pub fn deeper(
    func: &CudaFunction,
    stream: &CudaStream,
    shallow: &KernelFile,
    deep: &KernelFile,
) -> Result<Option<CudaFunction>> {
    let Some(compiled) = loader::file_of(func) else {
        return Ok(None);
    };
    if compiled.entry != shallow.entry
        || compiled.defines != shallow.defines
        || optin_smem(stream)? < deep.max_dynamic_smem
    {
        return Ok(None);
    }
    let deeper = KernelFile {
        defines: deep.defines,
        max_dynamic_smem: deep.max_dynamic_smem,
        launch: deep.launch,
        ..compiled
    };
    let function = loader::function_in(stream, &deeper)?;
    loader::note_ran(func, &function);
    Ok(Some(function))
}
// ANCHOR_END: deeper

/// The value of define `name` in the compilation `func` is (`STAGES`: the ring's depth), if it was
/// loaded by the crate's loader and has it. A launch sizes its shared memory by this, so that it holds
/// for whichever compilation it was handed or took.
pub fn define_of(func: &CudaFunction, name: &str) -> Option<u64> {
    loader::file_of(func).and_then(|file| file.define(name))
}
