//! Finding the CUDA libraries before cudarc touches them.
//!
//! cudarc loads libcuda, libnvrtc and libcublas on first use and panics when one is missing, so every
//! entry point asks here first and turns absence into one clear line. When the system loader cannot
//! find NVRTC or cuBLAS by name, we look in the usual places (a CUDA toolkit, or the `nvidia-*` pip
//! wheels) and load the file by full path: a library already loaded answers later look-ups by its
//! soname, so cudarc then finds it without LD_LIBRARY_PATH.

use crate::error::{Error, Result};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// Whether the NVIDIA driver library can be loaded.
pub fn driver_present() -> bool {
    // SAFETY: only tries to dlopen the library by name.
    unsafe { cudarc::driver::sys::is_culib_present() }
}

pub fn require_driver() -> Result<()> {
    if driver_present() {
        Ok(())
    } else {
        Err(Error::NoDriver)
    }
}

/// Whether NVRTC can be loaded (after looking in the known install places).
pub fn nvrtc_present() -> bool {
    static FOUND: OnceLock<bool> = OnceLock::new();
    *FOUND.get_or_init(|| {
        // SAFETY: only tries to dlopen the library by name.
        let by_name = || unsafe { cudarc::nvrtc::sys::is_culib_present() };
        by_name() || (preload("libnvrtc.so") && by_name())
    })
}

pub fn require_nvrtc() -> Result<()> {
    if nvrtc_present() {
        Ok(())
    } else {
        Err(Error::NoNvrtc)
    }
}

/// Whether cuBLAS can be loaded (after looking in the known install places).
pub fn cublas_present() -> bool {
    static FOUND: OnceLock<bool> = OnceLock::new();
    *FOUND.get_or_init(|| {
        // SAFETY: only tries to dlopen the library by name.
        let by_name = || unsafe { cudarc::cublas::sys::is_culib_present() };
        by_name() || (preload("libcublasLt.so") && preload("libcublas.so") && by_name())
    })
}

pub fn require_cublas() -> Result<()> {
    if cublas_present() {
        Ok(())
    } else {
        Err(Error::NoCublas)
    }
}

/// Folders that may hold CUDA's shared libraries, most specific first.
fn library_dirs() -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    for var in ["CUDA_HOME", "CUDA_PATH"] {
        if let Some(root) = std::env::var_os(var) {
            dirs.push(Path::new(&root).join("lib64"));
            dirs.push(Path::new(&root).join("lib"));
        }
    }
    for root in python_nvidia_roots() {
        // CUDA 13 wheels put every library in nvidia/cu13/lib; CUDA 12 wheels one folder each.
        dirs.push(root.join("cu13").join("lib"));
        for sub in ["cuda_nvrtc", "cublas"] {
            dirs.push(root.join(sub).join("lib"));
        }
    }
    dirs.push(PathBuf::from("/usr/local/cuda/lib64"));
    dirs
}

/// Folders that may hold CUDA's command-line tools (`ptxas`, `cuobjdump`, `nvdisasm`).
pub fn tool_dirs() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default();
    for var in ["CUDA_HOME", "CUDA_PATH"] {
        if let Some(root) = std::env::var_os(var) {
            dirs.push(Path::new(&root).join("bin"));
        }
    }
    for root in python_nvidia_roots() {
        dirs.push(root.join("cu13").join("bin"));
        dirs.push(root.join("cuda_nvcc").join("bin"));
    }
    dirs.push(PathBuf::from("/usr/local/cuda/bin"));
    dirs
}

/// The full path of a CUDA tool, if one is installed anywhere we know to look.
pub fn find_tool(name: &str) -> Option<PathBuf> {
    tool_dirs().into_iter().map(|d| d.join(name)).find(|p| p.is_file())
}

/// The `nvidia` namespace folders of the Python packages (`pip install nvidia-cuda-nvrtc`).
fn python_nvidia_roots() -> &'static [PathBuf] {
    static ROOTS: OnceLock<Vec<PathBuf>> = OnceLock::new();
    ROOTS.get_or_init(|| {
        let script = "import nvidia, os; print(os.pathsep.join(nvidia.__path__))";
        for python in ["python3", "python"] {
            if let Ok(out) = Command::new(python).args(["-c", script]).output() {
                if out.status.success() {
                    let text = String::from_utf8_lossy(&out.stdout);
                    return std::env::split_paths(text.trim()).collect();
                }
            }
        }
        Vec::new()
    })
}

/// Loads the newest `stem.*` library found in the known folders and keeps it loaded for the process.
fn preload(stem: &str) -> bool {
    for dir in library_dirs() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        let mut candidates: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n == stem || n.starts_with(&format!("{stem}.")))
            })
            .collect();
        candidates.sort();
        for path in candidates.iter().rev() {
            // SAFETY: loading a CUDA library runs its initialisers, as cudarc itself would.
            if let Ok(lib) = unsafe { libloading::Library::new(path) } {
                // Kept for the life of the process, so later look-ups by soname find it.
                std::mem::forget(lib);
                return true;
            }
        }
    }
    false
}
