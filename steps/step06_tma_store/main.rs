//! `cargo run --release --bin step06`: compile this step's kernel, verify it against step
//! 05 and cuBLAS, time it, and record the result. What it launches and how is in `step.rs`.

fn main() -> std::process::ExitCode {
    gemm_ladder::embed_kernel_sources!();
    gemm_ladder::error::exit_with(gemm_ladder::cli::step_main(6))
}
