//! One error type for every expected failure. Each variant prints as one line that says what went wrong
//! and, where there is one, what to do about it; `main` prints it and exits non-zero (no panics).

use std::process::ExitCode;

/// Where NVRTC comes from, as every message and the README say it. The pip wheels are found in an
/// active venv, a `.venv` here, or through the `python3` on PATH (`device::libs`); a library elsewhere,
/// through LD_LIBRARY_PATH. CUDA 13 needs a driver ≥ 580; a CUDA 12 driver takes the `-cu12` wheels.
pub const NVRTC_INSTALL: &str = "`pip install \"nvidia-cuda-nvrtc==13.*\"` (driver ≥ 580) or \
     `pip install \"nvidia-cuda-nvrtc-cu12>=12.8\"` (a CUDA 12 driver) into the active venv, or install a CUDA \
     toolkit 12.8 or newer (a library elsewhere: put its folder on LD_LIBRARY_PATH)";

/// Where cuBLAS comes from (see [`NVRTC_INSTALL`]); needed only to run kernels on a GPU.
pub const CUBLAS_INSTALL: &str = "`pip install \"nvidia-cublas==13.*\"` (driver ≥ 580) or \
     `pip install nvidia-cublas-cu12` (a CUDA 12 driver) into the active venv, or install a CUDA toolkit \
     (a library elsewhere: put its folder on LD_LIBRARY_PATH)";

/// Where ptxas comes from (the tests assemble every kernel with it; `exercise check` reads its
/// register count): the nvcc wheel brings it, found by itself.
pub const PTXAS_INSTALL: &str = "install a CUDA toolkit, or `pip install \"nvidia-cuda-nvcc==13.*\"` (or \
     \"nvidia-cuda-nvcc-cu12>=12.8\" with NVRTC 12) into the active venv (it brings ptxas)";

/// Where a disassembler for `--emit sass` comes from: the nvcc wheel has none since CUDA 13; the
/// nvdisasm wheel brings `nvdisasm`, found by itself.
pub const DISASSEMBLER_INSTALL: &str =
    "install a CUDA toolkit, or `pip install \"nvidia-cuda-nvdisasm==13.*\"` for the python3 on PATH (it brings nvdisasm)";

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("no NVIDIA driver library (libcuda) found: install the NVIDIA driver to run kernels; `--emit ptx` and `ladder --book-only` work without one")]
    NoDriver,
    #[error("no CUDA GPU found: the driver reports {0} devices")]
    NoDevice(i32),
    #[error("NVRTC (libnvrtc) not found: {NVRTC_INSTALL}")]
    NoNvrtc,
    #[error("cuBLAS (libcublas) not found: {CUBLAS_INSTALL}")]
    NoCublas,
    /// What the machine lacks for what was asked, in words of the caller's (`ladder` without a GPU).
    #[error("{0}")]
    Environment(String),
    #[error("shape {m}x{n}x{k} refused by {step}: {rule}")]
    Shape {
        step: String,
        m: usize,
        n: usize,
        k: usize,
        rule: String,
    },
    #[error("{step} needs {needs}, but this GPU is {found}")]
    Unsupported { step: String, needs: String, found: String },
    #[error("NVRTC could not compile {file} for {arch}:\n{log}")]
    Compile { file: String, arch: String, log: String },
    #[error("ptxas rejected {file} for {arch}:\n{log}")]
    Assemble { file: String, arch: String, log: String },
    #[error("CUDA {context}: {detail}")]
    Cuda { context: String, detail: String },
    #[error("out of GPU memory: {0}")]
    OutOfMemory(String),
    #[error("verification failed: {0}")]
    Verification(String),
    #[error("{what} did not finish within {seconds:.0} s: reported as hung (an mbarrier phase or a barrier nobody reaches is the usual cause)")]
    Hung { what: String, seconds: f64 },
    #[error("{0}")]
    Usage(String),
    #[error("{context}: {source}")]
    Io { context: String, source: std::io::Error },
    #[error("{0}")]
    Other(String),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// Exit codes a script can tell apart: 1 verification, 2 usage/shape/arch, 3 hung, 4 environment, 5 other.
    pub fn exit_code(&self) -> u8 {
        match self {
            Error::Verification(_) => 1,
            Error::Usage(_) | Error::Shape { .. } | Error::Unsupported { .. } => 2,
            Error::Hung { .. } => 3,
            Error::NoDriver | Error::NoDevice(_) | Error::NoNvrtc | Error::NoCublas | Error::Environment(_) => 4,
            _ => 5,
        }
    }

    pub fn io(context: impl Into<String>) -> impl FnOnce(std::io::Error) -> Error {
        let context = context.into();
        move |source| Error::Io { context, source }
    }

    /// Wraps a driver error, turning an allocation failure into its own clear message.
    pub fn cuda(context: impl Into<String>) -> impl FnOnce(cudarc::driver::DriverError) -> Error {
        let context = context.into();
        move |e| {
            let detail = e.to_string();
            if detail.contains("OUT_OF_MEMORY") {
                Error::OutOfMemory(context)
            } else {
                Error::Cuda { context, detail }
            }
        }
    }
}

/// What each exit status means, as `--help` ends with it and the README lists it: [`Error::exit_code`]
/// returns these.
pub const EXIT_CODES: [(u8, &str); 6] = [
    (0, "success"),
    (1, "verification failed"),
    (2, "usage: a bad flag, shape or architecture"),
    (3, "a kernel hung"),
    (4, "environment: no driver or GPU; NVRTC, cuBLAS or a CUDA tool missing"),
    (5, "anything else: a compile error, a CUDA or file error"),
];

/// The statuses `mdbook-ladder` (an mdBook preprocessor, which runs no kernel) exits with.
pub const PREPROCESSOR_EXIT_CODES: [(u8, &str); 3] = [
    (0, "success"),
    (
        2,
        "usage: not run by mdBook 0.5 (a terminal, or no book, on standard input)",
    ),
    (
        5,
        "anything else: a directive or a results file the pass could not read",
    ),
];

/// The `after_help` of every binary but `mdbook-ladder`: [`EXIT_CODES`] as one line.
pub fn exit_codes_help() -> String {
    exit_codes_line(&EXIT_CODES)
}

/// `codes` as `--help` ends with them: `Exit status: 0 success; 1 …`.
pub fn exit_codes_line(codes: &[(u8, &str)]) -> String {
    let codes: Vec<String> = codes
        .iter()
        .map(|(code, meaning)| format!("{code} {meaning}"))
        .collect();
    format!("Exit status: {}.", codes.join("; "))
}

/// Lets a write to a closed pipe end the process quietly, as it ends `cat` or `grep` (`stepNN --emit
/// ptx | head`): Rust ignores SIGPIPE, so `println!` would panic with a backtrace instead. Every
/// binary's entry calls it first.
pub fn quiet_on_closed_pipe() {
    #[cfg(unix)]
    // SAFETY: restores the default disposition of one signal before any thread is started.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

/// The columns prose is wrapped to: `COLUMNS` where it is set (as clap's `--help` does), else the
/// terminal's width up to 100, else (not a terminal) 100.
pub fn columns() -> usize {
    if let Some(set) = std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.trim().parse::<usize>().ok())
    {
        return set.max(20);
    }
    const WIDEST: usize = 100;
    #[cfg(unix)]
    // SAFETY: TIOCGWINSZ fills the `winsize` it is handed, and only that, when stdout is a terminal.
    unsafe {
        let mut size: libc::winsize = std::mem::zeroed();
        if libc::ioctl(libc::STDOUT_FILENO, libc::TIOCGWINSZ, &mut size) == 0 && size.ws_col >= 20 {
            return (size.ws_col as usize).min(WIDEST);
        }
    }
    WIDEST
}

/// `text` wrapped at word boundaries to `columns` (a word longer than that keeps its own line), never
/// inside a `code span`; each line after the first starts with `indent`. No newline at the end.
pub fn wrap_to(text: &str, columns: usize, indent: &str) -> String {
    wrap_after("", text, columns, indent)
}

/// [`wrap_to`] with `prefix` (kept as it is: labels, aligned columns) in front of the first line.
pub fn wrap_after(prefix: &str, text: &str, columns: usize, indent: &str) -> String {
    let mut words: Vec<String> = Vec::new();
    let mut open = false;
    for word in text.split_whitespace() {
        match words.last_mut() {
            Some(last) if open => {
                last.push(' ');
                last.push_str(word);
            }
            _ => words.push(word.to_string()),
        }
        if word.matches('`').count() % 2 == 1 {
            open = !open;
        }
    }
    let mut out = prefix.to_string();
    let mut width = prefix.chars().count();
    // Nothing but the prefix or the indent on the line yet.
    let mut fresh = true;
    for word in &words {
        let len = word.chars().count();
        if !fresh && width + 1 + len > columns {
            out.push('\n');
            out += indent;
            width = indent.chars().count();
        } else if !fresh {
            out.push(' ');
            width += 1;
        }
        out += word;
        width += len;
        fresh = false;
    }
    out
}

/// `text` wrapped to the terminal ([`columns`]), lines after the first indented by `indent`.
pub fn wrapped(text: &str, indent: &str) -> String {
    wrap_to(text, columns(), indent)
}

/// `prefix` then `text`, wrapped to the terminal ([`columns`]); lines after the first indented by
/// `indent`.
pub fn wrapped_after(prefix: &str, text: &str, indent: &str) -> String {
    wrap_after(prefix, text, columns(), indent)
}

/// Prints an error as one line (a compile log keeps its own lines) and turns it into an exit code.
pub fn exit_with(result: Result<()>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every status an error exits with is one `--help` and the README explain.
    #[test]
    fn every_exit_status_is_listed() {
        let errors = [
            Error::NoDriver,
            Error::NoDevice(0),
            Error::NoNvrtc,
            Error::NoCublas,
            Error::Environment("ladder needs a GPU".into()),
            Error::Shape {
                step: "step05".into(),
                m: 0,
                n: 1,
                k: 8,
                rule: "M ≥ 1".into(),
            },
            Error::Unsupported {
                step: "step05".into(),
                needs: "Hopper".into(),
                found: "sm_80".into(),
            },
            Error::Compile {
                file: "k.cu".into(),
                arch: "sm_90a".into(),
                log: String::new(),
            },
            Error::Assemble {
                file: "k.cu".into(),
                arch: "sm_90a".into(),
                log: String::new(),
            },
            Error::Cuda {
                context: "launching".into(),
                detail: "CUDA_ERROR_LAUNCH_FAILED".into(),
            },
            Error::OutOfMemory("allocating C".into()),
            Error::Verification("step05".into()),
            Error::Hung {
                what: "step08".into(),
                seconds: 60.0,
            },
            Error::Usage("--iters".into()),
            Error::Io {
                context: "reading".into(),
                source: std::io::Error::other("gone"),
            },
            Error::Other("else".into()),
        ];
        for e in errors {
            // No wildcard: a new variant does not compile here until it joins the list above.
            match e {
                Error::NoDriver
                | Error::NoDevice(_)
                | Error::NoNvrtc
                | Error::NoCublas
                | Error::Environment(_)
                | Error::Shape { .. }
                | Error::Unsupported { .. }
                | Error::Compile { .. }
                | Error::Assemble { .. }
                | Error::Cuda { .. }
                | Error::OutOfMemory(_)
                | Error::Verification(_)
                | Error::Hung { .. }
                | Error::Usage(_)
                | Error::Io { .. }
                | Error::Other(_) => {}
            }
            assert!(
                EXIT_CODES.iter().any(|(code, _)| *code == e.exit_code()),
                "{e}: status {} is not in EXIT_CODES",
                e.exit_code()
            );
        }
        assert!(exit_codes_help().contains("3 a kernel hung"));
    }

    #[test]
    fn prose_wraps_at_words_and_indents_the_lines_after_the_first() {
        let text = "one two three four five six seven";
        assert_eq!(wrap_to(text, 13, "  "), "one two three\n  four five\n  six seven");
        assert_eq!(wrap_to("a verylongword b", 4, ""), "a\nverylongword\nb");
        assert_eq!(wrap_to(text, 200, ""), text);
        assert_eq!(
            wrap_to("run `cargo run --bin x` now", 12, ""),
            "run\n`cargo run --bin x`\nnow"
        );
        assert_eq!(wrap_after("  why:   ", "a b c", 11, "  "), "  why:   a\n  b c");
        for line in wrap_to(&text.repeat(20), 40, "    ").lines() {
            assert!(line.chars().count() <= 40, "{line}");
        }
    }
}
