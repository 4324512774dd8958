//! GPU architectures: what a kernel file targets, and the NVRTC / ptxas names of each.

use crate::error::{Error, Result};
use std::fmt;

/// A compile target: compute capability `major.minor`, with `arch_specific` for the `a` targets
/// (sm_90a, sm_100a) whose instructions (wgmma, setmaxnreg, tcgen05) exist on that one chip family only.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Arch {
    pub major: u32,
    pub minor: u32,
    pub arch_specific: bool,
}

impl Arch {
    pub const SM75: Arch = Arch::new(7, 5, false);
    pub const SM80: Arch = Arch::new(8, 0, false);
    pub const SM86: Arch = Arch::new(8, 6, false);
    pub const SM89: Arch = Arch::new(8, 9, false);
    pub const SM90: Arch = Arch::new(9, 0, false);
    pub const SM90A: Arch = Arch::new(9, 0, true);
    pub const SM100: Arch = Arch::new(10, 0, false);
    pub const SM100A: Arch = Arch::new(10, 0, true);
    pub const SM120: Arch = Arch::new(12, 0, false);
    pub const SM120A: Arch = Arch::new(12, 0, true);

    pub const fn new(major: u32, minor: u32, arch_specific: bool) -> Arch {
        Arch {
            major,
            minor,
            arch_specific,
        }
    }

    /// `sm_90a`: the name of real machine code (cubin), for NVRTC and ptxas.
    pub fn sm(&self) -> String {
        format!(
            "sm_{}{}{}",
            self.major,
            self.minor,
            if self.arch_specific { "a" } else { "" }
        )
    }

    /// `compute_90a`: the name of the virtual architecture (PTX).
    pub fn compute(&self) -> String {
        format!(
            "compute_{}{}{}",
            self.major,
            self.minor,
            if self.arch_specific { "a" } else { "" }
        )
    }

    /// Parses `sm90a`, `sm_90a`, `90a`, `sm_80`, `compute_100a`, `9.0` ...
    pub fn parse(text: &str) -> Result<Arch> {
        let bad = || {
            Error::Usage(format!(
                "unknown architecture '{text}': expected a name such as sm80, sm90, sm90a or sm100a"
            ))
        };
        let lower = text.trim().to_ascii_lowercase();
        let rest = lower
            .strip_prefix("sm_")
            .or_else(|| lower.strip_prefix("sm"))
            .or_else(|| lower.strip_prefix("compute_"))
            .unwrap_or(&lower);
        let (digits, arch_specific) = match rest.strip_suffix('a') {
            Some(d) => (d, true),
            None => (rest, false),
        };
        let (major, minor) = if let Some((a, b)) = digits.split_once('.') {
            (a.parse().map_err(|_| bad())?, b.parse().map_err(|_| bad())?)
        } else {
            if digits.len() < 2 || !digits.chars().all(|c| c.is_ascii_digit()) {
                return Err(bad());
            }
            let (a, b) = digits.split_at(digits.len() - 1);
            (a.parse().map_err(|_| bad())?, b.parse().map_err(|_| bad())?)
        };
        if major < 7 {
            return Err(bad());
        }
        Ok(Arch::new(major, minor, arch_specific))
    }

    /// Why a GPU of compute capability `major.minor` can run no step, in one line's words, or `None`
    /// when it can run some: steps 01–03 need 7.5 (the T4) or newer, steps 04–11 need 8.0.
    pub fn lacks(major: u32, minor: u32) -> Option<String> {
        ((major, minor) < OLDEST_DEVICE).then(|| {
            "a GPU of compute capability 7.5 (T4) or newer (NVRTC 13 compiles for sm_75 and newer; CUDA 13 \
             dropped Volta, 7.0, and everything older)"
                .to_string()
        })
    }

    /// The target a device of compute capability `major.minor` runs best: the plain one.
    pub fn of_device(major: u32, minor: u32) -> Arch {
        Arch::new(major, minor, false)
    }
}

/// The oldest compute capability any step runs on: 7.5, Turing (T4).
pub const OLDEST_DEVICE: (u32, u32) = (7, 5);

impl fmt::Display for Arch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.sm())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_spellings_users_type() {
        assert_eq!(Arch::parse("sm90a").unwrap(), Arch::SM90A);
        assert_eq!(Arch::parse("sm_90a").unwrap(), Arch::SM90A);
        assert_eq!(Arch::parse("SM_100A").unwrap(), Arch::SM100A);
        assert_eq!(Arch::parse("compute_80").unwrap(), Arch::SM80);
        assert_eq!(Arch::parse("9.0").unwrap(), Arch::SM90);
        assert_eq!(Arch::parse("sm_120").unwrap(), Arch::new(12, 0, false));
        assert!(Arch::parse("sm_5").is_err());
        assert!(Arch::parse("hopper").is_err());
    }

    #[test]
    fn names_for_nvrtc_and_ptxas() {
        assert_eq!(Arch::SM90A.sm(), "sm_90a");
        assert_eq!(Arch::SM100A.compute(), "compute_100a");
        assert_eq!(Arch::SM80.to_string(), "sm_80");
        assert_eq!(Arch::SM75.sm(), "sm_75");
        assert_eq!(Arch::parse("sm75").unwrap(), Arch::SM75);
    }

    #[test]
    fn gpus_older_than_the_t4_are_told_what_they_lack() {
        assert_eq!(Arch::lacks(7, 5), None);
        assert_eq!(Arch::lacks(9, 0), None);
        for (major, minor) in [(7, 0), (6, 0), (7, 2)] {
            let why = Arch::lacks(major, minor).expect("refused");
            assert!(
                why.contains("7.5 (T4) or newer") && why.contains("dropped Volta"),
                "{why}"
            );
        }
    }
}
