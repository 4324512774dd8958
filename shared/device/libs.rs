//! Finding the CUDA libraries, and choosing between CUDA 12 and CUDA 13 at run time.
//!
//! One build serves both. NVRTC and cuBLAS are loaded here, from a file chosen by its major version,
//! never through cudarc's loader (which takes the first name it finds and keeps it for the process).
//! The driver says which CUDA it supports (`cuDriverGetVersion`): the newest major it supports is
//! preferred (a 12.x driver gets the 12 libraries, a 13.x one the 13 libraries); with no driver
//! (`--emit`), the newest installed. `GEMM_LADDER_CUDA_MAJOR=12` (or 13) restricts NVRTC and ptxas to
//! that major, and makes cuBLAS try it first ([`majors_to_try`]). Each major is looked for by soname through the system loader (LD_LIBRARY_PATH, ld.so.cache),
//! then in a CUDA toolkit (CUDA_HOME, CUDA_PATH) and in the `nvidia-*` pip wheels: of an active venv,
//! of a `.venv` here or in the crate's root, and of the python3 on PATH.
//!
//! Every function we call is resolved when the library is loaded (`symbol_table!`), so a library
//! that lacks one is one clear line, never a panic in the middle of a run.

use crate::error::{Error, Result};
use std::ffi::c_void;
use std::fmt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The environment variable that restricts NVRTC and ptxas to one CUDA major version (12 or 13), and
/// makes cuBLAS try that major first.
pub const MAJOR_ENV: &str = "GEMM_LADDER_CUDA_MAJOR";

/// The CUDA major versions the ladder runs with, newest first.
pub const MAJORS: [u32; 2] = [13, 12];

/// The oldest NVRTC that compiles for every target the ladder claims (sm_100a and sm_120 came in 12.8).
pub const NVRTC_OLDEST: Version = Version::new(12, 8);

/// A CUDA version, `major.minor`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Version {
    pub major: u32,
    pub minor: u32,
}

impl Version {
    pub const fn new(major: u32, minor: u32) -> Version {
        Version { major, minor }
    }

    /// From the driver API's encoding, `1000 × major + 10 × minor` (12040 is 12.4).
    pub fn from_driver_api(encoded: i32) -> Version {
        let encoded = encoded.max(0) as u32;
        Version::new(encoded / 1000, (encoded % 1000) / 10)
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

/// The oldest Linux driver that runs CUDA `major` (for 12, through minor-version compatibility).
pub fn driver_needed(major: u32) -> u32 {
    match major {
        m if m >= 13 => 580,
        12 => 525,
        _ => 450,
    }
}

/// The CUDA components whose major version matters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Library {
    Nvrtc,
    Cublas,
    Ptxas,
}

impl Library {
    pub fn name(self) -> &'static str {
        match self {
            Library::Nvrtc => "NVRTC",
            Library::Cublas => "cuBLAS",
            Library::Ptxas => "ptxas",
        }
    }

    /// The pip requirement that installs this component of CUDA `major`, quoted for a shell.
    pub fn wheel(self, major: u32) -> String {
        match (self, major) {
            (Library::Nvrtc, 12) => "\"nvidia-cuda-nvrtc-cu12>=12.8\"".into(),
            (Library::Cublas, 12) => "nvidia-cublas-cu12".into(),
            (Library::Ptxas, 12) => "\"nvidia-cuda-nvcc-cu12>=12.8\"".into(),
            (Library::Nvrtc, m) => format!("\"nvidia-cuda-nvrtc=={m}.*\""),
            (Library::Cublas, m) => format!("\"nvidia-cublas=={m}.*\""),
            (Library::Ptxas, m) => format!("\"nvidia-cuda-nvcc=={m}.*\""),
        }
    }
}

/// The major versions to look for, in order: the newest the driver supports first, then the others,
/// newest first (found only to say what to install instead); without a driver, the newest first. A
/// forced major ([`MAJOR_ENV`]) is the only one for NVRTC and ptxas, which compile the kernels; cuBLAS,
/// the yardstick, tries it first and then the others, so that NVRTC 12 can be tried on a machine with
/// cuBLAS 13 alone (the first line of the run names both).
pub fn majors_to_try(library: Library, driver: Option<Version>, forced: Option<u32>) -> Vec<u32> {
    let mut majors = MAJORS.to_vec();
    if let Some(driver) = driver {
        majors.sort_by_key(|&m| (m > driver.major, std::cmp::Reverse(m)));
    }
    match (forced, library) {
        (None, _) => majors,
        (Some(major), Library::Cublas) => {
            majors.retain(|&m| m != major);
            majors.insert(0, major);
            majors
        }
        (Some(major), _) => vec![major],
    }
}

/// The major a user should install when none is found: the forced one, else the newest the driver
/// supports, else the newest.
pub fn major_to_install(driver: Option<Version>, forced: Option<u32>) -> u32 {
    forced.unwrap_or_else(|| majors_to_try(Library::Nvrtc, driver, None)[0])
}

/// What is wrong with running `library` of `version` on a driver that supports CUDA `driver`, as one
/// line that says what to install, or `None` when nothing is. Without a driver only NVRTC's minimum
/// matters.
pub fn mismatch(library: Library, version: Version, driver: Option<Version>) -> Option<String> {
    if library == Library::Nvrtc && version < NVRTC_OLDEST {
        let major = major_to_install(driver, None);
        return Some(format!(
            "NVRTC {version} cannot compile for sm_100a and sm_120 (NVRTC {NVRTC_OLDEST} or newer can): `pip install {}`",
            Library::Nvrtc.wheel(major)
        ));
    }
    let driver = driver?;
    if version.major <= driver.major {
        return None;
    }
    let fix = match MAJORS.iter().copied().find(|&m| m <= driver.major) {
        Some(major) => format!("`pip install {}`", library.wheel(major)),
        None => format!(
            "update the NVIDIA driver (≥ {} for CUDA 12, ≥ {} for CUDA 13)",
            driver_needed(12),
            driver_needed(13)
        ),
    };
    Some(format!(
        "{} {} needs a driver ≥ {}; this driver supports CUDA {driver}: {fix}",
        library.name(),
        version.major,
        driver_needed(version.major)
    ))
}

/// What to say when no `library` of the majors looked for is installed.
pub fn not_found(library: Library, driver: Option<Version>, forced: Option<u32>) -> String {
    let major = major_to_install(driver, forced);
    let why = match (forced, driver) {
        (Some(m), _) => format!(" ({MAJOR_ENV}={m})"),
        (None, Some(d)) => format!(" (this driver supports CUDA {d})"),
        (None, None) => String::new(),
    };
    format!(
        "{} of CUDA {major} not found{why}: `pip install {}` into the active venv (README: Requirements), or put a CUDA toolkit's library folder on LD_LIBRARY_PATH",
        library.name(),
        library.wheel(major)
    )
}

/// The major version [`MAJOR_ENV`] restricts the search to, if it is set.
pub fn forced_major() -> Result<Option<u32>> {
    match std::env::var(MAJOR_ENV) {
        Err(_) => Ok(None),
        Ok(text) if text.trim().is_empty() => Ok(None),
        Ok(text) => match text.trim().parse::<u32>() {
            Ok(major) if MAJORS.contains(&major) => Ok(Some(major)),
            _ => Err(Error::Usage(format!(
                "{MAJOR_ENV}={text}: expected one of {}",
                MAJORS.map(|m| m.to_string()).join(", ")
            ))),
        },
    }
}

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

/// The CUDA version the driver supports (`cuDriverGetVersion`), when there is a driver.
pub fn driver_cuda() -> Option<Version> {
    static VERSION: OnceLock<Option<Version>> = OnceLock::new();
    *VERSION.get_or_init(|| {
        if !driver_present() {
            return None;
        }
        let mut encoded = 0;
        // SAFETY: one out-pointer to a live integer; needs no cuInit.
        let status = unsafe { cudarc::driver::sys::cuDriverGetVersion(&mut encoded) };
        (status == cudarc::driver::sys::CUresult::CUDA_SUCCESS && encoded > 0)
            .then(|| Version::from_driver_api(encoded))
    })
}

/// `symbol_table! { /// doc \n pub struct Name { field = "cSymbol": fn(args) -> ret; … } }`: a struct of
/// the C functions a library exports, every one resolved at once by `Name::resolve(&library)`, and
/// the list of their names, `Name::SYMBOLS` (which the tests look up in each CUDA major).
macro_rules! symbol_table {
    ($(#[$doc:meta])* pub struct $name:ident {
        $($(#[$field_doc:meta])* $field:ident = $symbol:literal : fn($($arg:ty),* $(,)?) -> $ret:ty;)+
    }) => {
        $(#[$doc])*
        pub struct $name {
            $($(#[$field_doc])* pub $field: unsafe extern "C" fn($($arg),*) -> $ret,)+
        }

        impl $name {
            /// Every function of the table, by the name the library exports.
            pub const SYMBOLS: &'static [&'static str] = &[$($symbol),+];

            /// Resolves every function in `library`, or names the first one it lacks.
            pub fn resolve(library: &'static libloading::Library) -> Result<$name, String> {
                Ok($name {
                    $($field: {
                        // SAFETY: the type is the function's C signature, as its header declares it.
                        let symbol = unsafe {
                            library.get::<unsafe extern "C" fn($($arg),*) -> $ret>(concat!($symbol, "\0").as_bytes())
                        };
                        *symbol.map_err(|_| format!("lacks {}", $symbol))?
                    },)+
                })
            }
        }
    };
}
pub(crate) use symbol_table;

/// A CUDA library this process loaded: its functions, its version and its file.
pub struct Loaded<T> {
    pub api: T,
    pub version: Version,
    /// As the library reports it (cuBLAS has a patch level: `13.1.0`).
    pub version_text: String,
    /// The file the functions come from (`dladdr`, so also when the system loader found it by soname).
    pub path: PathBuf,
}

/// Why a library could not be loaded, as the one line to print.
#[derive(Debug, Clone)]
pub enum LoadFailure {
    /// Not installed, a version the driver cannot run, or a library that lacks a function.
    Environment(String),
    /// [`MAJOR_ENV`] names no major the ladder runs with.
    Usage(String),
}

impl LoadFailure {
    /// As an error (status 4, environment; 2 for a bad [`MAJOR_ENV`]).
    pub fn to_error(&self) -> Error {
        match self {
            LoadFailure::Environment(line) => Error::Environment(line.clone()),
            LoadFailure::Usage(line) => Error::Usage(line.clone()),
        }
    }
}

/// What a table of functions says of its library once resolved.
pub struct Described {
    pub version: Version,
    pub version_text: String,
    /// The address of one of the library's functions, to find its file.
    pub address: *const c_void,
}

/// Loads `library` from the files `lib{stem}.so.{major}` (in the order given, a dependency first) of
/// the first major that [`majors_to_try`] finds, resolves its functions, and judges its version
/// against the driver ([`mismatch`]).
pub fn load<T>(
    library: Library,
    stems: &[&str],
    resolve: impl Fn(&[&'static libloading::Library]) -> std::result::Result<T, String>,
    describe: impl Fn(&T) -> Described,
) -> std::result::Result<Loaded<T>, LoadFailure> {
    let forced = forced_major().map_err(|e| LoadFailure::Usage(e.to_string()))?;
    let driver = driver_cuda();
    for major in majors_to_try(library, driver, forced) {
        let Some(files) = stems.iter().map(|stem| open(stem, major)).collect::<Option<Vec<_>>>() else {
            continue;
        };
        let libraries: Vec<&'static libloading::Library> = files.iter().map(|f| f.0).collect();
        let api = resolve(&libraries).map_err(|lacks| {
            LoadFailure::Environment(format!(
                "{} {major} ({}) {lacks}: install {} again",
                library.name(),
                files.last().map(|f| f.1.display().to_string()).unwrap_or_default(),
                library.wheel(major)
            ))
        })?;
        let described = describe(&api);
        if let Some(line) = mismatch(library, described.version, driver) {
            return Err(LoadFailure::Environment(line));
        }
        let path = path_of(described.address).unwrap_or_else(|| files.last().map(|f| f.1.clone()).unwrap_or_default());
        return Ok(Loaded {
            api,
            version: described.version,
            version_text: described.version_text,
            path,
        });
    }
    Err(LoadFailure::Environment(not_found(library, driver, forced)))
}

/// `lib{stem}.so.{major}`, loaded for the life of the process: by soname through the system loader,
/// else the first such file in the known folders. With the file it came from, where known.
pub fn open(stem: &str, major: u32) -> Option<(&'static libloading::Library, PathBuf)> {
    let soname = format!("lib{stem}.so.{major}");
    // SAFETY: loading a CUDA library runs its initialisers, as any user of it would.
    if let Ok(library) = unsafe { libloading::Library::new(&soname) } {
        return Some((Box::leak(Box::new(library)), PathBuf::from(soname)));
    }
    for path in find_library_files(stem, major) {
        // SAFETY: as above.
        if let Ok(library) = unsafe { libloading::Library::new(&path) } {
            return Some((Box::leak(Box::new(library)), path));
        }
    }
    None
}

/// The files `lib{stem}.so.{major}` (or `.so.{major}.x.y`) in the known folders, most specific first.
pub fn find_library_files(stem: &str, major: u32) -> Vec<PathBuf> {
    let soname = format!("lib{stem}.so.{major}");
    let mut found = Vec::new();
    for dir in library_dirs(major) {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        let mut names: Vec<String> = entries
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter(|n| *n == soname || n.starts_with(&format!("{soname}.")))
            .collect();
        // The soname itself first, then the newest full version.
        names.sort_by_key(|n| (n != &soname, std::cmp::Reverse(n.clone())));
        found.extend(names.into_iter().map(|n| dir.join(n)));
    }
    found
}

/// The file a function's address lies in (`dladdr`).
fn path_of(address: *const c_void) -> Option<PathBuf> {
    if address.is_null() {
        return None;
    }
    // SAFETY: dladdr only reads the loader's tables; `info` is plain data it fills in.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    if unsafe { libc::dladdr(address, &mut info) } == 0 || info.dli_fname.is_null() {
        return None;
    }
    // SAFETY: a NUL-terminated string owned by the loader, alive while the library is loaded.
    let name = unsafe { std::ffi::CStr::from_ptr(info.dli_fname) };
    Some(PathBuf::from(name.to_string_lossy().into_owned()))
}

/// Folders that may hold CUDA `major`'s shared libraries, most specific first.
fn library_dirs(major: u32) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    for var in ["CUDA_HOME", "CUDA_PATH"] {
        if let Some(root) = std::env::var_os(var) {
            dirs.push(Path::new(&root).join("lib64"));
            dirs.push(Path::new(&root).join("lib"));
        }
    }
    for root in python_nvidia_roots() {
        // CUDA 13 wheels put every library in nvidia/cu13/lib; CUDA 12 wheels one folder each.
        dirs.push(root.join(format!("cu{major}")).join("lib"));
        for sub in ["cuda_nvrtc", "cublas"] {
            dirs.push(root.join(sub).join("lib"));
        }
    }
    // Toolkits side by side: /usr/local/cuda-12.9, /usr/local/cuda-13.0, then the default one.
    if let Ok(entries) = std::fs::read_dir("/usr/local") {
        let prefix = format!("cuda-{major}");
        let mut toolkits: Vec<PathBuf> = entries
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
            .map(|e| e.path().join("lib64"))
            .collect();
        toolkits.sort_by(|a, b| b.cmp(a));
        dirs.extend(toolkits);
    }
    dirs.push(PathBuf::from("/usr/local/cuda/lib64"));
    dirs
}

/// Folders that may hold CUDA's command-line tools (`ptxas`, `cuobjdump`, `nvdisasm`): PATH first,
/// then the toolkit and the wheels (of the forced major only, when [`MAJOR_ENV`] is set).
pub fn tool_dirs() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default();
    for var in ["CUDA_HOME", "CUDA_PATH"] {
        if let Some(root) = std::env::var_os(var) {
            dirs.push(Path::new(&root).join("bin"));
        }
    }
    let majors = match forced_major() {
        Ok(Some(major)) => vec![major],
        _ => majors_to_try(Library::Ptxas, driver_cuda(), None),
    };
    for root in python_nvidia_roots() {
        for &major in &majors {
            dirs.push(match major {
                12 => root.join("cuda_nvcc").join("bin"),
                m => root.join(format!("cu{m}")).join("bin"),
            });
        }
    }
    dirs.push(PathBuf::from("/usr/local/cuda/bin"));
    dirs
}

/// The full path of a CUDA tool, if one is installed anywhere we know to look.
pub fn find_tool(name: &str) -> Option<PathBuf> {
    tool_dirs().into_iter().map(|d| d.join(name)).find(|p| p.is_file())
}

/// The `nvidia` namespace folders of the Python packages (`pip install nvidia-cuda-nvrtc`): of an
/// active venv (`$VIRTUAL_ENV`), of a `.venv` in the working folder or the crate's root (used even
/// when not activated), and of the python3 (or python) on PATH.
pub fn python_nvidia_roots() -> &'static [PathBuf] {
    static ROOTS: OnceLock<Vec<PathBuf>> = OnceLock::new();
    ROOTS.get_or_init(|| {
        let mut roots: Vec<PathBuf> = Vec::new();
        let mut venvs: Vec<PathBuf> = std::env::var_os("VIRTUAL_ENV").map(PathBuf::from).into_iter().collect();
        venvs.push(PathBuf::from(".venv"));
        venvs.push(Path::new(env!("CARGO_MANIFEST_DIR")).join(".venv"));
        for venv in venvs {
            roots.extend(venv_nvidia_roots(&venv));
        }
        let script = "import nvidia, os; print(os.pathsep.join(nvidia.__path__))";
        for python in ["python3", "python"] {
            if let Ok(out) = Command::new(python).args(["-c", script]).output() {
                if out.status.success() {
                    let text = String::from_utf8_lossy(&out.stdout);
                    roots.extend(std::env::split_paths(text.trim()));
                    break;
                }
            }
        }
        let mut unique: Vec<PathBuf> = Vec::new();
        for root in roots {
            let root = root.canonicalize().unwrap_or(root);
            if root.is_dir() && !unique.contains(&root) {
                unique.push(root);
            }
        }
        unique
    })
}

/// `venv/lib/python3.*/site-packages/nvidia`, where it exists.
fn venv_nvidia_roots(venv: &Path) -> Vec<PathBuf> {
    let mut roots = Vec::new();
    for lib in ["lib", "lib64"] {
        let Ok(entries) = std::fs::read_dir(venv.join(lib)) else {
            continue;
        };
        for entry in entries.flatten() {
            let nvidia = entry.path().join("site-packages").join("nvidia");
            if entry.file_name().to_string_lossy().starts_with("python") && nvidia.is_dir() {
                roots.push(nvidia);
            }
        }
    }
    roots
}

/// The first line of a run on a GPU, from its parts: the driver (its version, as NVML gives it, and the
/// CUDA it supports), the NVRTC and cuBLAS loaded with their files, and the forced major if any.
pub fn stack_line(
    driver_version: Option<&str>,
    driver_cuda: Option<Version>,
    nvrtc: (&str, &Path),
    cublas: Option<(&str, &Path)>,
    forced: Option<u32>,
) -> String {
    let driver = match (driver_version, driver_cuda) {
        (Some(v), Some(c)) => format!("driver {v} (CUDA {c})"),
        (None, Some(c)) => format!("driver for CUDA {c}"),
        (Some(v), None) => format!("driver {v}"),
        (None, None) => "no driver".to_string(),
    };
    let mut line = format!("CUDA: {driver} · NVRTC {} ({})", nvrtc.0, nvrtc.1.display());
    if let Some((version, path)) = cublas {
        line += &format!(" · cuBLAS {version} ({})", path.display());
    }
    if let Some(major) = forced {
        line += &format!(" · {MAJOR_ENV}={major}");
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    const V12_4: Version = Version::new(12, 4);
    const V13_0: Version = Version::new(13, 0);

    #[test]
    fn the_driver_encoding_reads_as_major_dot_minor() {
        assert_eq!(Version::from_driver_api(12040), V12_4);
        assert_eq!(Version::from_driver_api(13000), V13_0);
        assert_eq!(Version::from_driver_api(12090).to_string(), "12.9");
    }

    #[test]
    fn the_newest_major_the_driver_supports_comes_first() {
        let nvrtc = |driver, forced| majors_to_try(Library::Nvrtc, driver, forced);
        assert_eq!(nvrtc(Some(V12_4), None), vec![12, 13]);
        assert_eq!(nvrtc(Some(Version::new(12, 9)), None), vec![12, 13]);
        assert_eq!(nvrtc(Some(V13_0), None), vec![13, 12]);
        assert_eq!(nvrtc(Some(Version::new(13, 2)), None), vec![13, 12]);
        // No driver (`--emit`, CI): the newest installed.
        assert_eq!(nvrtc(None, None), vec![13, 12]);
        // The override looks for its major alone, whatever the driver.
        assert_eq!(nvrtc(Some(V13_0), Some(12)), vec![12]);
        assert_eq!(majors_to_try(Library::Ptxas, None, Some(12)), vec![12]);
        // cuBLAS tries it first, then what the driver runs (NVRTC 12 beside the cuBLAS 13 there is).
        assert_eq!(majors_to_try(Library::Cublas, Some(V13_0), Some(12)), vec![12, 13]);
        assert_eq!(majors_to_try(Library::Cublas, Some(V12_4), None), vec![12, 13]);
        assert_eq!(nvrtc(None, Some(13)), vec![13]);
    }

    #[test]
    fn a_library_newer_than_the_driver_says_what_to_install() {
        assert_eq!(
            mismatch(Library::Cublas, Version::new(13, 1), Some(V12_4)).as_deref(),
            Some("cuBLAS 13 needs a driver ≥ 580; this driver supports CUDA 12.4: `pip install nvidia-cublas-cu12`")
        );
        assert_eq!(
            mismatch(Library::Nvrtc, Version::new(13, 0), Some(V12_4)).as_deref(),
            Some("NVRTC 13 needs a driver ≥ 580; this driver supports CUDA 12.4: `pip install \"nvidia-cuda-nvrtc-cu12>=12.8\"`")
        );
        let too_old = mismatch(Library::Nvrtc, Version::new(12, 9), Some(Version::new(11, 8))).unwrap();
        assert_eq!(
            too_old,
            "NVRTC 12 needs a driver ≥ 525; this driver supports CUDA 11.8: update the NVIDIA driver (≥ 525 for CUDA 12, ≥ 580 for CUDA 13)"
        );
    }

    #[test]
    fn a_library_the_driver_supports_is_no_mismatch() {
        // CUDA 12 libraries of a newer minor run on an older 12.x driver (minor-version compatibility),
        // and on a 13.x driver.
        assert_eq!(mismatch(Library::Nvrtc, Version::new(12, 9), Some(V12_4)), None);
        assert_eq!(mismatch(Library::Cublas, Version::new(12, 9), Some(V13_0)), None);
        assert_eq!(mismatch(Library::Cublas, Version::new(13, 1), Some(V13_0)), None);
        // Without a driver only NVRTC's minimum matters.
        assert_eq!(mismatch(Library::Cublas, Version::new(13, 1), None), None);
        assert_eq!(mismatch(Library::Nvrtc, Version::new(12, 8), None), None);
    }

    #[test]
    fn an_nvrtc_older_than_12_8_cannot_compile_for_blackwell() {
        assert_eq!(
            mismatch(Library::Nvrtc, Version::new(12, 4), Some(V12_4)).as_deref(),
            Some("NVRTC 12.4 cannot compile for sm_100a and sm_120 (NVRTC 12.8 or newer can): `pip install \"nvidia-cuda-nvrtc-cu12>=12.8\"`")
        );
        assert_eq!(
            mismatch(Library::Nvrtc, Version::new(12, 6), None).as_deref(),
            Some("NVRTC 12.6 cannot compile for sm_100a and sm_120 (NVRTC 12.8 or newer can): `pip install \"nvidia-cuda-nvrtc==13.*\"`")
        );
    }

    #[test]
    fn a_missing_library_names_the_wheel_of_the_right_major() {
        assert_eq!(
            not_found(Library::Cublas, Some(V12_4), None),
            "cuBLAS of CUDA 12 not found (this driver supports CUDA 12.4): `pip install nvidia-cublas-cu12` into the active venv (README: Requirements), or put a CUDA toolkit's library folder on LD_LIBRARY_PATH"
        );
        assert!(not_found(Library::Nvrtc, None, None).contains("`pip install \"nvidia-cuda-nvrtc==13.*\"`"));
        assert!(not_found(Library::Nvrtc, Some(V13_0), Some(12)).starts_with(
            "NVRTC of CUDA 12 not found (GEMM_LADDER_CUDA_MAJOR=12): `pip install \"nvidia-cuda-nvrtc-cu12>=12.8\"`"
        ));
    }

    #[test]
    fn the_first_line_names_the_driver_and_each_library_with_its_file() {
        let line = stack_line(
            Some("580.65.06"),
            Some(V13_0),
            ("12.9", Path::new("/x/libnvrtc.so.12")),
            Some(("13.1.0", Path::new("/y/libcublas.so.13"))),
            Some(12),
        );
        assert_eq!(
            line,
            "CUDA: driver 580.65.06 (CUDA 13.0) · NVRTC 12.9 (/x/libnvrtc.so.12) · cuBLAS 13.1.0 (/y/libcublas.so.13) · GEMM_LADDER_CUDA_MAJOR=12"
        );
        let bare = stack_line(None, Some(V12_4), ("12.8", Path::new("libnvrtc.so.12")), None, None);
        assert_eq!(bare, "CUDA: driver for CUDA 12.4 · NVRTC 12.8 (libnvrtc.so.12)");
    }

    #[test]
    fn each_component_has_a_wheel_per_major() {
        assert_eq!(Library::Ptxas.wheel(12), "\"nvidia-cuda-nvcc-cu12>=12.8\"");
        assert_eq!(Library::Ptxas.wheel(13), "\"nvidia-cuda-nvcc==13.*\"");
        assert_eq!(Library::Cublas.wheel(13), "\"nvidia-cublas==13.*\"");
    }
}
