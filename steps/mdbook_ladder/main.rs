//! `mdbook-ladder`: the book's `{{#ladder-…}}` directives as an mdBook preprocessor, so that a plain
//! `mdbook build book` or `mdbook serve book` renders the same book as `ladder --book-only`
//! (`book/book.toml` registers it). It speaks mdBook's preprocessor protocol on stdin and stdout.

fn main() -> std::process::ExitCode {
    gemm_ladder::embed_kernel_sources!();
    gemm_ladder::error::exit_with(gemm_ladder::cli::mdbook_ladder_main())
}
