//! `cargo run --release --bin step11`: compile this step's MXFP8 kernel, verify it against step 10 run
//! on the exactly dequantized operands, against cuBLAS and against the f64 reference, time it with
//! its baselines, and record the result. What it launches and how is in `step.rs`.

fn main() -> std::process::ExitCode {
    gemm_ladder::embed_kernel_sources!();
    gemm_ladder::error::exit_with(gemm_ladder::cli::step_main(11))
}
