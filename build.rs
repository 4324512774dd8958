//! Records the git revision in the binary, so the results it writes say which code produced them.
use std::process::Command;

fn main() {
    let revision = Command::new("git")
        .args(["describe", "--always", "--dirty", "--abbrev=10"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "unknown".to_string());
    println!("cargo:rustc-env=GEMM_LADDER_GIT_REVISION={revision}");
    // `--dirty` must describe the code compiled in, so the script also reruns when a source changes:
    // editing a kernel touches neither .git/HEAD nor .git/index, and a binary built after such an edit
    // would otherwise call itself clean (`cli` refuses to record from a dirty build). The results
    // and the book under book/ are left out on purpose: recording writes them.
    for source in ["shared", "steps", "Cargo.toml", "Cargo.lock", "build.rs"] {
        println!("cargo:rerun-if-changed={source}");
    }
    println!("cargo:rerun-if-changed=.git/HEAD");
    println!("cargo:rerun-if-changed=.git/index");
    println!("cargo:rerun-if-changed=.git/refs");
}
