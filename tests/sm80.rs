//! The sm80 twins (`sm80.cu`, issue 26) on a GPU, whatever its family: every process of this file runs
//! with `--twin sm80` chosen, as `stepNN --twin sm80` does, so each twin is verified against the same
//! twin's previous step (step 04's against step 03) and cuBLAS, at the shapes every step is verified
//! at and at K = 8; the mma.sync ceilings measure; a twin the GPU does not have is refused in one
//! line. Without a GPU each test is reported as ignored, with the reason.

mod common;

use common::Ran;

use gemm_ladder::check::problem::Shape;
use gemm_ladder::run::registry::{self, Twin};
use gemm_ladder::run::session::{RunOptions, Session};
use std::sync::Mutex;

/// One GPU test at a time: they share the device and its memory.
static GPU: Mutex<()> = Mutex::new(());

/// The twin steps of issue 26's half of the ladder, and issue 31's steps 08–10.
const TWIN_STEPS: [u8; 7] = [4, 5, 6, 7, 8, 9, 10];

fn every_sm80_twin_is_verified_against_its_own_predecessor_at_square_and_ragged_shapes() -> Ran {
    let _one = GPU.lock().unwrap_or_else(|e| e.into_inner());
    let mut gpu = common::gpu()?;
    registry::choose_twin(Some(Twin::Sm80));
    let check_only = RunOptions {
        check_only: true,
        iters: None,
    };
    let mut shapes = vec![Shape::square(512), Shape::square(1024)];
    shapes.extend_from_slice(common::RAGGED);
    // K = 8, one k16 slice half zero-filled, at sizes that span several blocks.
    shapes.extend([Shape::new(200, 190, 8), Shape::new(513, 1000, 8)]);
    for (i, &shape) in shapes.iter().enumerate() {
        let mut session = Session::new(gpu, shape, 2600 + i as u64).unwrap_or_else(|e| panic!("{e}"));
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

/// A timed sm80 run carries the GPU's mma.sync ceilings, timed beside it: positive rates, the
/// ldmatrix-fed loop no faster than the instruction alone (it does the same multiplies and more).
fn an_sm80_run_records_the_mma_sync_ceilings() -> Ran {
    let _one = GPU.lock().unwrap_or_else(|e| e.into_inner());
    let gpu = common::gpu()?;
    registry::choose_twin(Some(Twin::Sm80));
    let mut session = Session::new(gpu, Shape::square(2048), 26).unwrap_or_else(|e| panic!("{e}"));
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
    assert!(record.kernel.ends_with("sm80.cu"), "{}", record.kernel);
    println!(
        "step07 (sm80) 2048³: {:.1} TFLOPS; ceilings {registers:.1} (registers), {ldmatrix:.1} (ldmatrix)",
        record.time.tflops
    );
    Ok(())
}

/// `stepNN --twin` for a twin this GPU cannot run, or one the step does not have: one line naming
/// what it needs, exit status 2, no panic.
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
        (env!("CARGO_BIN_EXE_step11"), "sm80", "sm80 twin"),
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

common::harness::tests!(
    every_sm80_twin_is_verified_against_its_own_predecessor_at_square_and_ragged_shapes,
    an_sm80_run_records_the_mma_sync_ceilings,
    a_twin_the_gpu_cannot_run_is_refused_in_one_line,
);
