//! How a record's numbers are written in a table cell (shape, time, ratio, checks, registers, shared
//! memory, clocks, the device, the command that re-runs it), and the marks on a record measured on
//! other code than the chapter shows.

use crate::run::provenance::{Provenance, Source};
use crate::run::registry::Baseline;
use crate::run::results::{significant, ResultsFile, StepRecord, TimingMethod};
use std::fmt::Write as _;

/// The marks a table puts on a record measured on other code than the chapter shows, and the one line
/// under the table that explains the marks it used. Marks rather than a refusal: an old record stays
/// readable while it waits to be measured again, and nothing about it is hidden.
#[derive(Default)]
pub(crate) struct Marks {
    changed: bool,
    unhashed: bool,
    dirty: bool,
}

impl Marks {
    pub(crate) const CHANGED: char = '†';
    pub(crate) const UNHASHED: char = '°';
    pub(crate) const DIRTY: char = '‡';

    /// `cell` with the marks `p` calls for (`4096³ †`), or unchanged for a record of the code shown.
    pub(crate) fn on(&mut self, cell: String, p: Provenance) -> String {
        let mut marks = String::new();
        match p.source {
            Source::Matches => {}
            Source::Changed => {
                self.changed = true;
                marks.push(Self::CHANGED);
            }
            Source::Unhashed => {
                self.unhashed = true;
                marks.push(Self::UNHASHED);
            }
        }
        if p.dirty {
            self.dirty = true;
            marks.push(Self::DIRTY);
        }
        if marks.is_empty() {
            cell
        } else {
            format!("{cell} {marks}")
        }
    }

    /// One paragraph explaining the marks used, or nothing when no row was marked.
    pub(crate) fn note(&self) -> String {
        let mut parts = Vec::new();
        if self.changed {
            parts.push(format!(
                "{} measured on a different kernel source than the one shown: the file, a header it includes or its defines have changed since",
                Self::CHANGED
            ));
        }
        if self.unhashed {
            parts.push(format!(
                "{} recorded before records carried a hash of their kernel source, so which source it ran cannot be checked",
                Self::UNHASHED
            ));
        }
        if self.dirty {
            parts.push(format!(
                "{} built from a tree with uncommitted changes (revision `-dirty`): the code it ran is in no commit",
                Self::DIRTY
            ));
        }
        if parts.is_empty() {
            String::new()
        } else {
            format!("{}.\n\n", parts.join("; "))
        }
    }
}

/// `4096³`, or `M×N×K` when the shape is not a cube.
pub(super) fn shape_text(r: &StepRecord) -> String {
    let s = r.shape;
    if s.m == s.n && s.n == s.k {
        format!("{}³", s.m)
    } else {
        format!("{}×{}×{}", s.m, s.n, s.k)
    }
}

pub(super) fn ratio_text(ratio: Option<f64>) -> String {
    ratio.map_or_else(|| "—".into(), |r| significant(r, 3))
}

/// The header of a column of headline ratios over `records` (`× cuBLAS (bf16 C)`), and the baseline
/// it names ([`crate::run::results::column_baseline`]).
pub(super) fn headline_header<'a>(records: impl IntoIterator<Item = &'a StepRecord>) -> (String, Baseline) {
    let column = crate::run::results::column_baseline(records);
    (format!("× {}", column.label()), column)
}

/// A record's headline ratio in a column headed with `column`: with the C its cuBLAS writes where
/// that differs from the column's (`0.912 (fp32 C)`).
pub(super) fn headline_ratio_text(r: &StepRecord, column: Baseline) -> String {
    headline_ratio_of(r, r.headline().ratio, column)
}

/// `ratio` (a ratio to `r`'s headline cuBLAS) in a column headed with `column`, as
/// [`headline_ratio_text`] writes it.
pub(super) fn headline_ratio_of(r: &StepRecord, ratio: f64, column: Baseline) -> String {
    let baseline = r.headline().baseline;
    if baseline == column {
        significant(ratio, 3)
    } else {
        format!("{} ({})", significant(ratio, 3), baseline.output())
    }
}

/// An alternative's TFLOPS over its record's headline cuBLAS (from the same loop): the ratio the record
/// kept for bf16 C, computed from the two timings for another baseline.
pub(super) fn alternative_headline_ratio(r: &StepRecord, a: &crate::run::results::AlternativeRecord) -> f64 {
    let headline = r.headline();
    match headline.baseline {
        Baseline::CublasBf16C => a.ratio_bf16,
        Baseline::CublasF32C => a.time.tflops / headline.cublas.tflops,
    }
}

/// The error against cuBLAS (`cublas`) or against the other reference (the previous step, the CPU).
pub(super) fn check_text(r: &StepRecord, cublas: bool) -> String {
    let check = r
        .checks
        .iter()
        .find(|c| c.against.to_ascii_lowercase().contains("cublas") == cublas);
    match check {
        None => "—".into(),
        Some(c) => {
            let mark = if c.passed { "" } else { " ✗" };
            if cublas {
                format!("{}{mark}", error_text(c.rel_fro, 1))
            } else {
                format!("{} ({}){mark}", error_text(c.rel_fro, 1), c.against)
            }
        }
    }
}

/// A relative error in exponent form with `decimals` after the point (`1.4e-4`); exactly zero (two
/// outputs identical bit for bit) is written `0`.
pub(super) fn error_text(x: f64, decimals: usize) -> String {
    if x == 0.0 {
        "0".into()
    } else if x.is_finite() {
        format!("{x:.decimals$e}")
    } else {
        format!("{x}")
    }
}

pub(super) fn registers_text(r: &StepRecord) -> String {
    match (r.registers, r.local_bytes) {
        (None, _) => "—".into(),
        (Some(n), Some(local)) if local > 0 => format!("{n} (+{local} B local)"),
        (Some(n), _) => n.to_string(),
    }
}

pub(super) fn smem_text(r: &StepRecord) -> String {
    if r.static_smem_bytes.is_none() && r.dynamic_smem_bytes == 0 {
        return "—".into();
    }
    bytes_text(r.smem_bytes() as u64)
}

/// `48 KiB`, `8.5 KiB`, `512 B`, `50 MiB`, `80 GiB`.
pub(super) fn bytes_text(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["B", "KiB", "MiB", "GiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if value.fract() == 0.0 {
        format!("{value:.0} {}", UNITS[unit])
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

/// How one record was timed, and the clocks it ran at, in a sentence (the tables have no room for a
/// clock column: mdBook's text column is 750 px wide, which they already overflow).
pub(super) fn timing_text(r: &StepRecord, device: &crate::run::results::DeviceInfo) -> String {
    let headline = r.headline();
    let references = match (&r.mx, r.cublas_sgemm.is_some()) {
        (Some(_), _) => "its MXFP8 baselines".to_string(),
        (None, true) => format!("{} and cuBLAS SGEMM", headline.baseline.label()),
        (None, false) => headline.baseline.label().to_string(),
    };
    let mut text = match r.timing_method {
        TimingMethod::Alternating => format!(
            "timed in one loop with {references}, launched in turn, {} launches each{}{}",
            r.time.runs,
            crate::book::peak::timed_span_clause(r),
            r.warmup_ms
                .map(|ms| format!(" after {} s of untimed warm-up", significant(ms / 1e3, 2)))
                .unwrap_or_default()
        ),
        TimingMethod::Sequential => format!(
            "timed by itself over {} launches, {references} separately (before alternation)",
            r.time.runs
        ),
    };
    let _ = write!(
        text,
        "; {} reached {} TFLOPS",
        headline.baseline.label(),
        significant(headline.cublas.tflops, 3)
    );
    match &r.clocks {
        Some(c) => {
            let _ = write!(
                text,
                "; SM clock {}{} over {} readings",
                c.sm_text(),
                crate::book::peak::peak_at_clock_clause(r, device),
                c.samples
            );
            let power = c.power_text();
            if !power.is_empty() {
                let _ = write!(text, ", {power}");
            }
            text.push('.');
        }
        None => text.push_str("; no SM clock recorded."),
    }
    text
}

/// The SM clocks the shown records ran at, as a clause of the device paragraph.
pub(super) fn clocks_seen(shown: &[&StepRecord]) -> String {
    let clocks: Vec<_> = shown.iter().filter_map(|r| r.clocks.as_ref()).collect();
    let (Some(low), Some(high)) = (
        clocks.iter().map(|c| c.sm_mhz_min).min(),
        clocks.iter().map(|c| c.sm_mhz_max).max(),
    ) else {
        return String::new();
    };
    let (median_low, median_high) = (
        clocks.iter().map(|c| c.sm_mhz_median).min().unwrap_or(low),
        clocks.iter().map(|c| c.sm_mhz_median).max().unwrap_or(high),
    );
    let medians = if median_low == median_high {
        format!("median {median_low} MHz")
    } else {
        format!("medians {median_low}–{median_high} MHz")
    };
    format!("; SM clock while timing {low}–{high} MHz ({medians}, NVML)")
}

/// One paragraph on the GPU and software a file was measured with, for the records `shown` picks.
pub(super) fn device_text(file: &ResultsFile, shown: impl Fn(&StepRecord) -> bool) -> String {
    let d = &file.device;
    let shown: Vec<&StepRecord> = file.records.iter().filter(|r| shown(r)).collect();
    let mut dates: Vec<&str> = shown.iter().map(|r| r.date.get(..10).unwrap_or(&r.date)).collect();
    dates.sort_unstable();
    dates.dedup();
    let mut revisions: Vec<&str> = shown.iter().map(|r| r.git.as_str()).collect();
    revisions.sort_unstable();
    revisions.dedup();
    let clocks = match (d.sm_clock_mhz, d.mem_clock_mhz) {
        (Some(sm), Some(mem)) => format!(", SM clock up to {sm} MHz, memory clock {mem} MHz"),
        (Some(sm), None) => format!(", SM clock up to {sm} MHz"),
        (None, Some(mem)) => format!(", memory clock {mem} MHz"),
        (None, None) => String::new(),
    };
    let when = match (dates.first(), dates.last()) {
        (Some(a), Some(b)) if a != b => format!("between {a} and {b}"),
        (Some(a), _) => format!("on {a}"),
        _ => String::new(),
    };
    let seen = clocks_seen(&shown);
    format!(
        "**{}**: compute capability {}, {} SMs, {} of L2, {} of memory{clocks}{seen}; CUDA driver {}, NVRTC {}; measured {when} at revision {}.",
        d.name,
        d.compute_capability,
        d.sms,
        bytes_text(d.l2_bytes),
        bytes_text(d.memory_bytes),
        d.driver,
        d.nvrtc,
        revisions.join(", "),
    )
}

/// The command that repeats a record's run: same step, shape and seed.
pub(super) fn rerun_command(r: &StepRecord) -> String {
    let s = r.shape;
    let shape = if s.m == s.n && s.n == s.k {
        format!("--size {}", s.m)
    } else {
        format!("--m {} --n {} --k {}", s.m, s.n, s.k)
    };
    let twin = if r.is_sm80_twin() { " --twin sm80" } else { "" };
    format!(
        "cargo run --release --bin {} -- {shape} --seed {}{twin}",
        r.step_id(),
        r.seed
    )
}
