//! Every kernel file of every step compiles with NVRTC for each architecture it claims, and ptxas
//! assembles the PTX with no spills. Runs without a GPU; needs NVRTC (and ptxas for the assembly):
//! without them, the tests that need them are reported as ignored (tests/common/harness.rs).

mod common;

use common::Ran;
use std::path::Path;

use gemm_ladder::device::arch::Arch;
use gemm_ladder::device::nvrtc::{self, Output};
use gemm_ladder::error::Error;
use gemm_ladder::run::registry::{KernelFile, KernelText, Targets, Twin};
use gemm_ladder::run::steps;

/// Kernels allowed to spill, each with the most bytes it may spill and why. A step's own kernels do
/// not, unless a measurement shows the spill-free build to be slower (then the chapter says so); an
/// alternative may, when it is kept to be measured as built and the book shows its local memory (the
/// alternatives table's registers column).
const MAY_SPILL: &[(&str, u32, &str)] = &[
    (
        "steps/step11_mxfp8/alternatives/sm90_fused.cu",
        208,
        "step 11's fully fused design: 128 accumulators and 2 × 32 A fragments leave too few of a consumer's 240 registers for the loop-invariant addresses, spilled outside the main loop",
    ),
    (
        "steps/step11_mxfp8/sm80.cu",
        160,
        "step 11's sm80 twin: 128 accumulators, one k16 slice's converted B and the MX block's 16 factors fill the 255 registers of a block of 256 threads; loop-invariant scalars of the copies and the epilogue are spilled (sm_80: 136 bytes stored and loaded), about one reload a K tile in the main loop",
    ),
    (
        "steps/step11_mxfp8/alternatives/sm80_fp8_mma.cu",
        160,
        "step 11's sm80 design (a): the sm80 twin's 128 accumulators beside a block's A fragments, its 16 fp32 factors and each MMA's fresh partial sums fill the 255 registers; loop-invariant scalars of the schedule and the copies are spilled outside the MMAs (ptxas 13: 112 bytes stored and loaded at most on sm_89, 132 in the three-stage build on sm_90)",
    ),
    (
        "steps/step10_persistent/sm80.cu",
        136,
        "step 10's sm80 twin: 128 accumulators, the next slice's fragments (held across K tiles and tiles, CUTLASS's double buffer) and the two walks of the work list fill the 255 registers of a block of 256 threads; a few loop-invariant scalars are spilled outside the main loop (as ptxas 13 counts them: 120 bytes for sm_90's three-stage build, 136 for sm_120's two-stage one). The spill-free build measured, edff5c7's loop without the fragment double buffer, ran at 0.58 of the ldmatrix-fed ceiling against this loop's 0.78 (H100, 4096³, development runs)",
    ),
    (
        "steps/step10_persistent/sm90.cu",
        320,
        "step 10: 128 accumulators and a held half tile leave a consumer few of its 232 registers, and the producer has 40; a few loop-invariant scalars are spilled outside the main loop. The spill-free builds measured (chapter 10b) made the producer's K-tile count signed and needed 2.5 % more cycles at 4096³",
    ),
];

/// Kernels allowed to spill only when built by CUDA 12's NVRTC and ptxas (12.9), which allocate
/// registers a little differently from 13's: each with the most bytes and why that is acceptable.
const MAY_SPILL_WITH_CUDA_12: &[(&str, u32, &str)] = &[
    (
        "steps/step11_mxfp8/alternatives/sm90_promote.cu",
        8,
        "step 11's per-k32 promotion alternative, measured as built: ptxas 12.9 spills one 8-byte value its \
         13 keeps in registers; the step's own kernel does not spill",
    ),
    (
        "steps/step11_mxfp8/alternatives/sm80_block_scaled.cu",
        40,
        "step 11's sm80 design (c), assembled for sm_120a only and never run here: ptxas 12.9 spills 40 \
         bytes (and keeps a 16-byte frame) of the 255 registers its 128 accumulators, fragments and scale \
         registers fill, where ptxas 13 spills none",
    ),
];

/// The spill allowance of `path` with the NVRTC loaded: [`MAY_SPILL`], and with CUDA 12 also
/// [`MAY_SPILL_WITH_CUDA_12`].
fn spill_allowance(path: &str) -> Option<u32> {
    let cuda_12 = nvrtc::api().is_ok_and(|nvrtc| nvrtc.version.major == 12);
    MAY_SPILL
        .iter()
        .chain(MAY_SPILL_WITH_CUDA_12.iter().filter(|_| cuda_12))
        .find(|(p, _, _)| *p == path)
        .map(|(_, bytes, _)| *bytes)
}

/// Every spill allowance names a kernel file that exists: one left behind by a move would silently stop
/// allowing anything (as the CUDA 12 one did when step 11's alternatives moved to `alternatives/`).
fn every_spill_allowance_names_a_kernel_file() -> Ran {
    for (path, _, _) in MAY_SPILL.iter().chain(MAY_SPILL_WITH_CUDA_12) {
        assert!(
            Path::new(env!("CARGO_MANIFEST_DIR")).join(path).is_file(),
            "{path}: no such kernel file"
        );
    }
    Ok(())
}

/// Compiles `file` for `arch` with NVRTC and checks the PTX and cubin; assembles the PTX with ptxas
/// and checks its report. Returns whether ptxas was there to assemble it.
fn compile_and_assemble(file: &KernelFile, arch: Arch) -> bool {
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
            // A planted kernel (`path+bug`) is never timed: only that it assembles matters.
            let planted = file.path.contains('+');
            match spill_allowance(file.path) {
                _ if planted => {}
                // At most the known amount: more is a regression.
                Some(bytes) => assert!(
                    report.spill_bytes <= bytes,
                    "{} ({:?}) on {arch}: spills {} bytes, more than {bytes}",
                    file.path,
                    file.defines,
                    report.spill_bytes
                ),
                None => {
                    assert_eq!(
                        report.spill_bytes, 0,
                        "{} ({:?}) spills to local memory on {arch}",
                        file.path, file.defines
                    );
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
        None => return false,
    }
    true
}

fn every_kernel_compiles_and_assembles_for_every_architecture_it_claims() -> Ran {
    common::nvrtc()?;
    // Which CUDA did this (CI runs the file once with each major alone).
    let nvrtc = nvrtc::api().unwrap_or_else(|e| panic!("{e}"));
    println!(
        "NVRTC {} ({}); ptxas: {}",
        nvrtc.version_text,
        nvrtc.path.display(),
        common::ptxas_version().unwrap_or_else(|| "not found".into())
    );
    let mut compiled = 0;
    let mut assembled = true;
    for step in steps::ALL {
        for file in step.kernels.iter().chain(step.alternatives.iter().map(|a| &a.kernel)) {
            for &arch in file.targets.claimed_archs() {
                assembled &= compile_and_assemble(file, arch);
                compiled += 1;
            }
        }
    }
    assert!(compiled >= steps::ALL.len());
    common::assembled(assembled)
}

/// Steps 01–03 round to bf16 with the `cvt` from sm_80 on, and by hand for the T4 (sm_75) or when
/// GEMM_LADDER_SOFT_BF16 forces it (tests/gpu.rs compares the two on a GPU; tests/soft_bf16.rs the
/// rounding itself on the CPU).
fn steps_01_to_03_round_by_hand_on_the_t4_and_when_forced() -> Ran {
    common::nvrtc()?;
    for step in steps::ALL.iter().filter(|s| s.id <= 3) {
        let file = &step.kernels[0];
        let ptx_of = |file: &KernelFile, arch: Arch| {
            let ptx = nvrtc::compile(file, arch, Output::Ptx).unwrap_or_else(|e| panic!("{e}"));
            String::from_utf8_lossy(&ptx.bytes).into_owned()
        };
        assert!(
            ptx_of(file, Arch::SM80).contains("cvt.rn.bf16"),
            "{}: no cvt on sm_80",
            file.path
        );
        assert!(
            !ptx_of(file, Arch::SM75).contains("cvt.rn.bf16"),
            "{}: a cvt to bf16 on sm_75",
            file.path
        );
        let soft = common::with_soft_bf16(file);
        assert!(
            !ptx_of(&soft, Arch::SM90).contains("cvt.rn.bf16"),
            "{}: a cvt despite the define",
            file.path
        );
    }
    Ok(())
}

fn the_planted_bug_kernels_compile_too() -> Ran {
    common::nvrtc()?;
    let mut assembled = true;
    for file in common::broken_kernels() {
        assembled &= compile_and_assemble(file, Arch::SM90);
    }
    let hung = common::hung_wait_kernel();
    let ptx = nvrtc::compile(hung, Arch::SM90A, Output::Ptx).unwrap_or_else(|e| panic!("{e}"));
    assert!(ptx.log.is_empty(), "{}: NVRTC warnings:\n{}", hung.path, ptx.log);
    let text = String::from_utf8_lossy(&ptx.bytes);
    assert!(
        text.contains("vprintf") && text.contains("trap;"),
        "{}: no report and trap",
        hung.path
    );
    assembled &= nvrtc::assemble(&ptx.bytes, Arch::SM90A, hung.path)
        .unwrap_or_else(|e| panic!("{e}"))
        .is_some();
    common::assembled(assembled)
}

/// Steps 08–10's Hopper kernels with each planted pipeline bug (tests/kernels/pipeline_bugs.rs)
/// compile and assemble for sm_90a, with no warnings or spills: the hang test runs real kernels.
fn the_planted_pipeline_bugs_compile_too() -> Ran {
    common::nvrtc()?;
    let mut assembled = true;
    for (_, _, file) in common::pipeline_bugs::all_planted() {
        assert_eq!(file.targets, Targets::Hopper);
        assembled &= compile_and_assemble(&file, Arch::SM90A);
    }
    common::assembled(assembled)
}

fn a_compile_error_names_the_file_and_line() -> Ran {
    common::nvrtc()?;
    let naive = &steps::step01_naive::STEP.kernels[0];
    let bad = KernelFile {
        path: "steps/step99_typo/kernel.cu",
        text: KernelText::Given(
            "#include \"common.cuh\"\nextern \"C\" __global__ void gemm() {\n  undefined_name = 1;\n}\n",
        ),
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
    Ok(())
}

fn emit_compiles_a_kernel_only_for_the_architectures_it_can_run_on() {
    // A portable kernel compiles for every architecture from sm_75 (the T4) on, the arch-specific
    // ones too; Volta (sm_70) is older than NVRTC 13's oldest target.
    let file = &steps::step01_naive::STEP.kernels[0];
    for arch in [Arch::SM75, Arch::SM80, Arch::SM90, Arch::SM90A, Arch::SM100A] {
        assert!(file.targets.compiles_for(arch), "{arch}");
    }
    assert!(!file.targets.compiles_for(Arch::new(7, 0, false)));
    // The sm80 twins need cp.async, ldmatrix and bf16 mma.sync: 8.0.
    assert!(!Targets::Ampere.compiles_for(Arch::SM75));
    assert!(!Targets::Hopper.compiles_for(Arch::SM100A));
    assert!(!Targets::Blackwell.compiles_for(Arch::SM90));
}

/// The waits a Blackwell kernel of steps 07–11 may call: mbarrier_sm100.cuh's, each naming its barrier.
const NAMED_WAITS: &[&str] = &[
    "mbarrier_wait_cta",
    "mbarrier_wait_relaxed_cluster",
    "mbarrier_wait_acquire_cluster",
];

/// The pair kernels (Blackwell, steps 07–11): the ones whose waits go through mbarrier_sm100.cuh.
fn blackwell_pair_kernels() -> impl Iterator<Item = &'static KernelFile> {
    steps::ALL
        .iter()
        .filter(|step| step.id >= 7)
        .flat_map(|step| step.kernels.iter())
        .filter(|file| file.targets == Targets::Blackwell)
}

/// `source` without its `//` comments (the kernels use no block comments).
fn code_of(source: &str) -> String {
    source
        .lines()
        .map(|line| line.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every wait of steps 07–11's Blackwell kernels is one of mbarrier_sm100.cuh's named forms, with a
/// name for the bring-up build's report: a plain `mbarrier_wait` would spin without bound there.
fn blackwell_pair_kernels_wait_only_through_the_named_waits() {
    let mut kernels = 0;
    for file in blackwell_pair_kernels() {
        let code = code_of(file.source());
        assert!(
            code.contains("#include \"mbarrier_sm100.cuh\""),
            "{} does not include mbarrier_sm100.cuh",
            file.path
        );
        let mut waits = 0;
        for (at, _) in code.match_indices("mbarrier_wait") {
            let call = &code[at..];
            let open = call.find('(').expect("a call has arguments");
            let name = &call[..open];
            assert!(
                NAMED_WAITS.contains(&name),
                "{}: `{name}` is not one of the named waits {NAMED_WAITS:?}",
                file.path
            );
            let arguments = &call[open..call.find(';').expect("a call ends with ;")];
            assert!(
                arguments.contains('"'),
                "{}: `{name}{arguments}` names no barrier",
                file.path
            );
            waits += 1;
        }
        assert!(waits > 0, "{}: no waits found", file.path);
        kernels += 1;
    }
    assert_eq!(kernels, 5, "steps 07–11 have one Blackwell kernel each");
}

/// The bring-up build of steps 07–11's Blackwell kernels (GEMM_LADDER_DEBUG_HANG, mbarrier_sm100.cuh)
/// compiles and assembles for sm_100a without spills, and has the timer, the report and the trap;
/// the measured build has none of them.
fn blackwell_pair_kernels_assemble_with_the_bounded_waits_too() -> Ran {
    common::nvrtc()?;
    let mut assembled = true;
    for file in blackwell_pair_kernels() {
        let plain = nvrtc::compile(file, Arch::SM100A, Output::Ptx).unwrap_or_else(|e| panic!("{e}"));
        let plain = String::from_utf8_lossy(&plain.bytes);
        for word in ["globaltimer", "vprintf", "trap;"] {
            assert!(!plain.contains(word), "{}: `{word}` in the measured build", file.path);
        }
        let mut defines = file.defines.to_vec();
        defines.push(("GEMM_LADDER_DEBUG_HANG", 5));
        let bounded = KernelFile {
            defines: Box::leak(defines.into_boxed_slice()),
            ..*file
        };
        let ptx = nvrtc::compile(&bounded, Arch::SM100A, Output::Ptx).unwrap_or_else(|e| panic!("{e}"));
        assert!(ptx.log.is_empty(), "{}: NVRTC warnings:\n{}", file.path, ptx.log);
        let text = String::from_utf8_lossy(&ptx.bytes);
        for word in ["globaltimer", "vprintf", "trap;"] {
            assert!(text.contains(word), "{}: no `{word}` in the bring-up build", file.path);
        }
        match nvrtc::assemble(&ptx.bytes, Arch::SM100A, file.path).unwrap_or_else(|e| panic!("{e}")) {
            Some(report) => assert_eq!(report.spill_bytes, 0, "{}: the bring-up build spills", file.path),
            None => assembled = false,
        }
    }
    common::assembled(assembled)
}

/// flag.cuh's wait for a flag in global memory (step 10's stream-K fixup) is bounded only in the
/// bring-up build (GEMM_LADDER_DEBUG_HANG): that build has the timer, the report and the trap, the
/// measured build none of them, and both assemble for sm_90a without spills.
fn the_flag_wait_is_bounded_only_in_the_bring_up_build() -> Ran {
    common::nvrtc()?;
    let mut assembled = true;
    for bounded in [false, true] {
        let file = common::hung_flag_kernel(bounded);
        let ptx = nvrtc::compile(file, Arch::SM90A, Output::Ptx).unwrap_or_else(|e| panic!("{e}"));
        assert!(ptx.log.is_empty(), "{}: NVRTC warnings:\n{}", file.path, ptx.log);
        let text = String::from_utf8_lossy(&ptx.bytes);
        assert!(text.contains("ld.acquire.gpu"), "{}: no acquire load", file.path);
        for word in ["globaltimer", "vprintf", "trap;"] {
            assert_eq!(
                text.contains(word),
                bounded,
                "{} (bounded: {bounded}): `{word}`",
                file.path
            );
        }
        match nvrtc::assemble(&ptx.bytes, Arch::SM90A, file.path).unwrap_or_else(|e| panic!("{e}")) {
            Some(report) => assert_eq!(report.spill_bytes, 0, "{} (bounded: {bounded}) spills", file.path),
            None => assembled = false,
        }
    }
    common::assembled(assembled)
}

/// The timeline stamps (`--timeline`, steps 08–11 on Hopper) are empty macros in the plain build: its
/// PTX has no trace of them, while the instrumented build reads the timer and knows the buffer, and
/// compiles to a cubin.
fn timeline_stamps_are_only_in_the_instrumented_build() -> Ran {
    use gemm_ladder::evidence::timeline::instrumented;
    common::nvrtc()?;
    for id in [8u8, 9, 10, 11] {
        let file = steps::get(id)
            .unwrap()
            .kernels
            .iter()
            .find(|k| k.targets == Targets::Hopper)
            .unwrap();
        let arch = Arch::SM90A;
        let plain = String::from_utf8(nvrtc::compile(file, arch, Output::Ptx).unwrap().bytes).unwrap();
        assert!(
            !plain.contains("globaltimer") && !plain.contains("timeline_"),
            "step{id:02}"
        );
        let inst = instrumented(file);
        let stamped = String::from_utf8(nvrtc::compile(&inst, arch, Output::Ptx).unwrap().bytes).unwrap();
        assert!(
            stamped.contains("globaltimer") && stamped.contains("timeline_records"),
            "step{id:02}"
        );
        nvrtc::compile(&inst, arch, Output::Cubin).unwrap_or_else(|e| panic!("step{id:02}: {e}"));
    }
    Ok(())
}

/// The sm80 twins (issues 26 and 31): steps 04–11 each have one, it is claimed (so compiled and assembled above)
/// for every family a student's GPU may be, A100 to RTX 50, and its shared memory fits the 99 KiB a
/// block gets on RTX 40/50 and L4 parts.
fn every_sm80_twin_is_claimed_for_the_gpus_students_own_and_fits_99_kib() {
    let students = [
        Arch::new(8, 0, false),
        Arch::new(8, 6, false),
        Arch::new(8, 9, false),
        Arch::new(9, 0, false),
        Arch::new(12, 0, false),
    ];
    for id in 4..=11u8 {
        let step = steps::get(id).unwrap();
        let file = step
            .file_of_twin(Twin::Sm80)
            .unwrap_or_else(|| panic!("step{id:02} has no sm80 twin"));
        assert!(file.path.ends_with("/sm80.cu"), "{}", file.path);
        for arch in students {
            assert!(file.targets.claimed_archs().contains(&arch), "{}: {arch}", file.path);
        }
        assert!(
            file.max_dynamic_smem <= 99 * 1024,
            "{} asks for {} bytes of shared memory",
            file.path,
            file.max_dynamic_smem
        );
        // Listed after the Hopper and Blackwell files, so that those GPUs keep their own.
        assert_eq!(step.kernels.last().map(|k| k.path), Some(file.path));
    }
}

/// Which kernel a GPU gets: its own twin by default (sm80 on 8.x and 12.x), `--twin` overriding,
/// steps 01–03 the same one file under any twin, and nothing for a twin a step lacks or a GPU older
/// than sm_80.
fn each_gpu_gets_its_own_twin_unless_another_is_chosen() {
    let path = |id: u8, cc: (u32, u32), twin: Option<Twin>| {
        steps::get(id)
            .unwrap()
            .kernel_of_twin(cc.0, cc.1, twin)
            .map(|k| k.path.rsplit('/').next().unwrap().to_string())
    };
    let name = |n: &str| Some(n.to_string());
    assert_eq!(path(4, (9, 0), None), name("sm90.cu"));
    assert_eq!(path(4, (10, 0), None), name("sm100.cu"));
    for cc in [(8, 0), (8, 6), (8, 9), (12, 0), (12, 1)] {
        assert_eq!(path(7, cc, None), name("sm80.cu"), "{cc:?}");
        assert_eq!(path(7, cc, Some(Twin::Hopper)), None, "{cc:?}");
    }
    assert_eq!(path(7, (9, 0), Some(Twin::Sm80)), name("sm80.cu"));
    assert_eq!(path(3, (9, 0), Some(Twin::Sm80)), name("kernel.cu"));
    assert_eq!(path(4, (7, 5), Some(Twin::Sm80)), None);
    assert_eq!(path(4, (7, 5), None), None);
    assert_eq!(
        Twin::of_kernel_path("steps/step05_swizzle128/sm80.cu"),
        Some(Twin::Sm80)
    );
    assert_eq!(
        Twin::of_kernel_path("steps/step11_mxfp8/alternatives/sm90_promote.cu"),
        Some(Twin::Hopper)
    );
    assert_eq!(Twin::of_kernel_path("steps/step01_naive/kernel.cu"), None);
    // The refusal on a T4 names what the step needs, in one line.
    let needs = steps::get(4).unwrap().needs(None);
    assert!(needs.contains("8.0 or newer") && !needs.contains('\n'), "{needs}");
}

/// Step 11's sm80 designs (a) and (c) (issue 31, item 4) are claimed, and so compiled and assembled
/// above, for exactly the GPUs with their instructions: fp8 `mma.sync` from sm_89 on (ptxas refuses it
/// for sm_80 and sm_86), the block-scaled `mma.sync` for the arch-specific sm_120a only (assembled, not
/// run here). A run of the twin times each where the GPU serves it, and elsewhere says in one line
/// that it skipped it.
fn the_sm80_mx_designs_are_claimed_and_timed_only_where_their_instructions_are() {
    let step = steps::get(11).unwrap();
    let twin = step.file_of_twin(Twin::Sm80).unwrap();
    let design = |name: &str| step.alternatives.iter().find(|a| a.name == name).unwrap().kernel;
    let (fp8, block_scaled) = (design("sm80-fp8-mma"), design("sm80-block-scaled"));
    assert_eq!(fp8.targets.claimed_archs(), &[Arch::SM89, Arch::SM90, Arch::SM120]);
    assert_eq!(block_scaled.targets.claimed_archs(), &[Arch::SM120A]);
    assert!(!fp8.targets.compiles_for(Arch::SM86) && fp8.targets.compiles_for(Arch::SM90A));
    assert!(!block_scaled.targets.compiles_for(Arch::SM120) && !block_scaled.targets.compiles_for(Arch::SM100A));
    assert_eq!(block_scaled.targets.arch_for_device(12, 1), Arch::new(12, 1, true));
    for (cc, timed) in [
        ((8, 0), &[][..]),
        ((8, 6), &[][..]),
        ((8, 9), &["sm80-fp8-mma"][..]),
        ((9, 0), &["sm80-fp8-mma"][..]),
        ((12, 0), &["sm80-fp8-mma", "sm80-block-scaled"][..]),
    ] {
        let names: Vec<&str> = step.alternatives_beside(twin, cc.0, cc.1).map(|a| a.name).collect();
        assert_eq!(names, timed, "{cc:?}");
        let skipped: Vec<String> = step.alternatives_skipped(twin, cc.0, cc.1).collect();
        assert_eq!(skipped.len(), 2 - timed.len(), "{cc:?}: {skipped:?}");
        for line in &skipped {
            assert!(
                line.starts_with("step11: alternative sm80-") && !line.contains('\n'),
                "{line}"
            );
        }
    }
    // The Hopper kernel's run neither times nor mentions the sm80 designs.
    let hopper = step.file_of_twin(Twin::Hopper).unwrap();
    assert!(step
        .alternatives_beside(hopper, 9, 0)
        .all(|a| !a.name.starts_with("sm80-")));
    assert_eq!(step.alternatives_skipped(hopper, 9, 0).count(), 0);
    // The block-scaled design's refusal says it was never run.
    assert!(block_scaled.targets.describe().contains("assembled only"));
}

/// The deeper rings of steps 08–11's sm80 twins (their launches take them where a block may have
/// the shared memory: 163 KiB on A100, A30, Orin; 227 KiB on H100, H200) assemble, without spills
/// beyond `MAY_SPILL`'s, for those GPUs' archs.
fn the_sm80_twins_deep_rings_assemble_for_the_gpus_that_hold_them() -> Ran {
    use gemm_ladder::run::steps::{step08_pipeline, step09_epilogue_double_buffer, step10_persistent, step11_mxfp8};
    common::nvrtc()?;
    let mut assembled = true;
    let a100 = [Arch::SM80, Arch::SM90];
    let hopper_only = [Arch::SM90];
    for (file, archs) in [
        (&step08_pipeline::sm80::DEEP_KERNEL, &a100[..]),
        (&step08_pipeline::sm80::SPECIALISED_DEEP, &a100[..]),
        (&step09_epilogue_double_buffer::sm80::DEEP_KERNEL, &a100[..]),
        (&step10_persistent::sm80::DEEP_KERNEL, &a100[..]),
        // Three stages of e4m3 and their scales with the fp32 chunks: 164.5 KiB, an H100's or H200's.
        (&step11_mxfp8::sm80::DEEP_KERNEL, &hopper_only[..]),
        (&step11_mxfp8::sm80::FP8_MMA_DEEP, &hopper_only[..]),
    ] {
        let limit = if archs.contains(&Arch::SM80) { 163 } else { 227 } * 1024;
        assert!(file.max_dynamic_smem <= limit, "{}", file.path);
        for &arch in archs {
            assembled &= compile_and_assemble(file, arch);
        }
    }
    common::assembled(assembled)
}

/// The `mma.sync` ceiling kernels assemble for every GPU the sm80 twins serve, with no spills.
fn the_mma_sync_ceiling_kernels_assemble_for_the_sm80_twins_gpus() -> Ran {
    use gemm_ladder::run::ceiling;
    common::nvrtc()?;
    let mut assembled = true;
    for file in [&ceiling::REGISTERS, &ceiling::LDMATRIX] {
        for &arch in file.targets.claimed_archs() {
            assembled &= compile_and_assemble(file, arch);
        }
    }
    common::assembled(assembled)
}

common::harness::tests!(
    every_spill_allowance_names_a_kernel_file,
    steps_01_to_03_round_by_hand_on_the_t4_and_when_forced,
    every_sm80_twin_is_claimed_for_the_gpus_students_own_and_fits_99_kib,
    each_gpu_gets_its_own_twin_unless_another_is_chosen,
    the_sm80_mx_designs_are_claimed_and_timed_only_where_their_instructions_are,
    the_mma_sync_ceiling_kernels_assemble_for_the_sm80_twins_gpus,
    the_sm80_twins_deep_rings_assemble_for_the_gpus_that_hold_them,
    every_kernel_compiles_and_assembles_for_every_architecture_it_claims,
    the_planted_bug_kernels_compile_too,
    the_planted_pipeline_bugs_compile_too,
    a_compile_error_names_the_file_and_line,
    emit_compiles_a_kernel_only_for_the_architectures_it_can_run_on,
    blackwell_pair_kernels_wait_only_through_the_named_waits,
    blackwell_pair_kernels_assemble_with_the_bounded_waits_too,
    the_flag_wait_is_bounded_only_in_the_bring_up_build,
    timeline_stamps_are_only_in_the_instrumented_build,
);
