//! Every kernel file of every step compiles with NVRTC for each architecture it claims, and ptxas
//! assembles the PTX with no spills. Runs without a GPU; needs NVRTC (and ptxas for the assembly).

mod common;

use gemm_ladder::device::arch::Arch;
use gemm_ladder::device::nvrtc::{self, Output};
use gemm_ladder::error::Error;
use gemm_ladder::run::registry::{KernelFile, Targets};
use gemm_ladder::run::steps;

fn ptxas_required() -> bool {
    std::env::var_os("GEMM_LADDER_REQUIRE_PTXAS").is_some()
}

/// Kernels allowed to spill, each with the bytes it spills and why. A step's own kernels never are;
/// an alternative may be, when it is kept to be measured as built and the book shows its local memory
/// (the alternatives table's registers column).
const MAY_SPILL: &[(&str, u32, &str)] = &[(
    "steps/step11_mxfp8/sm90_fused.cu",
    208,
    "step 11's fully fused design: 128 accumulators and 2 × 32 A fragments leave too few of a consumer's 240 registers for the loop-invariant addresses, spilled outside the main loop",
)];

fn compile_and_assemble(file: &KernelFile, arch: Arch) {
    let ptx = nvrtc::compile(file, arch, Output::Ptx).unwrap_or_else(|e| panic!("{e}"));
    assert!(
        ptx.log.is_empty(),
        "{} for {arch}: NVRTC warnings:\n{}",
        file.path,
        ptx.log
    );
    let text = String::from_utf8_lossy(&ptx.bytes);
    assert!(
        text.contains(&format!(".entry {}(", file.entry)),
        "{}: no entry {} in the PTX",
        file.path,
        file.entry
    );
    let cubin = nvrtc::compile(file, arch, Output::Cubin).unwrap_or_else(|e| panic!("{e}"));
    assert!(
        cubin.bytes.starts_with(b"\x7fELF"),
        "{} for {arch}: NVRTC's cubin is not an ELF file",
        file.path
    );
    match nvrtc::assemble(&ptx.bytes, arch, file.path).unwrap_or_else(|e| panic!("{e}")) {
        Some(report) => {
            println!("{} {}: {}", file.path, arch, report.info.replace('\n', " | "));
            match MAY_SPILL.iter().find(|(path, _, _)| *path == file.path) {
                // Exactly the known amount: more is a regression, less means the entry can go.
                Some((_, bytes, _)) => {
                    assert_eq!(report.spill_bytes, *bytes, "{} on {arch}: spills changed", file.path)
                }
                None => {
                    assert_eq!(report.spill_bytes, 0, "{} spills to local memory on {arch}", file.path);
                    assert_eq!(report.stack_bytes, 0, "{} has a stack frame on {arch}", file.path);
                }
            }
            assert!(
                !report.info.contains("are serialized"),
                "{} on {arch}: ptxas serializes its wgmmas:\n{}",
                file.path,
                report.info
            );
        }
        None => {
            assert!(
                !ptxas_required(),
                "ptxas not found, and GEMM_LADDER_REQUIRE_PTXAS is set"
            );
            eprintln!("{}: assembly skipped (ptxas not found)", file.path);
        }
    }
}

#[test]
fn every_kernel_compiles_and_assembles_for_every_architecture_it_claims() {
    if !common::nvrtc_or_skip("every_kernel_compiles") {
        return;
    }
    let mut compiled = 0;
    for step in steps::ALL {
        for file in step.kernels.iter().chain(step.alternatives.iter().map(|a| &a.kernel)) {
            for &arch in file.targets.claimed_archs() {
                compile_and_assemble(file, arch);
                compiled += 1;
            }
        }
    }
    assert!(compiled >= steps::ALL.len());
}

#[test]
fn the_planted_bug_kernels_compile_too() {
    if !common::nvrtc_or_skip("planted_bug_kernels_compile") {
        return;
    }
    for file in common::broken_kernels() {
        compile_and_assemble(file, Arch::SM90);
    }
}

/// Steps 08–10's Hopper kernels with each planted pipeline bug (tests/kernels/pipeline_bugs.rs)
/// compile and assemble for sm_90a, with no warnings or spills: the hang test runs real kernels.
#[test]
fn the_planted_pipeline_bugs_compile_too() {
    if !common::nvrtc_or_skip("planted_pipeline_bugs_compile") {
        return;
    }
    for (_, _, file) in common::pipeline_bugs::all_planted() {
        assert_eq!(file.targets, Targets::Hopper);
        compile_and_assemble(&file, Arch::SM90A);
    }
}

#[test]
fn a_compile_error_names_the_file_and_line() {
    if !common::nvrtc_or_skip("compile_error_names_file_and_line") {
        return;
    }
    let naive = &steps::step01_naive::STEP.kernels[0];
    let bad = KernelFile {
        path: "steps/step99_typo/kernel.cu",
        source: "#include \"common.cuh\"\nextern \"C\" __global__ void gemm() {\n  undefined_name = 1;\n}\n",
        targets: Targets::AnyGpu,
        entry: "gemm",
        defines: &[],
        max_dynamic_smem: 0,
        launch: naive.launch,
    };
    match nvrtc::compile(&bad, Arch::SM90, Output::Ptx) {
        Err(Error::Compile { file, log, .. }) => {
            assert_eq!(file, "steps/step99_typo/kernel.cu");
            assert!(
                log.contains("steps/step99_typo/kernel.cu:3:"),
                "log lacks file:line:\n{log}"
            );
        }
        Err(other) => panic!("expected a compile error, got {other}"),
        Ok(_) => panic!("a kernel with an undefined name compiled"),
    }
}

#[test]
fn emit_refuses_an_architecture_no_kernel_claims() {
    let file = &steps::step01_naive::STEP.kernels[0];
    assert!(!file.targets.compiles_for(Arch::SM90A));
    assert!(file.targets.compiles_for(Arch::SM90));
    assert!(!Targets::Hopper.compiles_for(Arch::SM100A));
}
