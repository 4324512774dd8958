//! The CUDA libraries of either major version load with every function this crate calls resolved:
//! NVRTC 12 and 13, cuBLAS and cuBLASLt 12 and 13, each where its wheel (or a toolkit) is installed,
//! and reported as ignored, with the reason, where it is not. Needs no GPU: the functions are only
//! looked up, and the version each library reports is read.

mod common;

use common::{Ran, Skip};
use gemm_ladder::device::cublas::{self, CublasApi, CublasLtApi};
use gemm_ladder::device::libs::{self, Library};
use gemm_ladder::device::nvrtc::NvrtcApi;

/// Opens `lib{stem}.so.{major}` of each stem, in order, or says which wheel would bring it.
fn open_all(library: Library, stems: &[&str], major: u32) -> Result<Vec<&'static libloading::Library>, Skip> {
    stems
        .iter()
        .map(|stem| {
            let (lib, path) = libs::open(stem, major).ok_or_else(|| {
                Skip(format!(
                    "lib{stem}.so.{major} not found here: `pip install {}` to run it",
                    library.wheel(major)
                ))
            })?;
            println!("lib{stem}.so.{major}: {}", path.display());
            Ok(lib)
        })
        .collect()
}

fn nvrtc_loads(major: u32) -> Ran {
    let files = open_all(Library::Nvrtc, &["nvrtc"], major)?;
    let api = NvrtcApi::resolve(files[0]).unwrap_or_else(|e| panic!("NVRTC {major} {e}"));
    let (mut got_major, mut minor) = (0, 0);
    // SAFETY: two out-pointers to live integers.
    assert_eq!(unsafe { (api.version)(&mut got_major, &mut minor) }, 0);
    println!(
        "NVRTC {got_major}.{minor}: all {} functions resolved",
        NvrtcApi::SYMBOLS.len()
    );
    assert_eq!(got_major as u32, major);
    Ok(())
}

fn cublas_loads(major: u32) -> Ran {
    let files = open_all(Library::Cublas, &cublas::STEMS, major)?;
    let apis = cublas::resolve(&files).unwrap_or_else(|e| panic!("cuBLAS {major} {e}"));
    let described = cublas::describe(&apis);
    // SAFETY: no arguments.
    let lt_version = unsafe { (apis.lt.version)() };
    println!(
        "cuBLAS {} (cuBLASLt {lt_version}): all {} + {} functions resolved",
        described.version_text,
        CublasApi::SYMBOLS.len(),
        CublasLtApi::SYMBOLS.len()
    );
    assert_eq!(described.version.major, major);
    assert_eq!(lt_version / 10_000, major as usize, "cuBLASLt of another major");
    Ok(())
}

fn nvrtc_12_loads_with_every_function_we_call() -> Ran {
    nvrtc_loads(12)
}

fn nvrtc_13_loads_with_every_function_we_call() -> Ran {
    nvrtc_loads(13)
}

fn cublas_12_loads_with_every_function_we_call() -> Ran {
    cublas_loads(12)
}

fn cublas_13_loads_with_every_function_we_call() -> Ran {
    cublas_loads(13)
}

/// The functions the tables resolve are the ones the crate calls, each named once.
fn every_table_names_each_function_once() {
    for symbols in [NvrtcApi::SYMBOLS, CublasApi::SYMBOLS, CublasLtApi::SYMBOLS] {
        let mut sorted = symbols.to_vec();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), symbols.len(), "{symbols:?}");
    }
}

common::harness::tests!(
    nvrtc_12_loads_with_every_function_we_call,
    nvrtc_13_loads_with_every_function_we_call,
    cublas_12_loads_with_every_function_we_call,
    cublas_13_loads_with_every_function_we_call,
    every_table_names_each_function_once,
);
