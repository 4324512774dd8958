//! Run-time compilation: NVRTC turns a kernel file into PTX or a cubin for one architecture.
//!
//! Kernel files include only this crate's headers (`shared/cuda/*.cuh`), which are handed to NVRTC by
//! name (read as [`sources`] reads kernels), so compilation needs no CUDA toolkit headers on the machine.

use crate::device::arch::Arch;
use crate::device::libs::{self, symbol_table, Described, Library, Loaded, Version};
use crate::device::sources;
use crate::error::{Error, Result};
use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// An NVRTC program handle.
type Program = *mut c_void;

/// `NVRTC_SUCCESS`.
const SUCCESS: c_int = 0;

symbol_table! {
    /// The NVRTC functions this crate calls. Their signatures are the same in NVRTC 12 and 13 (cudarc's
    /// bindings declare them once for every CUDA version); tests/cuda_libs.rs finds each in both.
    pub struct NvrtcApi {
        version = "nvrtcVersion": fn(*mut c_int, *mut c_int) -> c_int;
        error_string = "nvrtcGetErrorString": fn(c_int) -> *const c_char;
        create_program = "nvrtcCreateProgram": fn(
            *mut Program,
            *const c_char,
            *const c_char,
            c_int,
            *const *const c_char,
            *const *const c_char,
        ) -> c_int;
        compile_program = "nvrtcCompileProgram": fn(Program, c_int, *const *const c_char) -> c_int;
        program_log_size = "nvrtcGetProgramLogSize": fn(Program, *mut usize) -> c_int;
        program_log = "nvrtcGetProgramLog": fn(Program, *mut c_char) -> c_int;
        ptx_size = "nvrtcGetPTXSize": fn(Program, *mut usize) -> c_int;
        ptx = "nvrtcGetPTX": fn(Program, *mut c_char) -> c_int;
        cubin_size = "nvrtcGetCUBINSize": fn(Program, *mut usize) -> c_int;
        cubin = "nvrtcGetCUBIN": fn(Program, *mut c_char) -> c_int;
        destroy_program = "nvrtcDestroyProgram": fn(*mut Program) -> c_int;
    }
}

impl NvrtcApi {
    /// NVRTC's name for a status (`NVRTC_ERROR_COMPILATION`).
    fn status_name(&self, status: c_int) -> String {
        // SAFETY: returns a static string for any status.
        let text = unsafe { (self.error_string)(status) };
        if text.is_null() {
            return format!("status {status}");
        }
        // SAFETY: NUL-terminated, static.
        unsafe { CStr::from_ptr(text) }.to_string_lossy().into_owned()
    }
}

/// Whether NVRTC can be loaded (of a major this driver runs).
pub fn present() -> bool {
    api().is_ok()
}

/// NVRTC, loaded once for the process: of the CUDA major the driver runs (`device::libs`).
pub fn api() -> Result<&'static Loaded<NvrtcApi>> {
    static NVRTC: OnceLock<std::result::Result<Loaded<NvrtcApi>, libs::LoadFailure>> = OnceLock::new();
    NVRTC
        .get_or_init(|| {
            libs::load(
                Library::Nvrtc,
                &["nvrtc"],
                |files| NvrtcApi::resolve(files[0]),
                |api| {
                    let (mut major, mut minor) = (0, 0);
                    // SAFETY: two out-pointers to live integers.
                    unsafe { (api.version)(&mut major, &mut minor) };
                    let version = Version::new(major.max(0) as u32, minor.max(0) as u32);
                    Described {
                        version,
                        version_text: version.to_string(),
                        address: api.version as *const c_void,
                    }
                },
            )
        })
        .as_ref()
        .map_err(|failure| failure.to_error())
}

/// Every header a kernel may `#include`, by the name it uses (its text: [`header`]).
pub const HEADERS: &[&str] = &[
    "common.cuh",
    "mbarrier.cuh",
    "tma.cuh",
    "wgmma.cuh",
    "stmatrix.cuh",
    "cp_async.cuh",
    "mma_sm80.cuh",
    "smem_sm80.cuh",
    "mbarrier_sm80.cuh",
    "tcgen05.cuh",
    "mbarrier_sm100.cuh",
    "cluster.cuh",
    "warpgroup.cuh",
    "mx.cuh",
    "epilogue.cuh",
    "timeline.cuh",
    "flag.cuh",
    "schedule.cuh",
];

/// The text of the crate header `name` (`common.cuh`), as [`sources::text`] reads it.
pub fn header(name: &str) -> &'static str {
    sources::text(&format!("shared/cuda/{name}"))
}

/// What NVRTC needs of a kernel file: the path its messages name, its text, and the compile-time
/// constants passed as `-DNAME=value`. The step registry's `KernelFile` is one; the compiler asks for
/// nothing more, so it does not depend on how steps are registered and launched.
pub trait KernelSource {
    fn path(&self) -> &str;
    fn source(&self) -> &str;
    fn defines(&self) -> &[(&'static str, u64)];
}

/// What to ask NVRTC for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Output {
    /// PTX for the virtual architecture (`compute_90a`): readable, and what `--emit ptx` prints.
    Ptx,
    /// Machine code for the real architecture (`sm_90a`): what the driver loads.
    Cubin,
}

/// The result of one compilation.
#[derive(Clone)]
pub struct Compiled {
    pub arch: Arch,
    /// PTX text, or cubin bytes.
    pub bytes: Vec<u8>,
    /// NVRTC's warnings (empty when clean), with `file:line:` locations.
    pub log: String,
}

/// NVRTC's version, `(major, minor)`.
pub fn version() -> Result<(i32, i32)> {
    let version = api()?.version;
    Ok((version.major as i32, version.minor as i32))
}

/// The `-D` options, in the order the step lists them. Small values stay plain decimals (so `BM` is an
/// ordinary `int` in the kernel); 64-bit encodings are written as unsigned hex.
fn define_options(kernel: &impl KernelSource) -> Vec<String> {
    let mut options: Vec<String> = kernel
        .defines()
        .iter()
        .map(|(name, value)| match *value {
            v if v <= i32::MAX as u64 => format!("-D{name}={v}"),
            v => format!("-D{name}={v:#x}ULL"),
        })
        .collect();
    options.extend(experiment_defines().into_iter().map(|d| format!("-D{d}")));
    options
}

/// The environment variable of development experiments: `NAME=VALUE,NAME=VALUE` adds defines to (or,
/// coming last, overrides those of) every kernel this process compiles. A run with it set records
/// nothing (`run::session`), so no experiment's number reaches the book as the step's.
pub const EXPERIMENT_ENV: &str = "GEMM_LADDER_EXPERIMENT_DEFINES";

/// The defines [`EXPERIMENT_ENV`] asks for (empty when it is unset).
pub fn experiment_defines() -> Vec<String> {
    std::env::var(EXPERIMENT_ENV)
        .map(|v| {
            v.split(',')
                .map(str::trim)
                .filter(|d| !d.is_empty())
                .map(String::from)
                .collect()
        })
        .unwrap_or_default()
}

/// Compiles one kernel file for `arch`.
pub fn compile(kernel: &impl KernelSource, arch: Arch, output: Output) -> Result<Compiled> {
    api()?;
    sources::note_if_edited(kernel.path());
    let target = match output {
        Output::Ptx => arch.compute(),
        Output::Cubin => arch.sm(),
    };
    let mut options = vec![
        format!("--gpu-architecture={target}"),
        "-std=c++17".to_string(),
        "-lineinfo".to_string(),
    ];
    options.extend(define_options(kernel));
    // A sweep opens a session per shape and loads the same files again: each text and set of options
    // is compiled once per process (the headers are compiled in, so the text and options are the key).
    type Key = (String, String, Vec<String>);
    static COMPILED: std::sync::Mutex<Vec<(Key, Compiled)>> = std::sync::Mutex::new(Vec::new());
    let key: Key = (kernel.path().to_string(), kernel.source().to_string(), options.clone());
    if let Some((_, known)) = COMPILED
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .find(|(k, _)| *k == key)
    {
        return Ok(known.clone());
    }
    let compiled = compile_uncached(kernel, arch, output, &target, &options)?;
    COMPILED
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push((key, compiled.clone()));
    Ok(compiled)
}

fn compile_uncached(
    kernel: &impl KernelSource,
    arch: Arch,
    output: Output,
    target: &str,
    options: &[String],
) -> Result<Compiled> {
    let nvrtc = &api()?.api;
    let fail = |what: &str, code: c_int| Error::Other(format!("NVRTC {what}: {}", nvrtc.status_name(code)));
    let source = CString::new(kernel.source()).map_err(|_| Error::Other("NUL in kernel source".into()))?;
    let name = CString::new(kernel.path()).map_err(|_| Error::Other("NUL in kernel path".into()))?;
    let header_sources: Vec<CString> = HEADERS
        .iter()
        .map(|name| CString::new(header(name)).expect("header text has no NUL"))
        .collect();
    let header_names: Vec<CString> = HEADERS
        .iter()
        .map(|name| CString::new(*name).expect("header name has no NUL"))
        .collect();
    let source_ptrs: Vec<*const c_char> = header_sources.iter().map(|s| s.as_ptr()).collect();
    let name_ptrs: Vec<*const c_char> = header_names.iter().map(|s| s.as_ptr()).collect();
    let option_strings: Vec<CString> = options
        .iter()
        .map(|o| CString::new(o.as_str()).expect("option has no NUL"))
        .collect();
    let option_ptrs: Vec<*const c_char> = option_strings.iter().map(|s| s.as_ptr()).collect();

    let mut program: Program = std::ptr::null_mut();
    // SAFETY: every pointer refers to a CString that outlives the program.
    let created = unsafe {
        (nvrtc.create_program)(
            &mut program,
            source.as_ptr(),
            name.as_ptr(),
            HEADERS.len() as c_int,
            source_ptrs.as_ptr(),
            name_ptrs.as_ptr(),
        )
    };
    if created != SUCCESS {
        return Err(fail("create", created));
    }

    // SAFETY: `program` is live until destroyed at the end of this function.
    let compiled = unsafe { (nvrtc.compile_program)(program, option_ptrs.len() as c_int, option_ptrs.as_ptr()) };
    let log = unsafe { program_log(nvrtc, program) };
    let result = if compiled == SUCCESS {
        unsafe { program_output(nvrtc, program, output) }.map(|bytes| Compiled { arch, bytes, log })
    } else {
        Err(Error::Compile {
            file: kernel.path().to_string(),
            arch: target.to_string(),
            log,
        })
    };
    // SAFETY: destroyed once, after its last use.
    unsafe { (nvrtc.destroy_program)(&mut program) };
    result
}

/// NVRTC's log, with `file(12): error` rewritten as `file:12: error` so editors can jump to it.
unsafe fn program_log(nvrtc: &NvrtcApi, program: Program) -> String {
    let mut size = 0usize;
    if (nvrtc.program_log_size)(program, &mut size) != SUCCESS || size <= 1 {
        return String::new();
    }
    let mut buffer = vec![0u8; size];
    (nvrtc.program_log)(program, buffer.as_mut_ptr() as *mut c_char);
    buffer.pop(); // the terminating NUL
    editor_locations(&String::from_utf8_lossy(&buffer))
}

fn editor_locations(log: &str) -> String {
    log.lines()
        .map(|line| match line.find("): ") {
            Some(close) => match line[..close].rfind('(') {
                Some(open) if line[open + 1..close].chars().all(|c| c.is_ascii_digit()) && close > open + 1 => {
                    format!("{}:{}: {}", &line[..open], &line[open + 1..close], &line[close + 3..])
                }
                _ => line.to_string(),
            },
            None => line.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n")
        .trim()
        .to_string()
}

unsafe fn program_output(nvrtc: &NvrtcApi, program: Program, output: Output) -> Result<Vec<u8>> {
    let mut size = 0usize;
    let (size_code, data_code);
    let mut buffer;
    match output {
        Output::Ptx => {
            size_code = (nvrtc.ptx_size)(program, &mut size);
            buffer = vec![0u8; size];
            data_code = (nvrtc.ptx)(program, buffer.as_mut_ptr() as *mut c_char);
            buffer.pop(); // PTX comes NUL-terminated
        }
        Output::Cubin => {
            size_code = (nvrtc.cubin_size)(program, &mut size);
            buffer = vec![0u8; size];
            data_code = (nvrtc.cubin)(program, buffer.as_mut_ptr() as *mut c_char);
        }
    }
    if size_code != SUCCESS || data_code != SUCCESS {
        return Err(Error::Other(format!("NVRTC could not return its {output:?} output")));
    }
    Ok(buffer)
}

/// A temporary folder of one tool run's own (ptxas or a disassembler: tests run several at once),
/// removed with its files when dropped, so that nothing is left behind in $TMPDIR.
struct Scratch(PathBuf);

impl Scratch {
    fn new(tool: &str) -> Result<Scratch> {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("gemm-ladder-{tool}-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&dir).map_err(Error::io(format!("creating a temporary folder for {tool}")))?;
        Ok(Scratch(dir))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// What `ptxas -v` reported for one kernel.
#[derive(Debug, Clone)]
pub struct AssemblyReport {
    pub registers: Option<u32>,
    pub spill_bytes: u32,
    pub stack_bytes: u32,
    /// ptxas's own words, for the test log.
    pub info: String,
}

/// Assembles PTX with `ptxas` for `arch` (a real `sm_` target). `None` when ptxas is not installed.
pub fn assemble(ptx: &[u8], arch: Arch, label: &str) -> Result<Option<AssemblyReport>> {
    let Some(ptxas) = libs::find_tool("ptxas") else {
        return Ok(None);
    };
    let scratch = Scratch::new("ptxas")?;
    let dir = &scratch.0;
    let stem = label.replace(['/', '.'], "_");
    let input = dir.join(format!("{stem}.{}.ptx", arch.sm()));
    let output = dir.join(format!("{stem}.{}.cubin", arch.sm()));
    std::fs::write(&input, ptx).map_err(Error::io("writing PTX for ptxas"))?;
    let run = Command::new(&ptxas)
        .arg(format!("-arch={}", arch.sm()))
        .arg("-v")
        .arg("-o")
        .arg(&output)
        .arg(&input)
        .output()
        .map_err(Error::io(format!("running {}", ptxas.display())))?;
    drop(scratch);
    let log = format!(
        "{}{}",
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr)
    );
    if !run.status.success() {
        return Err(Error::Assemble {
            file: label.to_string(),
            arch: arch.sm(),
            log,
        });
    }
    Ok(Some(parse_ptxas_report(&log)))
}

fn number_before(text: &str, marker: &str) -> Option<u32> {
    let at = text.find(marker)?;
    text[..at].split_whitespace().last()?.parse().ok()
}

fn parse_ptxas_report(log: &str) -> AssemblyReport {
    AssemblyReport {
        registers: number_before(log, "registers"),
        spill_bytes: number_before(log, "bytes spill stores").unwrap_or(0)
            + number_before(log, "bytes spill loads").unwrap_or(0),
        stack_bytes: number_before(log, "bytes stack frame").unwrap_or(0),
        info: log.trim().to_string(),
    }
}

/// Disassembles a cubin to SASS with `cuobjdump` or `nvdisasm`, whichever is installed.
pub fn disassemble(cubin: &[u8], label: &str) -> Result<String> {
    let scratch = Scratch::new("sass")?;
    let file = scratch.0.join(format!("{}.cubin", label.replace(['/', '.'], "_")));
    std::fs::write(&file, cubin).map_err(Error::io("writing the cubin"))?;
    let attempt = |tool: &Path, args: &[&str]| -> Option<String> {
        let out = Command::new(tool).args(args).arg(&file).output().ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
    };
    let sass = libs::find_tool("cuobjdump")
        .and_then(|t| attempt(&t, &["--dump-sass"]))
        .or_else(|| libs::find_tool("nvdisasm").and_then(|t| attempt(&t, &["-c"])));
    drop(scratch);
    sass.ok_or_else(|| {
        Error::Environment(format!(
            "--emit sass needs cuobjdump or nvdisasm: {}",
            crate::error::DISASSEMBLER_INSTALL
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each tool run has a folder of its own, and nothing of it is left once the run is over.
    #[test]
    fn a_tool_run_leaves_no_folder_behind() {
        let (one, two) = (Scratch::new("ptxas").unwrap(), Scratch::new("ptxas").unwrap());
        assert_ne!(one.0, two.0);
        std::fs::write(one.0.join("kernel.ptx"), "x").unwrap();
        let dirs = [one.0.clone(), two.0.clone()];
        drop((one, two));
        for dir in dirs {
            assert!(!dir.exists(), "{} is left behind", dir.display());
        }
    }

    #[test]
    fn log_locations_become_file_colon_line() {
        let log = "steps/step01_naive/kernel.cu(12): error: identifier \"x\" is undefined\n1 error detected";
        assert_eq!(
            editor_locations(log),
            "steps/step01_naive/kernel.cu:12: error: identifier \"x\" is undefined\n1 error detected"
        );
    }

    #[test]
    fn reads_ptxas_verbose_lines() {
        let log = "ptxas info    : Compiling entry function 'gemm' for 'sm_90'\n\
                   ptxas info    : Function properties for gemm\n    \
                   16 bytes stack frame, 8 bytes spill stores, 8 bytes spill loads\n\
                   ptxas info    : Used 128 registers, used 1 barriers, 8448 bytes smem";
        let report = parse_ptxas_report(log);
        assert_eq!(report.registers, Some(128));
        assert_eq!(report.spill_bytes, 16);
        assert_eq!(report.stack_bytes, 16);
    }
}

#[cfg(test)]
mod header_tests {
    use super::HEADERS;

    #[test]
    fn every_header_in_shared_cuda_is_listed() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/shared/cuda");
        let mut on_disk = 0;
        for entry in std::fs::read_dir(dir).expect("shared/cuda exists") {
            let path = entry.expect("readable entry").path();
            let name = path
                .file_name()
                .and_then(|n| n.to_str())
                .expect("UTF-8 name")
                .to_string();
            assert!(
                HEADERS.contains(&name.as_str()),
                "{name} is not in nvrtc::HEADERS: kernels including it would not compile"
            );
            on_disk += 1;
        }
        assert_eq!(
            on_disk,
            HEADERS.len(),
            "HEADERS lists a file that is not in shared/cuda"
        );
    }
}
