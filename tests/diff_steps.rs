//! `scripts/diff-steps NN MM`, the README's way to see the lesson between two steps: the diff of their
//! Hopper kernels (`kernel.cu` for steps 01–03, `sm90.cu` after) or, with `--twin sm80`, their sm80
//! twins (`sm80.cu`), with `--twin blackwell` their Blackwell kernels (`sm100.cu`); with
//! `--alternative NAME`, a step's alternative kernel against the step's own; or one line and a
//! non-zero exit.

use std::path::Path;
use std::process::{Command, Output};

fn diff_steps(args: &[&str]) -> Output {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/diff-steps");
    Command::new("bash")
        .arg(script)
        .args(args)
        .output()
        .expect("bash runs scripts/diff-steps")
}

#[test]
fn shows_the_diff_of_two_steps_hopper_kernels() {
    for (args, old, new) in [
        (
            ["08", "09", "", ""],
            "steps/step08_pipeline/sm90.cu",
            "steps/step09_epilogue_double_buffer/sm90.cu",
        ),
        (
            ["3", "4", "", ""],
            "steps/step03_register_tiling/kernel.cu",
            "steps/step04_tma_mma/sm90.cu",
        ),
        (
            ["04", "05", "--twin", "sm80"],
            "steps/step04_tma_mma/sm80.cu",
            "steps/step05_swizzle128/sm80.cu",
        ),
        (
            ["3", "4", "--twin", "sm80"],
            "steps/step03_register_tiling/kernel.cu",
            "steps/step04_tma_mma/sm80.cu",
        ),
        (
            ["04", "05", "--twin", "blackwell"],
            "steps/step04_tma_mma/sm100.cu",
            "steps/step05_swizzle128/sm100.cu",
        ),
    ] {
        let args: Vec<&str> = args.into_iter().filter(|a| !a.is_empty()).collect();
        let out = diff_steps(&args);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            stdout.contains(&format!("--- a/{old}")) && stdout.contains(&format!("+++ b/{new}")),
            "{args:?}:\n{stdout}"
        );
    }
}

#[test]
fn shows_the_diff_of_an_alternative_against_its_step() {
    for name in ["overlapped", "fused", "smem_b", "promote"] {
        let out = diff_steps(&["11", "--alternative", name]);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{name}: {}", String::from_utf8_lossy(&out.stderr));
        assert!(
            stdout.contains("--- a/steps/step11_mxfp8/sm90.cu")
                && stdout.contains(&format!("+++ b/steps/step11_mxfp8/alternatives/sm90_{name}.cu")),
            "{name}:\n{stdout}"
        );
    }
    // The sm80 twin's alternatives: by the file's name with --twin sm80, by the program's name,
    // whose prefix chooses the twin, or by the file's name alone where one twin has it.
    for (args, old, new) in [
        (
            &["11", "--alternative", "fp8_mma", "--twin", "sm80"][..],
            "steps/step11_mxfp8/sm80.cu",
            "steps/step11_mxfp8/alternatives/sm80_fp8_mma.cu",
        ),
        (
            &["11", "--alternative", "sm80-block-scaled"],
            "steps/step11_mxfp8/sm80.cu",
            "steps/step11_mxfp8/alternatives/sm80_block_scaled.cu",
        ),
        (
            &["08", "--alternative", "sm80-specialised"],
            "steps/step08_pipeline/sm80.cu",
            "steps/step08_pipeline/alternatives/sm80_specialised.cu",
        ),
        (
            &["08", "--alternative", "specialised"],
            "steps/step08_pipeline/sm80.cu",
            "steps/step08_pipeline/alternatives/sm80_specialised.cu",
        ),
        (
            &["08", "--alternative", "specialised", "--twin", "sm80"],
            "steps/step08_pipeline/sm80.cu",
            "steps/step08_pipeline/alternatives/sm80_specialised.cu",
        ),
    ] {
        let out = diff_steps(args);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            stdout.contains(&format!("--- a/{old}")) && stdout.contains(&format!("+++ b/{new}")),
            "{args:?}:\n{stdout}"
        );
    }
    // Options after the name go to `git diff`.
    let out = diff_steps(&["11", "--alternative", "overlapped", "--stat"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("sm90_overlapped.cu"),
        "{stdout}"
    );
}

#[test]
fn a_bad_argument_is_one_line_and_a_non_zero_exit() {
    for args in [
        &["12", "3"][..],
        &["x", "3"],
        &["08"],
        &["0", "1"],
        &["04", "05", "--twin", "ampere"],
        &["11", "--alternative"],
        &["11", "--alternative", "nope"],
        &["11", "--alternative", "../sm90"],
        &["10", "--alternative", "fused"],
        &["11", "--alternative", "sm80-nope"],
        &["08", "--alternative", "specialised", "--twin", "hopper"],
    ] {
        let out = diff_steps(args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(out.stdout.is_empty(), "{args:?}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.starts_with("diff-steps: "), "{args:?}: {stderr}");
    }
    // A step without the chosen twin's kernel: which steps have one.
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let without = (4..=11).find(|n| {
        let prefix = format!("step{n:02}_");
        !std::fs::read_dir(root.join("steps"))
            .unwrap()
            .flatten()
            .any(|e| e.file_name().to_string_lossy().starts_with(&prefix) && e.path().join("sm80.cu").is_file())
    });
    if let Some(n) = without {
        let out = diff_steps(&["03", &format!("{n:02}"), "--twin", "sm80"]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(
            stderr.contains(&format!("step {n:02} has no sm80 kernel (sm80.cu: steps 04,")),
            "{stderr}"
        );
    }
}
