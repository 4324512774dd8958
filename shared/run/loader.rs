//! Compiling a kernel file with NVRTC and loading it into a CUDA context: for the session (a step's
//! kernel and its alternatives) and for a launch that picks, by shape, another compilation of its own
//! file (step 10's tile shapes), which it loads on first use and keeps.

use crate::device::arch::Arch;
use crate::device::nvrtc::{self, Output};
use crate::error::{Error, Result};
use crate::run::registry::KernelFile;
use cudarc::driver::sys::CUfunction_attribute_enum as FuncAttr;
use cudarc::driver::{CudaContext, CudaFunction, CudaModule, CudaStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// Compiles `file` for a device of compute capability `major.minor`, loads it into `ctx` and finds
/// its entry function, with the shared-memory limit and carveout its launch needs.
pub fn load_in(ctx: &Arc<CudaContext>, major: u32, minor: u32, file: &KernelFile) -> Result<(CudaFunction, Arch)> {
    load_module_in(ctx, major, minor, file).map(|(_, function, arch)| (function, arch))
}

/// [`load_in`], keeping the module too (for a caller that sets the kernel's globals).
pub fn load_module_in(
    ctx: &Arc<CudaContext>,
    major: u32,
    minor: u32,
    file: &KernelFile,
) -> Result<(Arc<CudaModule>, CudaFunction, Arch)> {
    let arch = file.targets.arch_for_device(major, minor);
    let compiled = nvrtc::compile(file, arch, Output::Cubin)?;
    if !compiled.log.is_empty() {
        eprintln!("{} ({arch}): NVRTC says:\n{}", file.path, compiled.log);
    }
    let module = ctx
        .load_module(cudarc::nvrtc::Ptx::from_binary(compiled.bytes))
        .map_err(Error::cuda(format!("loading {} for {arch}", file.path)))?;
    let function = module
        .load_function(file.entry)
        .map_err(Error::cuda(format!("finding {}", file.entry)))?;
    if file.max_dynamic_smem > 48 * 1024 {
        function
            .set_attribute(
                FuncAttr::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                file.max_dynamic_smem as i32,
            )
            .map_err(Error::cuda("raising the dynamic shared-memory limit"))?;
        // Ask for the largest shared-memory carveout (the rest of the 256 KiB is L1): the driver
        // otherwise may pick a smaller one that fits fewer blocks per SM than the kernel plans for.
        function
            .set_attribute(FuncAttr::CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, 100)
            .map_err(Error::cuda("asking for the shared-memory carveout"))?;
    }
    remember(&function, file);
    Ok((module, function, arch))
}

/// One load of a kernel file in this process: a number no other load gets, so that what is kept
/// about a loaded kernel (how many of its clusters fit, [`crate::run::persistent`]) can never be read
/// for another one. The driver's `CUfunction` handle cannot serve as such a key: once a session
/// unloads its modules, a later module may get the same handle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LoadId(u64);

/// What this process loaded: each live function's handle, its load and the file it was compiled from.
struct Origin {
    handle: usize,
    load: LoadId,
    file: KernelFile,
}
static ORIGINS: Mutex<Vec<Origin>> = Mutex::new(Vec::new());

/// Keeps what `function`, just loaded from `file`, is. An entry with the same handle belonged to a
/// module unloaded since (live functions have distinct handles), so it goes.
fn remember(function: &CudaFunction, file: &KernelFile) {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let handle = function.cu_function() as usize;
    let mut origins = ORIGINS.lock().unwrap_or_else(|e| e.into_inner());
    origins.retain(|o| o.handle != handle);
    origins.push(Origin {
        handle,
        load: LoadId(NEXT.fetch_add(1, Ordering::Relaxed)),
        file: *file,
    });
}

/// The file `function` was compiled from (text, defines, shared memory, launch), if it was loaded by
/// [`load_in`] (every kernel of the crate is).
pub fn file_of(function: &CudaFunction) -> Option<KernelFile> {
    let handle = function.cu_function() as usize;
    ORIGINS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .find(|o| o.handle == handle)
        .map(|o| o.file)
}

/// Which load `function` is, if it was loaded by [`load_in`] (every kernel of the crate is).
pub fn load_of(function: &CudaFunction) -> Option<LoadId> {
    let handle = function.cu_function() as usize;
    ORIGINS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .find(|o| o.handle == handle)
        .map(|o| o.load)
}

/// For each load whose latest launch ran another compilation (an sm80 twin's deeper ring, step 10's
/// tile for the shape), that compilation.
static RAN: Mutex<Vec<(LoadId, CudaFunction)>> = Mutex::new(Vec::new());

/// Notes that a launch of `function` ran `ran`, another compilation its launch chose for the GPU or
/// the shape (or `function` itself again). What a record made after the launches says of the kernel is
/// read from the latest one ([`ran`]).
pub fn note_ran(function: &CudaFunction, ran: &CudaFunction) {
    let Some(load) = load_of(function) else {
        return;
    };
    let mut all = RAN.lock().unwrap_or_else(|e| e.into_inner());
    all.retain(|(l, _)| *l != load);
    if ran.cu_function() != function.cu_function() {
        all.push((load, ran.clone()));
    }
}

/// The compilation the latest launch of `function` ran: the one it noted ([`note_ran`]), or `function`
/// itself. What a record says of a kernel (registers, shared memory, spills) is read from this.
pub fn ran(function: &CudaFunction) -> CudaFunction {
    let load = load_of(function);
    RAN.lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .find(|(l, _)| Some(*l) == load)
        .map_or_else(|| function.clone(), |(_, ran)| ran.clone())
}

/// Whether `function` was compiled (by [`load_in`]) from exactly `file`'s source and defines: a
/// launch that picks another compilation of its own file does so only for its own, not for a
/// student's edited copy or an instrumented build it is handed instead.
pub fn compiled_from(function: &CudaFunction, file: &KernelFile) -> bool {
    file_of(function).is_some_and(|o| same_text(o.source(), file.source()) && o.defines == file.defines)
}

/// Two kernel texts are the same: the same `&'static str` (the usual case, and cheap), or equal.
fn same_text(a: &str, b: &str) -> bool {
    std::ptr::eq(a, b) || a == b
}

/// `file`'s entry function in `stream`'s context: compiled and loaded on the first call, kept for the
/// next ones (a timing loop launches it thousands of times).
pub fn function_in(stream: &CudaStream, file: &KernelFile) -> Result<CudaFunction> {
    // A context, and the file by what is compiled: the same text with the same defines.
    static LOADED: Mutex<Vec<(usize, KernelFile, CudaFunction)>> = Mutex::new(Vec::new());
    let ctx = stream.context();
    let context = ctx.cu_ctx() as usize;
    let same = |f: &KernelFile| {
        f.path == file.path
            && f.entry == file.entry
            && f.defines == file.defines
            && same_text(f.source(), file.source())
    };
    if let Some((_, _, function)) = LOADED
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .find(|(c, f, _)| *c == context && same(f))
    {
        return Ok(function.clone());
    }
    let (major, minor) = ctx
        .compute_capability()
        .map_err(Error::cuda("asking the GPU's compute capability"))?;
    let (function, _) = load_in(ctx, major as u32, minor as u32, file)?;
    LOADED
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push((context, *file, function.clone()));
    Ok(function)
}
