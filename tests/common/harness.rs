//! The harness of the test files whose tests need a GPU, NVRTC or ptxas (`harness = false` in
//! Cargo.toml), built on libtest-mimic: a test that cannot run on this machine is reported as
//! `ignored (why)` and counted in the summary's "ignored", where libtest's harness would count it
//! as passed.
//!
//! A test is a plain function, listed by name in `common::harness::tests!(…)` at the end of its file
//! (a function left out is dead code, which clippy refuses; a `#[test]` one fails the file's
//! `every_test_in_this_file_is_listed`). It returns `()`, or [`Ran`] when it may
//! not be able to run: `Err(Skip(why))`, usually through `?` on [`super::gpu`] or [`super::nvrtc`].
//! A panic fails it, as under libtest. Output is not captured.

use libtest_mimic::{Arguments, Completion, Trial};
use std::process::ExitCode;

/// Why a test could not run here.
#[derive(Debug)]
pub struct Skip(pub String);

/// What a test that may not be able to run returns.
pub type Ran = Result<(), Skip>;

/// A test function's return value, as [`Ran`].
pub trait Outcome {
    fn ran(self) -> Ran;
}

impl Outcome for () {
    fn ran(self) -> Ran {
        Ok(())
    }
}

impl Outcome for Ran {
    fn ran(self) -> Ran {
        self
    }
}

/// The test `name`, running `test`.
pub fn trial<O: Outcome + 'static>(name: &str, test: fn() -> O) -> Trial {
    Trial::ignorable_test(name, move || match test().ran() {
        Ok(()) => Ok(Completion::Completed),
        Err(Skip(why)) => Ok(Completion::ignored_with(why)),
    })
}

/// Runs the trials of the test file whose text is `source` with libtest's command line (a filter,
/// `--exact`, `--test-threads`, `--list` …), and one more: a `#[test]` function in that file, which
/// this harness would never run, fails it.
pub fn run(source: &'static str, mut trials: Vec<Trial>) -> ExitCode {
    trials.push(Trial::test("every_test_in_this_file_is_listed", move || {
        match source.lines().position(|line| line.trim_start().starts_with("#[test]")) {
            Some(at) => Err(format!(
                "line {}: a #[test] function, which this harness never runs: list it in `common::harness::tests!(…)`",
                at + 1
            )
            .into()),
            None => Ok(()),
        }
    }));
    libtest_mimic::run(&Arguments::from_args(), trials).exit_code()
}

/// `tests!(a, b, c)`: the file's `main`, running the test functions `a`, `b` and `c`.
macro_rules! tests {
    ($($test:ident),+ $(,)?) => {
        fn main() -> std::process::ExitCode {
            let source = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/", file!()));
            common::harness::run(source, vec![$(common::harness::trial(stringify!($test), $test)),+])
        }
    };
}
pub(crate) use tests;
