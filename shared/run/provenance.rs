//! Which kernel source a record was measured on, and whether that is still the source the book shows.
//!
//! A record carries [`source_hash`] of the kernel file it ran (`StepRecord::source_hash`, and one per
//! alternative). The book recomputes the hash of the file as the registry holds it now (the same text
//! the chapter includes: in the source tree, the file on disk) and marks a row whose
//! hash differs or is missing, and a row measured from a build with uncommitted changes. Recording and
//! checking call the same function, so the two can never disagree about what is hashed.

use crate::device::nvrtc::{header, HEADERS};
use crate::run::registry::KernelFile;
use crate::run::results::{AlternativeRecord, StepRecord};
use crate::run::steps;

/// FNV-1a, 64 bits: enough to tell one version of a source from another (this guards against
/// mistakes, not adversaries) without a hashing dependency.
struct Fnv1a(u64);

impl Fnv1a {
    fn new() -> Fnv1a {
        Fnv1a(0xcbf2_9ce4_8422_2325)
    }

    fn bytes(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 ^= b as u64;
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
    }

    /// One field, length first, so that moving text from one field to the next changes the hash.
    fn field(&mut self, text: &str) {
        self.bytes(&(text.len() as u64).to_le_bytes());
        self.bytes(text.as_bytes());
    }
}

/// The crate headers `source` includes (`#include "x.cuh"`), directly or through another header, each
/// once, in the order they are first reached. A directive inside `#if` counts too: hashing a header
/// that was compiled out can only make the check stricter.
pub fn included_headers(source: &str) -> Vec<&'static str> {
    fn visit(source: &str, found: &mut Vec<&'static str>) {
        for line in source.lines() {
            let Some(rest) = line.trim_start().strip_prefix('#') else {
                continue;
            };
            let Some(rest) = rest.trim_start().strip_prefix("include") else {
                continue;
            };
            let Some(name) = rest.trim().strip_prefix('"').and_then(|r| r.split('"').next()) else {
                continue;
            };
            let Some(known) = HEADERS.iter().find(|n| **n == name) else {
                continue; // not ours: NVRTC would refuse the kernel before anything is recorded
            };
            if !found.contains(known) {
                found.push(known);
                visit(header(known), found);
            }
        }
    }
    let mut found = Vec::new();
    visit(source, &mut found);
    found
}

/// The hash of what NVRTC compiles for `file`: its text, the text of every crate header it includes,
/// and its defines (`-DNAME=value`, in order). `fnv1a64:` and 16 hex digits; the prefix names the
/// function so that a later change of function reads as a mismatch, not as a collision.
pub fn source_hash(file: &KernelFile) -> String {
    let mut h = Fnv1a::new();
    h.field(file.source());
    for name in included_headers(file.source()) {
        h.field(name);
        h.field(header(name));
    }
    for (name, value) in file.defines {
        h.field(&format!("-D{name}={value}"));
    }
    format!("fnv1a64:{:016x}", h.0)
}

/// The hash of one text (`fnv1a64:` and 16 hex digits): `exercise check` keeps it of the file it
/// last counted as an attempt, so that checking an unchanged file again is not another attempt.
pub fn text_hash(text: &str) -> String {
    let mut h = Fnv1a::new();
    h.field(text);
    format!("fnv1a64:{:016x}", h.0)
}

/// How a record's kernel source compares with the source the book shows now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Source {
    /// The recorded hash is the hash of the file now.
    Matches,
    /// The recorded hash is not (or the kernel is no longer registered): the chapter shows other code.
    Changed,
    /// The record was written before records carried a hash.
    Unhashed,
}

/// What the book needs to know about where a record's numbers came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Provenance {
    pub source: Source,
    /// Built from a tree with uncommitted changes (`git describe --dirty`).
    pub dirty: bool,
}

impl Provenance {
    /// Nothing to mark: the source shown, built from a commit.
    pub fn is_clean(&self) -> bool {
        self.source == Source::Matches && !self.dirty
    }
}

fn compare(recorded: Option<&str>, now: Option<String>, git: &str) -> Provenance {
    let source = match (recorded, now) {
        (None, _) => Source::Unhashed,
        (Some(r), Some(n)) if r == n => Source::Matches,
        (Some(_), _) => Source::Changed,
    };
    Provenance {
        source,
        dirty: git.ends_with("-dirty"),
    }
}

/// The step's kernel file the record names, as registered now.
fn step_kernel(r: &StepRecord) -> Option<&'static KernelFile> {
    steps::get(r.step).ok()?.kernels.iter().find(|k| k.path == r.kernel)
}

/// A step's record against its kernel file as the registry holds it now.
pub fn of_record(r: &StepRecord) -> Provenance {
    compare(r.source_hash.as_deref(), step_kernel(r).map(source_hash), &r.git)
}

/// One of a record's alternatives against that alternative (found by name: step 10's share a file
/// and differ in their defines) as the registry holds it now.
pub fn of_alternative(r: &StepRecord, a: &AlternativeRecord) -> Provenance {
    let now = steps::get(r.step)
        .ok()
        .and_then(|s| s.alternatives.iter().find(|alt| alt.name == a.name))
        .map(|alt| source_hash(&alt.kernel));
    compare(a.source_hash.as_deref(), now, &r.git)
}

/// The hash a record of step `step` running `kernel` would carry if made now; `None` for a file the
/// registry does not hold. For tests that build records by hand.
pub fn current_hash(step: u8, kernel: &str) -> Option<String> {
    steps::get(step)
        .ok()?
        .kernels
        .iter()
        .find(|k| k.path == kernel)
        .map(source_hash)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::registry::KernelText;

    #[test]
    fn headers_are_followed_through_other_headers_once_each() {
        // epilogue.cuh includes common.cuh (which includes timeline.cuh), tma.cuh (mbarrier.cuh), ...
        let found = included_headers("#include \"epilogue.cuh\"\n  #  include \"common.cuh\"\n#include <cstdint>\n");
        assert_eq!(found[0], "epilogue.cuh");
        for name in [
            "common.cuh",
            "timeline.cuh",
            "tma.cuh",
            "mbarrier.cuh",
            "wgmma.cuh",
            "warpgroup.cuh",
        ] {
            assert_eq!(found.iter().filter(|n| **n == name).count(), 1, "{name}: {found:?}");
        }
        assert!(!found.contains(&"mx.cuh"), "{found:?}");
        assert!(included_headers("// no includes\nint x;\n").is_empty());
    }

    #[test]
    fn the_hash_covers_the_source_its_headers_and_its_defines() {
        let step = steps::get(10).unwrap();
        let kernel = &step.kernels[0];
        let hash = source_hash(kernel);
        assert!(hash.starts_with("fnv1a64:") && hash.len() == 8 + 16, "{hash}");
        assert_eq!(hash, source_hash(kernel), "stable");

        let edited = |source: &'static str, defines: &'static [(&'static str, u64)]| KernelFile {
            text: KernelText::Given(source),
            defines,
            ..*kernel
        };
        let leaked: &'static str = Box::leak(format!("{}\n// one more line\n", kernel.source()).into_boxed_str());
        assert_ne!(source_hash(&edited(leaked, kernel.defines)), hash, "the .cu");
        assert_ne!(source_hash(&edited(kernel.source(), &[])), hash, "the defines");
        // Step 10's "wait-all" alternative is the same file with other defines.
        let wait_all = step.alternatives.iter().find(|a| a.name == "wait-all").unwrap();
        assert_ne!(source_hash(&wait_all.kernel), hash);
    }
}
