//! Planted pipeline bugs in the warp-specialised Hopper kernels (steps 08–10; the bugs are in
//! tests/kernels/pipeline_bugs.rs). Without a GPU: every bug still plants into the current kernels,
//! at exactly one place. On a Hopper GPU: the unmodified kernels finish and pass at the test's shape,
//! and every planted kernel, launched the same way, hangs and is reported as hung with exit code 3
//! (each in a child process: this test binary, re-run). And the device side of a hang: a wait through
//! mbarrier_sm100.cuh (the Blackwell kernels' waits), and a wait for a flag through flag.cuh (step
//! 10's stream-K fixup), built with `GEMM_LADDER_DEBUG_HANG`, report what they were stuck on and
//! trap, long before the host's deadline.

mod common;

use common::{Ran, Skip};

use common::pipeline_bugs::{self, PipelineBug};
use gemm_ladder::check::problem::Shape;
use gemm_ladder::check::verify::{self, Bounds, Reference};
use gemm_ladder::run::registry::{KernelFile, Step, Targets};
use gemm_ladder::run::session::{self, Session};
use std::sync::Mutex;

/// One GPU test at a time: they share the device.
static GPU: Mutex<()> = Mutex::new(());

/// One cluster of two 128-row tiles, one 256-column tile, and 8 K tiles of 64: more than once round
/// every ring (step 08 has 3 stages, steps 09 and 10 have 4), so a stage nobody releases is waited for.
const SHAPE: Shape = Shape::new(256, 256, 512);

/// The hang deadline in the child processes.
const HANG_SECONDS: &str = "2";

/// Set in a child process to `step08:wrong_empty_parity` and so on: run that planted kernel.
const CHILD: &str = "GEMM_LADDER_PIPELINE_BUG";

const HANG_TEST: &str = "every_planted_pipeline_bug_is_reported_as_hung";

fn child_key(step: &Step, bug: &PipelineBug) -> String {
    format!("{}:{}", step.binary(), bug.name)
}

/// What the harness calls the planted kernel's run, so the hung message names it.
fn what(step: &Step, bug: &PipelineBug) -> String {
    format!("{} with the planted bug {}", step.binary(), bug.name)
}

fn define(file: &KernelFile, name: &str) -> u64 {
    file.define(name)
        .unwrap_or_else(|| panic!("{} has no define {name}", file.path))
}

fn every_pipeline_bug_plants_at_exactly_one_place_in_the_current_kernels() {
    let mut planted = 0;
    for (step, bug, file) in pipeline_bugs::all_planted() {
        let real = pipeline_bugs::hopper_kernel(step);
        assert_eq!(real.targets, Targets::Hopper);
        // One edit, nothing else: the planted text is the real text with `find` swapped for `replace`.
        assert_eq!(file.source().matches(bug.edit.replace).count(), 1, "{}", file.path);
        assert!(!file.source().contains(bug.edit.find), "{}", file.path);
        assert_eq!(
            file.source().len() + bug.edit.find.len(),
            real.source().len() + bug.edit.replace.len(),
            "{}",
            file.path
        );
        let at = real.source().find(bug.edit.find).expect("planted() checked it");
        assert_eq!(real.source()[..at], file.source()[..at], "{}", file.path);
        assert_eq!(
            real.source()[at + bug.edit.find.len()..],
            file.source()[at + bug.edit.replace.len()..],
            "{}",
            file.path
        );
        // Compiled and launched exactly as the step's kernel.
        assert_eq!(
            (file.targets, file.entry, file.defines, file.max_dynamic_smem),
            (real.targets, real.entry, real.defines, real.max_dynamic_smem)
        );
        // The bugs that leave a stage unreleased hang only once the ring has gone round.
        let k_tiles = SHAPE.k as u64 / define(real, "BK");
        assert!(
            k_tiles > define(real, "STAGES"),
            "{}: {SHAPE} has {k_tiles} K tiles, not more than the ring's stages",
            real.path
        );
        // And the shape is whole clusters along M (step 10's default is one block: two of them),
        // one tile along N.
        assert!((SHAPE.m as u64).is_multiple_of(define(real, "BM") * define(real, "CLUSTER_M")));
        assert_eq!(SHAPE.n as u64, define(real, "BN"));
        planted += 1;
    }
    let expected: usize = pipeline_bugs::steps()
        .iter()
        .map(|&step| {
            let clustered = pipeline_bugs::cluster_blocks(step) > 1;
            pipeline_bugs::BUGS
                .iter()
                .filter(|b| clustered || !b.clustered_only)
                .count()
        })
        .sum();
    assert_eq!(planted, expected);
}

/// Why a test of Hopper kernels cannot run on `gpu`.
fn not_hopper(gpu: &gemm_ladder::device::gpu::Gpu) -> Skip {
    Skip(format!("needs a Hopper GPU, not {}", gpu.info.name))
}

/// The child's half: launch one planted kernel; the harness must end this process with code 3.
fn run_planted_kernel(key: &str) {
    let (step, bug, file) = pipeline_bugs::all_planted()
        .into_iter()
        .find(|(step, bug, _)| child_key(step, bug) == key)
        .unwrap_or_else(|| panic!("no planted bug {key}"));
    let gpu = common::gpu().unwrap_or_else(|Skip(why)| panic!("the parent found a GPU, its child: {why}"));
    let mut session = Session::new(gpu, SHAPE, 11).unwrap_or_else(|e| panic!("{e}"));
    let (function, _) = session::load_file(&session.gpu, &file).unwrap_or_else(|e| panic!("{e}"));
    let outcome = session.run_function(&function, file.launch, &what(step, bug));
    panic!("{} came back: {:?}", what(step, bug), outcome.map(|_| ()));
}

/// On a Hopper GPU: steps 08–10's kernels, unmodified, finish and pass at [`SHAPE`]; each
/// with a planted pipeline bug, launched the same way, never finishes, and the harness ends the
/// process with the hung message and exit code 3 after `GEMM_LADDER_HANG_SECONDS`.
fn every_planted_pipeline_bug_is_reported_as_hung() -> Ran {
    if let Ok(key) = std::env::var(CHILD) {
        run_planted_kernel(&key);
        return Ok(());
    }
    let _one = GPU.lock().unwrap_or_else(|e| e.into_inner());
    let gpu = common::gpu()?;
    if !Targets::Hopper.serves(gpu.major, gpu.minor) {
        return Err(not_hopper(&gpu));
    }
    // The control: the same kernels without the bugs, same shape, inputs and launch, come back right.
    let mut session = Session::new(gpu, SHAPE, 11).unwrap_or_else(|e| panic!("{e}"));
    let reference = Reference::Bf16(session.cublas_output().unwrap_or_else(|e| panic!("{e}")).to_vec());
    for step in pipeline_bugs::steps() {
        let real = pipeline_bugs::hopper_kernel(step);
        let (function, _) = session::load_file(&session.gpu, real).unwrap_or_else(|e| panic!("{e}"));
        let out = session
            .run_function(&function, real.launch, &step.binary())
            .unwrap_or_else(|e| panic!("{}: {e}", step.binary()));
        let check = verify::compare("cuBLAS bf16", &out, &reference, SHAPE, &Bounds::gpu_vs_gpu());
        assert!(
            check.passed,
            "{} unmodified failed at {SHAPE}: {check:?}",
            step.binary()
        );
    }
    drop(session);

    for (step, bug, _) in pipeline_bugs::all_planted() {
        let run = std::process::Command::new(std::env::current_exe().expect("test binary path"))
            .args(["--exact", HANG_TEST, "--test-threads=1", "--nocapture"])
            .env(CHILD, child_key(step, bug))
            .env("GEMM_LADDER_HANG_SECONDS", HANG_SECONDS)
            .output()
            .expect("running the child test");
        let stderr = String::from_utf8_lossy(&run.stderr);
        let expected = format!(
            "{} did not finish within {HANG_SECONDS} s: reported as hung",
            what(step, bug)
        );
        assert_eq!(
            run.status.code(),
            Some(3),
            "{}: child exit {:?} (the bug: {}), stderr:\n{stderr}",
            child_key(step, bug),
            run.status,
            bug.why
        );
        assert!(stderr.contains(&expected), "{}: {stderr}", child_key(step, bug));
        println!("{}: reported as hung, exit code 3", child_key(step, bug));
    }
    Ok(())
}

/// Set in a child process to the name of the test whose bounded-wait kernel it launches.
const BOUNDED_WAIT_CHILD: &str = "GEMM_LADDER_HUNG_WAIT";

/// The host's deadline in that child: far beyond the kernel's own bound.
const HUNG_WAIT_HOST_SECONDS: u64 = 30;

/// On a Hopper GPU: `hung` (a kernel that waits for something nobody does, built with
/// `GEMM_LADDER_DEBUG_HANG=1`) runs in a child process (this test binary, re-run as `test`). Within a
/// few seconds (the host's deadline is 30 s) the kernel prints its report and traps, and the launch
/// fails; the report must hold every one of `expected`.
fn bounded_wait_reports_and_traps(test: &str, hung: &KernelFile, expected: &[String]) -> Ran {
    if std::env::var(BOUNDED_WAIT_CHILD).is_ok_and(|t| t == test) {
        let gpu = common::gpu().unwrap_or_else(|Skip(why)| panic!("the parent found a GPU, its child: {why}"));
        let mut session = Session::new(gpu, SHAPE, 11).unwrap_or_else(|e| panic!("{e}"));
        let (function, _) = session::load_file(&session.gpu, hung).unwrap_or_else(|e| panic!("{e}"));
        match session.run_function(&function, hung.launch, "the hung wait") {
            Err(e) => println!("the launch failed: {e}"),
            Ok(_) => panic!("the hung wait came back"),
        }
        // The context is lost after a trap: leave without tearing the session down.
        std::process::exit(0);
    }
    let _one = GPU.lock().unwrap_or_else(|e| e.into_inner());
    let gpu = common::gpu()?;
    if !Targets::Hopper.serves(gpu.major, gpu.minor) {
        return Err(not_hopper(&gpu));
    }
    drop(gpu);
    let started = std::time::Instant::now();
    let run = std::process::Command::new(std::env::current_exe().expect("test binary path"))
        .args(["--exact", test, "--test-threads=1", "--nocapture"])
        .env(BOUNDED_WAIT_CHILD, test)
        .env("GEMM_LADDER_HANG_SECONDS", HUNG_WAIT_HOST_SECONDS.to_string())
        .output()
        .expect("running the child test");
    let seconds = started.elapsed().as_secs();
    let output = format!(
        "{}{}",
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr)
    );
    assert!(run.status.success(), "child exit {:?}:\n{output}", run.status);
    for part in expected {
        assert!(output.contains(part.as_str()), "the report lacks `{part}`:\n{output}");
    }
    assert!(output.contains("the launch failed"), "{output}");
    assert!(
        seconds < HUNG_WAIT_HOST_SECONDS,
        "{seconds} s: the host's deadline, not the device's bound, ended it:\n{output}"
    );
    println!("{test}: reported and trapped in {seconds} s");
    Ok(())
}

/// tests/kernels/hung_wait.cu waits for an mbarrier phase nobody completes, through
/// mbarrier_sm100.cuh: the report names the barrier, the parity, the block and the thread. This is
/// the bring-up build of the Blackwell kernels' waits, proven on the GPU we have.
fn a_bounded_wait_reports_its_barrier_and_traps() -> Ran {
    bounded_wait_reports_and_traps(
        "a_bounded_wait_reports_its_barrier_and_traps",
        common::hung_wait_kernel(),
        &[
            "mbarrier wait hung: barrier never (shared 0x".to_string(),
            format!(
                "parity 0, block (0,0,0) cluster rank 0, thread 0 (warp 0): no completion in {} s",
                common::HUNG_WAIT_SECONDS
            ),
        ],
    )
}

/// tests/kernels/hung_flag.cu waits for a flag in global memory nobody raises, through flag.cuh (step
/// 10's stream-K fixup): the report names the flag's address, who raises it, the value awaited and
/// the one it holds (C's bf16 NaNs), and the block and thread.
fn a_bounded_flag_wait_reports_its_flag_and_traps() -> Ran {
    bounded_wait_reports_and_traps(
        "a_bounded_flag_wait_reports_its_flag_and_traps",
        common::hung_flag_kernel(true),
        &[
            "flag wait hung: flag 0x".to_string(),
            format!(
                "(raised by cluster 3) awaited 7 (the epoch), holds {}, block (0,0,0) thread 0: not raised in {} s",
                0x7FC0_7FC0_u32,
                common::HUNG_WAIT_SECONDS
            ),
        ],
    )
}

common::harness::tests!(
    every_pipeline_bug_plants_at_exactly_one_place_in_the_current_kernels,
    every_planted_pipeline_bug_is_reported_as_hung,
    a_bounded_wait_reports_its_barrier_and_traps,
    a_bounded_flag_wait_reports_its_flag_and_traps,
);
