//! The sm80 twins (`sm80.cu`, issue 26) on a GPU, whatever its family: every session of this file runs
//! the sm80 twin, as `stepNN --twin sm80` does, so each twin is verified against the same
//! twin's previous step (step 04's against step 03) and cuBLAS, at the shapes every step is verified
//! at and at K = 8; the mma.sync ceilings measure in the twin's own loop; `--profile` of a twin
//! profiles that twin; a twin the GPU does not have is refused in one line. Without a GPU each test is reported as ignored, with the reason.

mod common;

use common::Ran;

use gemm_ladder::check::problem::Shape;
use gemm_ladder::run::registry::Twin;
use gemm_ladder::run::session::{RunOptions, Session};
use std::sync::Mutex;

/// One GPU test at a time: they share the device and its memory.
static GPU: Mutex<()> = Mutex::new(());

/// The twin steps of issue 26's half of the ladder, and issue 31's steps 08–10.
const TWIN_STEPS: [u8; 7] = [4, 5, 6, 7, 8, 9, 10];

fn every_sm80_twin_is_verified_against_its_own_predecessor_at_square_and_ragged_shapes() -> Ran {
    let _one = GPU.lock().unwrap_or_else(|e| e.into_inner());
    let mut gpu = common::gpu()?;
    let check_only = RunOptions {
        check_only: true,
        iters: None,
    };
    let mut shapes = vec![Shape::square(512), Shape::square(1024)];
    shapes.extend_from_slice(common::RAGGED);
    // K = 8, one k16 slice half zero-filled, at sizes that span several blocks.
    shapes.extend([Shape::new(200, 190, 8), Shape::new(513, 1000, 8)]);
    for (i, &shape) in shapes.iter().enumerate() {
        let mut session = Session::new(gpu, shape, 2600 + i as u64)
            .unwrap_or_else(|e| panic!("{e}"))
            .with_twin(Some(Twin::Sm80));
        for id in TWIN_STEPS {
            let outcome = session
                .run_step(id, &check_only)
                .unwrap_or_else(|e| panic!("step{id:02} (sm80) {shape}: {e}"));
            assert!(
                outcome.checks.len() >= 2 && outcome.checks.iter().all(|c| c.passed),
                "step{id:02} (sm80) {shape}: {:?}",
                outcome.checks
            );
            // The kernels compared were the sm80 twins, this step's and its predecessor's.
            for step in [id, id - 1] {
                let path = session.kernel(step).unwrap_or_else(|e| panic!("{e}")).file.path;
                let expected = if step == 3 { "kernel.cu" } else { "sm80.cu" };
                assert!(path.ends_with(expected), "step{id:02}'s run loaded {path}");
            }
            println!(
                "step{id:02} (sm80) {shape}: {:?}",
                outcome.checks.iter().map(|c| c.rel_fro).collect::<Vec<_>>()
            );
        }
        gpu = session.into_gpu();
    }
    Ok(())
}

/// A timed sm80 run carries the GPU's mma.sync ceilings, timed in its own loop: positive rates, the
/// ldmatrix-fed loop no faster than the instruction alone (it does the same multiplies and more).
fn an_sm80_run_records_the_mma_sync_ceilings() -> Ran {
    let _one = GPU.lock().unwrap_or_else(|e| e.into_inner());
    let gpu = common::gpu()?;
    let mut session = Session::new(gpu, Shape::square(2048), 26)
        .unwrap_or_else(|e| panic!("{e}"))
        .with_twin(Some(Twin::Sm80));
    let timed = RunOptions {
        check_only: false,
        iters: Some(20),
    };
    let outcome = session.run_step(7, &timed).unwrap_or_else(|e| panic!("{e}"));
    let record = outcome.record.expect("a timed run makes a record");
    let ceiling = record
        .mma_sync_ceiling
        .expect("an sm80 twin's record carries the ceiling");
    let (registers, ldmatrix) = (ceiling.registers.tflops, ceiling.ldmatrix.tflops);
    assert!(
        registers.is_finite() && registers > 0.0 && ldmatrix > 0.0,
        "{ceiling:?}"
    );
    assert!(ldmatrix <= registers * 1.05, "{ceiling:?}");
    // Timed in the twin's own loop: beside the same cuBLAS, at the same clocks.
    assert!(ceiling.in_step_loop, "{ceiling:?}");
    assert_eq!(ceiling.cublas_bf16, record.cublas_bf16);
    assert_eq!(ceiling.clocks, record.clocks);
    assert!(record.kernel.ends_with("sm80.cu"), "{}", record.kernel);
    println!(
        "step07 (sm80) 2048³: {:.1} TFLOPS; ceilings {registers:.1} (registers), {ldmatrix:.1} (ldmatrix)",
        record.time.tflops
    );
    Ok(())
}

/// `--profile` of a twin profiles that twin: the profiling child runs step 05's sm80 kernel (an
/// `ldmatrix` kernel, so its shared-memory loads are not zero, where the Hopper kernel's wgmma reads
/// show none), says so, and ncu's time for its one launch is within 15 % of the median the twin's loop
/// timed. Ignored, with the reason, where Nsight Compute is not installed.
fn the_profile_of_an_sm80_twin_is_the_twin_s_own() -> Ran {
    use gemm_ladder::evidence::{self, ClockControl};
    let _one = GPU.lock().unwrap_or_else(|e| e.into_inner());
    let gpu = common::gpu()?;
    if evidence::find_ncu().is_none() {
        return Err(common::Skip(
            "needs Nsight Compute (ncu on PATH or under /opt/nvidia/nsight-compute), not found here".into(),
        ));
    }
    let seed = 505;
    let mut session = Session::new(gpu, Shape::square(4096), seed)
        .unwrap_or_else(|e| panic!("{e}"))
        .with_twin(Some(Twin::Sm80));
    let timed = RunOptions {
        check_only: false,
        iters: Some(50),
    };
    let outcome = session.run_step(5, &timed).unwrap_or_else(|e| panic!("{e}"));
    drop(session);
    let mut records = vec![outcome.record.expect("a timed run makes a record")];
    // The profiling child is a step binary (this test's own program is not one).
    let child = std::path::Path::new(env!("CARGO_BIN_EXE_step05"));
    evidence::profile_records_with(child, &mut records, seed, ClockControl::None);
    let record = &records[0];
    assert!(
        record.kernel.ends_with("step05_swizzle128/sm80.cu"),
        "{}",
        record.kernel
    );
    let profile = record.profile.as_ref().expect("a profiled record");
    let ncu = profile
        .ncu
        .as_ref()
        .unwrap_or_else(|| panic!("no counters: {:?}", profile.note));
    assert_eq!(ncu.kernel_file.as_deref(), Some(record.kernel.as_str()));
    let wavefronts = ncu.get("smem_ld_wavefronts").expect("shared-load wavefronts measured");
    let ncu_ms = ncu.get("duration_ns").expect("ncu's kernel time") / 1e6;
    let timed_ms = record.time.median_ms;
    println!(
        "step05 (sm80) 4096³: shared loads {wavefronts:.4e} wavefronts ({:?} of them bank conflicts); \
         {ncu_ms:.4} ms under ncu, {timed_ms:.4} ms timed median ({:+.1} %)",
        ncu.get("smem_ld_conflicts"),
        100.0 * (ncu_ms / timed_ms - 1.0)
    );
    assert!(
        wavefronts > 0.0,
        "an ldmatrix kernel loads from shared memory: {wavefronts}"
    );
    assert!(
        (ncu_ms / timed_ms - 1.0).abs() <= 0.15,
        "ncu's {ncu_ms} ms against the timed median {timed_ms} ms: not the kernel that was timed?"
    );
    Ok(())
}

/// `stepNN --twin` for a twin this GPU cannot run (every step from 04 on has all three twins): one
/// line naming what it needs, exit status 2, no panic.
fn a_twin_the_gpu_cannot_run_is_refused_in_one_line() -> Ran {
    let _one = GPU.lock().unwrap_or_else(|e| e.into_inner());
    let gpu = common::gpu()?;
    let other = if (gpu.major, gpu.minor) == (10, 0) {
        "hopper"
    } else {
        "blackwell"
    };
    drop(gpu);
    for (binary, twin, words) in [
        (env!("CARGO_BIN_EXE_step04"), other, "needs a"),
        (env!("CARGO_BIN_EXE_step11"), other, "needs a"),
    ] {
        let out = std::process::Command::new(binary)
            .args(["--twin", twin, "--check", "--size", "256", "--seed", "1"])
            .output()
            .expect("running a step");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{binary} --twin {twin}: {stderr}");
        let refusal: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
        assert!(
            refusal.len() == 1 && refusal[0].contains(words) && !stderr.contains("panicked"),
            "{binary} --twin {twin}: {stderr}"
        );
    }
    Ok(())
}

/// A record describes the compilation that ran: where the GPU holds the deeper ring, steps 08–11's
/// twins launch it (`run::ring::deeper`), and their records (and step 08's specialised alternative's)
/// carry its shared memory, registers and spills, with the ring's depth in the plan; elsewhere the
/// registered ring's. The records once kept the registered two-stage kernel's figures whatever ran.
fn an_sm80_record_describes_the_ring_that_ran() -> Ran {
    use cudarc::driver::sys::CUdevice_attribute as DevAttr;
    use cudarc::driver::sys::CUfunction_attribute_enum as FuncAttr;
    use gemm_ladder::run::registry::KernelFile;
    use gemm_ladder::run::session;
    use gemm_ladder::run::steps::{step08_pipeline, step09_epilogue_double_buffer, step10_persistent, step11_mxfp8};
    let _one = GPU.lock().unwrap_or_else(|e| e.into_inner());
    let gpu = common::gpu()?;
    let optin = gpu
        .ctx
        .attribute(DevAttr::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)
        .expect("the shared memory a block may have") as u32;
    // What a record of `deep`'s step must say on this GPU: `deep` where it fits, else `shallow`.
    let expected = |shallow: &KernelFile, deep: &KernelFile| {
        let file = if optin >= deep.max_dynamic_smem {
            *deep
        } else {
            *shallow
        };
        let (function, _) = session::load_file(&gpu, &file).unwrap_or_else(|e| panic!("{e}"));
        let attribute = |a: FuncAttr| function.get_attribute(a).ok().map(|v| v as u32);
        let stages = file.define("STAGES").expect("a ring's depth");
        (
            file.max_dynamic_smem,
            attribute(FuncAttr::CU_FUNC_ATTRIBUTE_NUM_REGS),
            attribute(FuncAttr::CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES),
            stages,
        )
    };
    let twins = [
        (
            8,
            expected(&step08_pipeline::sm80::KERNEL, &step08_pipeline::sm80::DEEP_KERNEL),
        ),
        (
            9,
            expected(
                &step09_epilogue_double_buffer::sm80::KERNEL,
                &step09_epilogue_double_buffer::sm80::DEEP_KERNEL,
            ),
        ),
        (
            10,
            expected(&step10_persistent::sm80::KERNEL, &step10_persistent::sm80::DEEP_KERNEL),
        ),
        (
            11,
            expected(&step11_mxfp8::sm80::KERNEL, &step11_mxfp8::sm80::DEEP_KERNEL),
        ),
    ];
    let specialised = step08_pipeline::sm80::SPECIALISED_DEEP.max_dynamic_smem;
    let specialised = if optin >= specialised {
        specialised
    } else {
        step08_pipeline::sm80::smem_bytes(step08_pipeline::sm80::SHALLOW)
    };
    let mut session = Session::new(gpu, Shape::square(1024), 31)
        .unwrap_or_else(|e| panic!("{e}"))
        .with_twin(Some(Twin::Sm80));
    let timed = RunOptions {
        check_only: false,
        iters: Some(3),
    };
    for (id, (smem, registers, local, stages)) in twins {
        let outcome = session.run_step(id, &timed).unwrap_or_else(|e| panic!("{e}"));
        let record = outcome.record.expect("a timed run makes a record");
        let plan = record.plan.clone().unwrap_or_default();
        println!(
            "step{id:02} (sm80) on a GPU with {optin} B a block: {} B dynamic, {:?} registers, {:?} B local; {plan}",
            record.dynamic_smem_bytes, record.registers, record.local_bytes
        );
        assert_eq!(record.dynamic_smem_bytes, smem, "step{id:02} (sm80)");
        assert_eq!(
            (record.registers, record.local_bytes),
            (registers, local),
            "step{id:02} (sm80)"
        );
        assert!(
            plan.contains(&format!("a ring of {stages} stages")),
            "step{id:02} (sm80): {plan}"
        );
        if id == 8 {
            let alternative = record
                .alternatives
                .iter()
                .find(|a| a.name == "sm80-specialised")
                .expect("step 08's specialised alternative");
            assert_eq!(alternative.dynamic_smem_bytes, specialised, "{}", alternative.name);
        }
    }
    Ok(())
}

/// Step 11's sm80 design (a) (`alternatives/sm80_fp8_mma.cu`: fp8 `mma.sync` per MX block, promoted
/// with both scales; issue 31, item 4): on a GPU with fp8 `mma.sync` (compute capability 8.9 or newer)
/// every sm80 run of step 11 verifies it with the step's checks (against the twin's own kernel, cuBLAS
/// bf16 and fp32 C, the f64 MX product), at square and ragged shapes; the errors it measured are
/// printed, since its accumulation inside a block is the hardware's. Skipped, in one line, elsewhere.
fn the_sm80_fp8_alternative_verifies_where_the_gpu_has_fp8_mma_sync() -> Ran {
    let _one = GPU.lock().unwrap_or_else(|e| e.into_inner());
    let mut gpu = common::gpu()?;
    let major = gpu.major;
    if (gpu.major, gpu.minor) < (8, 9) {
        return Err(common::Skip(format!(
            "needs fp8 mma.sync (compute capability 8.9 or newer); this GPU is {}.{}",
            gpu.major, gpu.minor
        )));
    }
    let check_only = RunOptions {
        check_only: true,
        iters: None,
    };
    // Square; ragged in every dimension (K tiles of 128 cut short, 128-row scale pieces padded); one
    // element; a long K.
    let shapes = [
        Shape::square(512),
        Shape::new(1000, 1030, 160),
        Shape::new(4099, 129, 544),
        Shape::new(300, 520, 224),
        Shape::new(1, 1, 32),
        Shape::new(257, 255, 4096),
    ];
    for (i, &shape) in shapes.iter().enumerate() {
        let mut session = Session::new(gpu, shape, 3100 + i as u64)
            .unwrap_or_else(|e| panic!("{e}"))
            .with_twin(Some(Twin::Sm80));
        let outcome = session
            .run_step(11, &check_only)
            .unwrap_or_else(|e| panic!("step11 (sm80) {shape}: {e}"));
        let (_, checks) = outcome
            .alternatives
            .iter()
            .find(|(path, _)| path.ends_with("alternatives/sm80_fp8_mma.cu"))
            .unwrap_or_else(|| panic!("step11 (sm80) {shape}: design (a) was not verified on this GPU"));
        assert!(
            checks.len() >= 4 && checks.iter().all(|c| c.passed),
            "step11 (sm80) design (a) {shape}: {checks:?}"
        );
        for c in checks {
            println!(
                "step11 (sm80) design (a) {shape} vs {}: rel. Frobenius {:.3e} (bound {:.3e}), max |error| {:.3e}",
                c.against, c.rel_fro, c.rel_fro_bound, c.max_abs
            );
        }
        // Only the designs this GPU has instructions for are loaded beside the twin.
        assert!(
            outcome.alternatives.iter().all(|(path, _)| path.contains("/sm80_")),
            "{:?}",
            outcome.alternatives.iter().map(|(p, _)| p).collect::<Vec<_>>()
        );
        if major != 12 {
            assert!(!outcome
                .alternatives
                .iter()
                .any(|(p, _)| p.ends_with("sm80_block_scaled.cu")));
        }
        gpu = session.into_gpu();
    }
    Ok(())
}

common::harness::tests!(
    the_sm80_fp8_alternative_verifies_where_the_gpu_has_fp8_mma_sync,
    every_sm80_twin_is_verified_against_its_own_predecessor_at_square_and_ragged_shapes,
    an_sm80_run_records_the_mma_sync_ceilings,
    the_profile_of_an_sm80_twin_is_the_twin_s_own,
    a_twin_the_gpu_cannot_run_is_refused_in_one_line,
    an_sm80_record_describes_the_ring_that_ran,
);
