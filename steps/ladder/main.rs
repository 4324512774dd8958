//! `cargo run --release --bin ladder`: every step in order, one table, the figure, and the book.
//! Without a GPU it says so and builds the book from the recorded results.

fn main() -> std::process::ExitCode {
    gemm_ladder::embed_kernel_sources!();
    gemm_ladder::error::exit_with(gemm_ladder::cli::ladder_main())
}
