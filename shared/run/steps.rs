//! Every step of the ladder, in order. Each registration lives in its own step folder (`step.rs`:
//! which kernel files, how they are launched); this file only lists them.

use crate::error::{Error, Result};
use crate::run::registry::Step;

#[path = "../../steps/step01_naive/step.rs"]
pub mod step01_naive;
#[path = "../../steps/step02_smem_tiling/step.rs"]
pub mod step02_smem_tiling;
#[path = "../../steps/step03_register_tiling/step.rs"]
pub mod step03_register_tiling;
#[path = "../../steps/step04_tma_mma/step.rs"]
pub mod step04_tma_mma;
#[path = "../../steps/step05_swizzle128/step.rs"]
pub mod step05_swizzle128;
#[path = "../../steps/step06_tma_store/step.rs"]
pub mod step06_tma_store;
#[path = "../../steps/step07_multicast/step.rs"]
pub mod step07_multicast;
#[path = "../../steps/step08_pipeline/step.rs"]
pub mod step08_pipeline;
#[path = "../../steps/step09_epilogue_double_buffer/step.rs"]
pub mod step09_epilogue_double_buffer;
#[path = "../../steps/step10_persistent/step.rs"]
pub mod step10_persistent;
#[path = "../../steps/step11_mxfp8/step.rs"]
pub mod step11_mxfp8;

/// The ladder, bottom rung first.
pub static ALL: &[&Step] = &[
    &step01_naive::STEP,
    &step02_smem_tiling::STEP,
    &step03_register_tiling::STEP,
    &step04_tma_mma::STEP,
    &step05_swizzle128::STEP,
    &step06_tma_store::STEP,
    &step07_multicast::STEP,
    &step08_pipeline::STEP,
    &step09_epilogue_double_buffer::STEP,
    &step10_persistent::STEP,
    &step11_mxfp8::STEP,
];

/// Step `id`, or a clear refusal.
pub fn get(id: u8) -> Result<&'static Step> {
    ALL.iter()
        .copied()
        .find(|s| s.id == id)
        .ok_or_else(|| Error::Usage(format!("there is no step {id:02} (steps 01 to {:02} exist)", ALL.len())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_consecutive_and_each_predecessor_is_the_previous_step() {
        for (i, step) in ALL.iter().enumerate() {
            assert_eq!(step.id as usize, i + 1);
            let expected = if i == 0 { None } else { Some(i as u8) };
            assert_eq!(step.predecessor, expected, "{}", step.binary());
            assert!(!step.kernels.is_empty());
        }
    }

    #[test]
    fn kernel_paths_name_the_step_folder_and_sources_have_their_entry() {
        for step in ALL {
            for file in step.kernels {
                let folder = format!("steps/step{:02}_{}/", step.id, step.name);
                assert!(file.path.starts_with(&folder), "{} is not under {folder}", file.path);
                let on_disk = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/").to_owned() + file.path)
                    .expect("kernel file exists");
                assert_eq!(file.text, crate::run::registry::KernelText::File, "{}", file.path);
                assert_eq!(on_disk, file.source(), "{} is not read from its file", file.path);
                assert!(
                    file.source().contains(&format!("void {}(", file.entry)),
                    "{} has no {}",
                    file.path,
                    file.entry
                );
            }
        }
    }
}
