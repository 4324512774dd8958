//! Builds the book (`book/`) with mdBook's library, in process, with no network and no `mdbook` binary.
//!
//! Numbers never appear in the chapters' source: a chapter asks for them with a directive, and the
//! `ladder-results` pass replaces it with what the results files hold.
//!
//! | directive                  | becomes                                                          |
//! |----------------------------|------------------------------------------------------------------|
//! | `{{#ladder-table}}`        | one row per record of every results file, then the devices       |
//! | `{{#ladder-table step03}}` | that step's rows, then one line per verification check           |
//! | `{{#ladder-figure}}`       | an image of `figures/ladder-<gpu>.svg` per results file          |
//! | `{{#ladder-sweep-figure}}` | an image of `figures/sweep-<gpu>.svg` per file with sweep records|
//! | `{{#ladder-sweep-table}}`  | one row per sweep record (`stepNN --sweep`), then the devices    |
//! | `{{#ladder-sweep-compare step10 A B}}` | inline: the swept ratio at shape A against B, and whether lower |
//! | `{{#ladder-alternatives step11}}` | one row per alternative design timed with that step's runs |
//! | `{{#ladder-mx step11}}` | an MXFP8 step's baselines (dequantize + cuBLAS, cuBLAS bf16, cuBLASLt fp8) |
//!
//! and the evidence directives of [`crate::book::evidence`] (`ladder-evidence stepNN`,
//! `ladder-timeline stepNN`, `ladder-l2`, `ladder-quoted`, `ladder-quote ID`, `ladder-sources`) and
//! those of [`crate::book::peak`] (`ladder-peak`, `ladder-peak datasheet`, `ladder-rounds`).
//!
//! The ladder table and figure leave sweep records out (a sweep's 4096³ is not the chapter's run);
//! the sweep directives show only them.
//! Every row (or evidence column) of a record whose numbers were not measured on the code the chapter
//! shows carries a mark, explained in one line under its table ([`Marks`]): `†` its kernel source has
//! changed since, `°` it was recorded before records carried a source hash, `‡` it was built from a
//! tree with uncommitted changes ([`crate::run::provenance`]).
//!
//! A backslash in front (`\{{#ladder-table}}`) leaves the directive as text. With no results yet,
//! each directive becomes one sentence that says how to record some.
//!
//! The pass runs on the loaded book before mdBook's own preprocessors, among them `links`, which
//! expands `{{#include ../../steps/step01_naive/kernel.cu:kernel}}`. Before that, every include is
//! checked (the file exists, the anchor is in it), because mdBook itself only logs a missing file and
//! silently includes nothing for a missing anchor.

pub mod evidence;
pub mod figure;
pub mod figure_banks;
pub mod figure_sweep;
pub mod include;
pub mod peak;
pub mod quoted;
pub mod svg;

use crate::error::{Error, Result};
use crate::run::provenance::{self, Provenance, Source};
use crate::run::results::{self, significant, ResultsFile, StepRecord, TimingMethod};
use mdbook_driver::book::BookItem;
use mdbook_driver::MDBook;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The name the results pass goes by in messages.
pub const PASS_NAME: &str = "ladder-results";

/// `book/build`: where [`build`] writes the HTML unless told otherwise.
pub fn default_build_dir(book_dir: &Path) -> PathBuf {
    book_dir.join("build")
}

/// Redraws every figure from the results files (the ladder of each GPU). The `ladder` and `stepNN`
/// binaries call this after recording; [`build`] does not, so that building never rewrites sources.
pub fn regenerate(book_dir: &Path) -> Result<Vec<PathBuf>> {
    regenerate_all(book_dir)
}

/// Builds the book at `book_dir` into `dest` (default `book/build`) and returns the folder that holds
/// `index.html`.
pub fn build(book_dir: &Path, dest: Option<&Path>) -> Result<PathBuf> {
    let fail =
        |e: mdbook_driver::errors::Error| Error::Other(format!("building the book in {}: {e:#}", book_dir.display()));
    let mut book = MDBook::load(book_dir).map_err(fail)?;
    if let Some(dest) = dest {
        // mdBook resolves a relative build folder against the book's root; the caller meant ours.
        let dest = if dest.is_absolute() {
            dest.to_path_buf()
        } else {
            std::env::current_dir()
                .map_err(Error::io("reading the current folder"))?
                .join(dest)
        };
        book.config.build.build_dir = dest;
    }
    let src_dir = book.source_dir();
    check_includes(&book, &src_dir)?;
    let pass = LadderResults::load(book_dir)?;
    let mut failure = None;
    book.book.for_each_mut(|item| {
        if let BookItem::Chapter(chapter) = item {
            let Some(path) = chapter.path.clone() else { return };
            match pass.expand(&chapter.content, &path) {
                // Anchored includes are cut here, dedented, before mdBook's `links` pass sees them.
                Ok(text) => {
                    let base = src_dir.join(path.parent().unwrap_or(Path::new("")));
                    chapter.content = crate::book::include::dedent_anchor_includes(&text, &base);
                }
                Err(e) => {
                    failure.get_or_insert(e);
                }
            }
        }
    });
    if let Some(e) = failure {
        return Err(e);
    }
    book.build().map_err(fail)?;
    Ok(book.build_dir_for("html"))
}

// ---------------------------------------------------------------------------------------------
// Include checks

/// Every `{{#include path}}` / `{{#include path:anchor}}` (and `rustdoc_include`) of every chapter must
/// name a file that exists, and an anchor that the file opens and closes.
fn check_includes(book: &MDBook, src_dir: &Path) -> Result<()> {
    let mut problems = Vec::new();
    for item in book.iter() {
        let BookItem::Chapter(chapter) = item else { continue };
        let Some(path) = &chapter.path else { continue };
        let base = src_dir.join(path.parent().unwrap_or(Path::new("")));
        for directive in directives(&chapter.content).into_iter().filter(|d| !d.escaped) {
            let mut words = directive.body.split_whitespace();
            let (Some(kind), Some(target)) = (words.next(), words.next()) else {
                continue;
            };
            if kind != "include" && kind != "rustdoc_include" {
                continue;
            }
            let (file, selector) = match target.split_once(':') {
                Some((file, rest)) => (file, Some(rest)),
                None => (target, None),
            };
            let full = base.join(file);
            let Ok(text) = std::fs::read_to_string(&full) else {
                problems.push(format!(
                    "{}: {{{{#{}}}}} names {}, which cannot be read",
                    path.display(),
                    directive.body,
                    full.display()
                ));
                continue;
            };
            // A selector that starts with a digit or a colon is a line range; anything else an anchor.
            let Some(anchor) =
                selector.filter(|s| !s.is_empty() && !s.starts_with(|c: char| c.is_ascii_digit() || c == ':'))
            else {
                continue;
            };
            if !has_anchor(&text, anchor) {
                problems.push(format!(
                    "{}: {{{{#{}}}}}: {} has no `ANCHOR: {anchor}` … `ANCHOR_END: {anchor}` pair",
                    path.display(),
                    directive.body,
                    full.display()
                ));
            }
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(Error::Other(format!(
            "the book includes what is not there:\n  {}",
            problems.join("\n  ")
        )))
    }
}

/// Whether `text` opens and later closes the anchor `name` (as mdBook matches them: the name is
/// followed by something that cannot continue a name).
fn has_anchor(text: &str, name: &str) -> bool {
    let marks = |marker: &str| -> Vec<usize> {
        text.lines()
            .enumerate()
            .filter(|(_, line)| {
                line.match_indices(marker).any(|(at, _)| {
                    let rest = line[at + marker.len()..].trim_start();
                    rest.strip_prefix(name)
                        .is_some_and(|after| !after.starts_with(|c: char| c.is_alphanumeric() || c == '_' || c == '-'))
                })
            })
            .map(|(n, _)| n)
            .collect()
    };
    let starts = marks("ANCHOR:");
    let ends = marks("ANCHOR_END:");
    starts.first().is_some_and(|s| ends.iter().any(|e| e > s))
}

// ---------------------------------------------------------------------------------------------
// Finding `{{# ... }}` directives

/// One `{{#...}}` in a chapter: where it is and what is between `{{#` and `}}`, trimmed.
struct Directive<'a> {
    start: usize,
    end: usize,
    body: &'a str,
    escaped: bool,
}

/// Every `{{#...}}` in `text`, in order (a `{{#` with no closing `}}` is not a directive).
fn directives(text: &str) -> Vec<Directive<'_>> {
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(offset) = text[from..].find("{{#") {
        let start = from + offset;
        let body_start = start + 3;
        let Some(close) = text[body_start..].find("}}") else {
            break;
        };
        let end = body_start + close + 2;
        let escaped = text[..start].ends_with('\\');
        found.push(Directive {
            start,
            end,
            body: text[body_start..body_start + close].trim(),
            escaped,
        });
        from = end;
    }
    found
}

// ---------------------------------------------------------------------------------------------
// The `ladder-results` pass

/// Expands the `{{#ladder-…}}` directives of chapters from a set of results files.
pub struct LadderResults {
    files: Vec<ResultsFile>,
    /// The book's folder, to tell whether a figure has been drawn; `None` assumes it has.
    book_dir: Option<PathBuf>,
}

impl LadderResults {
    /// A pass over the given results (for tests and previews); figures are assumed to exist.
    pub fn new(files: Vec<ResultsFile>) -> LadderResults {
        LadderResults { files, book_dir: None }
    }

    /// A pass over the results files of the book at `book_dir`.
    pub fn load(book_dir: &Path) -> Result<LadderResults> {
        Ok(LadderResults {
            files: results::load_all(book_dir)?,
            book_dir: Some(book_dir.to_path_buf()),
        })
    }

    /// Replaces every `{{#ladder-…}}` in `text`, a chapter at `chapter` (its path under `src`, which
    /// decides how figure links are written). An unknown `ladder-` directive is an error.
    pub fn expand(&self, text: &str, chapter: &Path) -> Result<String> {
        let mut out = String::with_capacity(text.len());
        let mut copied = 0;
        for d in directives(text) {
            let mut words = d.body.split_whitespace();
            let Some(name) = words.next() else { continue };
            if d.escaped || !name.starts_with("ladder-") {
                continue;
            }
            let args: Vec<&str> = words.collect();
            let bad = |why: &str| {
                Error::Other(format!(
                    "{}: {{{{#{}}}}}: {why} ({PASS_NAME})",
                    chapter.display(),
                    d.body
                ))
            };
            let replacement = match (name, args.as_slice()) {
                ("ladder-table", []) => table(&self.files, None),
                ("ladder-table", [step]) => {
                    let id = parse_step(step).ok_or_else(|| bad("the step is written step01 … step11"))?;
                    table(&self.files, Some(id))
                }
                ("ladder-alternatives", [step]) => {
                    let id = parse_step(step).ok_or_else(|| bad("the step is written step01 … step11"))?;
                    alternatives_table(&self.files, id)
                }
                ("ladder-mx", [step]) => {
                    let id = parse_step(step).ok_or_else(|| bad("the step is written step01 … step11"))?;
                    mx_baselines_table(&self.files, id)
                }
                ("ladder-figure", []) => self.figure_links(chapter),
                ("ladder-sweep-table", []) => sweep_table(&self.files),
                ("ladder-sweep-figure", []) => self.sweep_figure_links(chapter),
                ("ladder-evidence", [step]) => {
                    let id = parse_step(step).ok_or_else(|| bad("the step is written step01 … step11"))?;
                    crate::book::evidence::evidence_table(&self.files, id)
                }
                ("ladder-timeline", [step]) => {
                    let id = parse_step(step).ok_or_else(|| bad("the step is written step01 … step11"))?;
                    crate::book::evidence::timeline_section(self.book_dir.as_deref(), id, chapter)
                }
                ("ladder-l2", []) => crate::book::evidence::l2_roofline(&self.files),
                ("ladder-quoted", []) => crate::book::evidence::quoted_table(),
                ("ladder-sources", []) => crate::book::evidence::sources_list(),
                ("ladder-evidence-value" | "ladder-evidence-delta", [step, key]) => {
                    let id = parse_step(step).ok_or_else(|| bad("the step is written step01 … step11"))?;
                    let text = if name == "ladder-evidence-value" {
                        crate::book::evidence::evidence_value(&self.files, id, key)
                    } else {
                        crate::book::evidence::evidence_delta(&self.files, id, key)
                    };
                    text.ok_or_else(|| bad("unknown quantity: l2_bytes, flops_per_l2_byte, dram_bytes or a key of evidence::QUANTITIES"))?
                }
                ("ladder-timeline-share", [step, part]) => {
                    let id = parse_step(step).ok_or_else(|| bad("the step is written step01 … step11"))?;
                    crate::book::evidence::timeline_share(self.book_dir.as_deref(), id, part)
                        .ok_or_else(|| bad("the part is epilogue, mma, convert, mma_wait, stage_wait or barrier"))?
                }
                ("ladder-clusters", [step]) => {
                    let id = parse_step(step).ok_or_else(|| bad("the step is written step01 … step11"))?;
                    crate::book::evidence::clusters_text(&self.files, id)
                }
                ("ladder-sweep-compare", [step, shape, other]) => {
                    let id = parse_step(step).ok_or_else(|| bad("the step is written step01 … step11"))?;
                    figure_sweep::sweep_compare(&self.files, id, shape, other)
                        .ok_or_else(|| bad("the shapes are written MxNxK, e.g. 8192x8192x1024"))?
                }
                ("ladder-peak", []) => crate::book::peak::peak_table(&self.files),
                ("ladder-peak", ["datasheet"]) => crate::book::peak::datasheet_text(),
                ("ladder-rounds", []) => crate::book::peak::rounds_table(&self.files),
                ("ladder-quote", [id]) => {
                    crate::book::evidence::quote(id).ok_or_else(|| bad("no such quoted number (shared/book/quoted.rs)"))?
                }
                ("ladder-table" | "ladder-figure" | "ladder-sweep-table" | "ladder-sweep-figure", _) => {
                    return Err(bad("too many arguments"))
                }
                _ => {
                    return Err(bad(
                        "unknown directive: the known ones are ladder-table [stepNN], ladder-alternatives stepNN, ladder-mx stepNN, ladder-figure, ladder-sweep-table, ladder-sweep-figure, ladder-evidence stepNN, ladder-timeline stepNN, ladder-l2, ladder-evidence-value|-delta stepNN KEY, ladder-timeline-share stepNN PART, ladder-clusters stepNN, ladder-sweep-compare stepNN MxNxK MxNxK, ladder-peak [datasheet], ladder-rounds, ladder-quoted, ladder-quote ID and ladder-sources",
                    ))
                }
            };
            out.push_str(&text[copied..d.start]);
            out.push_str(replacement.trim_end());
            copied = d.end;
        }
        out.push_str(&text[copied..]);
        Ok(out)
    }

    /// One image per results file, linked relative to the chapter.
    fn figure_links(&self, chapter: &Path) -> String {
        if self.files.is_empty() {
            return format!(
                "No ladder has been drawn yet, because nothing has been recorded on a GPU: {} records results and draws it.\n",
                RECORD_HINT
            );
        }
        let up = "../".repeat(chapter.parent().map_or(0, |p| p.components().count()));
        let mut out = String::new();
        for file in &self.files {
            let slug = file.slug();
            let drawn = self
                .book_dir
                .as_ref()
                .is_none_or(|dir| figure::ladder_svg_path(dir, &slug).is_file());
            if drawn {
                let _ = writeln!(
                    out,
                    "![TFLOPS ladder on {}]({up}figures/ladder-{slug}.svg)\n",
                    file.device.name
                );
            } else {
                let _ = writeln!(
                    out,
                    "The ladder of {} is recorded but not drawn yet: `cargo run --release --bin ladder -- --book-only` draws it.\n",
                    file.device.name
                );
            }
        }
        out
    }

    /// One image of the size sweep per results file that has sweep records, linked relative to the
    /// chapter; one sentence when no file has any.
    fn sweep_figure_links(&self, chapter: &Path) -> String {
        let swept: Vec<&ResultsFile> = self
            .files
            .iter()
            .filter(|f| f.records.iter().any(figure_sweep::is_drawn))
            .collect();
        if swept.is_empty() {
            return format!(
                "No size sweep has been drawn yet, because none has been recorded: {} records one and draws it.\n",
                sweep_hint()
            );
        }
        let up = "../".repeat(chapter.parent().map_or(0, |p| p.components().count()));
        let mut out = String::new();
        for file in swept {
            let slug = file.slug();
            let drawn = self
                .book_dir
                .as_ref()
                .is_none_or(|dir| figure_sweep::sweep_svg_path(dir, &slug).is_file());
            if drawn {
                let _ = writeln!(
                    out,
                    "![Size sweep on {}]({up}figures/sweep-{slug}.svg)\n",
                    file.device.name
                );
            } else {
                let _ = writeln!(
                    out,
                    "The size sweep of {} is recorded but not drawn yet: `cargo run --release --bin ladder -- --book-only` draws it.\n",
                    file.device.name
                );
            }
        }
        out
    }
}

/// How to record a sweep: the top step's binary with `--sweep`.
fn sweep_hint() -> String {
    let top = crate::run::steps::ALL
        .last()
        .map_or_else(|| "stepNN".to_string(), |s| s.binary());
    format!("on a machine with an NVIDIA GPU, `cargo run --release --bin {top} -- --sweep` (or any other step with `--sweep`)")
}

const RECORD_HINT: &str =
    "on a machine with an NVIDIA GPU, `cargo run --release --bin ladder` (every step) or `cargo run --release --bin stepNN` (one step)";

/// `step03` → 3.
fn parse_step(word: &str) -> Option<u8> {
    let digits = word.strip_prefix("step")?;
    if digits.len() != 2 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok().filter(|n| (1..=99).contains(n))
}

// ---------------------------------------------------------------------------------------------
// Tables

/// The results table as Markdown: every record of every file (`step = None`), or one step's records
/// followed by its verification checks. Sweep records are left out: [`sweep_table`] shows them.
pub fn table(files: &[ResultsFile], step: Option<u8>) -> String {
    let shown = |r: &StepRecord| !r.sweep && step.is_none_or(|s| r.step == s);
    let rows: Vec<(&ResultsFile, &StepRecord)> = files
        .iter()
        .flat_map(|f| f.records.iter().map(move |r| (f, r)))
        .filter(|(_, r)| shown(r))
        .collect();
    if rows.is_empty() {
        return match step {
            None => format!("Nothing has been recorded on a GPU yet: {RECORD_HINT} records it here.\n"),
            Some(s) => format!(
                "Step {s:02} has not been recorded on a GPU yet: `cargo run --release --bin step{s:02}` on a machine with an NVIDIA GPU records it here.\n"
            ),
        };
    }

    // The GPU is a column only when rows come from more than one; otherwise the caption names it.
    let gpus = files
        .iter()
        .filter(|f| rows.iter().any(|(g, _)| std::ptr::eq(*g, *f)))
        .count();
    let mut header = if gpus > 1 { vec!["GPU"] } else { Vec::new() };
    if step.is_none() {
        header.push("step");
    }
    header.extend([
        "shape",
        "arch",
        "median ms",
        "TFLOPS",
        "× cuBLAS bf16",
        "× cuBLAS SGEMM",
        "rel. error vs previous",
        "rel. error vs cuBLAS",
        "registers",
        "shared memory",
    ]);
    let numeric_from = header.iter().position(|h| *h == "median ms").unwrap_or(header.len());
    let mut out = String::new();
    if gpus == 1 {
        let _ = writeln!(out, "On the {}:\n", rows[0].0.device.name);
    }
    let _ = writeln!(out, "| {} |", header.join(" | "));
    let align: Vec<&str> = (0..header.len())
        .map(|i| if i >= numeric_from { "---:" } else { ":---" })
        .collect();
    let _ = writeln!(out, "|{}|", align.join("|"));
    let mut marks = Marks::default();
    for (file, r) in &rows {
        let mut cells = if gpus > 1 {
            vec![file.device.name.clone()]
        } else {
            Vec::new()
        };
        if step.is_none() {
            cells.push(r.label());
        }
        cells.extend([
            marks.on(shape_text(r), provenance::of_record(r)),
            r.arch.clone(),
            significant(r.time.median_ms, 3),
            significant(r.time.tflops, 3),
            ratio_text(Some(r.ratio_bf16)),
            ratio_text(r.ratio_sgemm),
            check_text(r, false),
            check_text(r, true),
            registers_text(r),
            smem_text(r),
        ]);
        let cells: Vec<String> = cells.iter().map(|c| c.replace('|', "\\|")).collect();
        let _ = writeln!(out, "| {} |", cells.join(" | "));
    }
    out.push('\n');
    out.push_str(&marks.note());
    out.push_str(
        "× cuBLAS is this kernel's TFLOPS over cuBLAS's, timed in the same process on the same inputs \
         (1 = as fast); from the alternating records on, in one loop that launched the kernel and cuBLAS \
         in turn, so that both ran at the same clocks. A relative error is ‖C − C_ref‖_F / ‖C_ref‖_F, \
         against the reference in brackets.\n\n",
    );
    for file in files.iter().filter(|f| rows.iter().any(|(g, _)| std::ptr::eq(*g, *f))) {
        let _ = writeln!(out, "{}\n", device_text(file, shown));
    }
    if let Some(s) = step {
        let _ = writeln!(out, "Timing of every recorded run of step {s:02}:\n");
        for (file, r) in &rows {
            let _ = writeln!(
                out,
                "- {}, {}: {}",
                file.device.name,
                shape_text(r),
                timing_text(r, &file.device)
            );
        }
        out.push('\n');
        let _ = writeln!(out, "Verification of every recorded run of step {s:02}:\n");
        for (file, r) in &rows {
            for c in &r.checks {
                let verdict = if c.passed {
                    "passed".to_string()
                } else {
                    format!(
                        "**failed**{}",
                        c.first_failure.as_ref().map(|f| format!(" ({f})")).unwrap_or_default()
                    )
                };
                let _ = writeln!(
                    out,
                    "- {}, {}, seed {}, against {}: relative Frobenius error {} (bound {}), max |error| {} (elementwise bound `{}`) over {} elements: {verdict}.",
                    file.device.name,
                    shape_text(r),
                    r.seed,
                    c.against,
                    error_text(c.rel_fro, 2),
                    error_text(c.rel_fro_bound, 1),
                    significant(c.max_abs, 3),
                    c.elementwise_bound.replace('`', "'"),
                    c.compared,
                );
            }
        }
        let _ = writeln!(out, "\nTo repeat a run exactly: `{}`.", rerun_command(rows[0].1));
    }
    out
}

/// The size sweep as Markdown: one row per sweep record, by GPU, then step, then shape in the sweep's
/// order; then what the ratio means, the devices, and how to repeat each sweep.
pub fn sweep_table(files: &[ResultsFile]) -> String {
    let mut rows: Vec<(&ResultsFile, &StepRecord)> = Vec::new();
    for file in files {
        let mut swept: Vec<&StepRecord> = file.records.iter().filter(|r| r.sweep).collect();
        let order = crate::run::sweep::axis_order(swept.iter().map(|r| r.shape));
        swept.sort_by_key(|r| (r.step, order.iter().position(|s| *s == r.shape)));
        rows.extend(swept.into_iter().map(|r| (file, r)));
    }
    if rows.is_empty() {
        return format!(
            "No size sweep has been recorded yet: {} records one here.\n",
            sweep_hint()
        );
    }
    let header = [
        "GPU",
        "step",
        "shape",
        "median ms",
        "TFLOPS",
        "cuBLAS bf16 TFLOPS",
        "× cuBLAS bf16",
        "SM clock, MHz",
        "rel. error vs previous",
        "rel. error vs cuBLAS",
    ];
    let mut out = String::new();
    let _ = writeln!(out, "| {} |", header.join(" | "));
    let align: Vec<&str> = (0..header.len())
        .map(|i| if i >= 3 { "---:" } else { ":---" })
        .collect();
    let _ = writeln!(out, "|{}|", align.join("|"));
    let mut marks = Marks::default();
    for (file, r) in &rows {
        let cells = [
            file.device.name.clone(),
            r.label(),
            marks.on(shape_text(r), provenance::of_record(r)),
            significant(r.time.median_ms, 3),
            significant(r.time.tflops, 3),
            significant(r.cublas_bf16.tflops, 3),
            ratio_text(Some(r.ratio_bf16)),
            r.clocks
                .as_ref()
                .map_or_else(|| "—".into(), |c| c.sm_mhz_median.to_string()),
            check_text(r, false),
            check_text(r, true),
        ];
        let cells: Vec<String> = cells.iter().map(|c| c.replace('|', "\\|")).collect();
        let _ = writeln!(out, "| {} |", cells.join(" | "));
    }
    out.push('\n');
    out.push_str(&marks.note());
    out.push_str(
        "At every shape the step was first verified, against the previous step and against cuBLAS bf16 on the \
         same inputs, then timed in one loop with cuBLAS bf16, the two launched in turn; × cuBLAS is the ratio \
         of the two medians from that loop (above 1: the step is faster). The SM clock is NVML's median while \
         that loop ran.\n\n",
    );
    for file in files.iter().filter(|f| rows.iter().any(|(g, _)| std::ptr::eq(*g, *f))) {
        let _ = writeln!(out, "{}\n", device_text(file, |r| r.sweep));
    }
    let mut repeat = Vec::new();
    for (file, r) in &rows {
        let same_step: Vec<u64> = rows
            .iter()
            .filter(|(g, q)| std::ptr::eq(*g, *file) && q.step == r.step)
            .map(|(_, q)| q.seed)
            .collect();
        let seed = if same_step.iter().all(|s| *s == same_step[0]) {
            format!(" --seed {}", same_step[0])
        } else {
            String::new()
        };
        let line = format!(
            "- {}, {}: `cargo run --release --bin {} -- --sweep{seed}`",
            file.device.name,
            r.label(),
            r.step_id()
        );
        if !repeat.contains(&line) {
            repeat.push(line);
        }
    }
    let _ = writeln!(out, "To repeat a sweep:\n\n{}", repeat.join("\n"));
    out
}

/// An MXFP8 step's baselines as Markdown: per (plain) record, the step's kernel and what it is measured
/// against in the same alternating loop: cuBLAS bf16 on the exactly dequantized operands, "dequantize,
/// then cuBLAS bf16" (both operands), and cuBLASLt fp8 with one scale per tensor (the fp8 ceiling).
pub fn mx_baselines_table(files: &[ResultsFile], step: u8) -> String {
    let rows: Vec<(&ResultsFile, &StepRecord)> = files
        .iter()
        .flat_map(|f| f.records.iter().map(move |r| (f, r)))
        .filter(|(_, r)| !r.sweep && r.step == step && r.mx.is_some())
        .collect();
    if rows.is_empty() {
        return format!(
            "No MXFP8 baseline of step {step:02} has been recorded on a GPU yet: `cargo run --release --bin step{step:02}` on a machine with an NVIDIA GPU times them with the step and records them here.\n"
        );
    }
    let mut out = String::new();
    let _ = writeln!(
        out,
        "| GPU | shape | the step's kernel | cuBLAS bf16, dequantized operands | dequantize, then cuBLAS bf16 | cuBLASLt fp8, one scale per tensor |"
    );
    let _ = writeln!(out, "|:---|:---|---:|---:|---:|---:|");
    let cell = |t: &crate::run::results::Timing, ratio: f64| {
        format!(
            "{} ms, {} TFLOPS (step × {})",
            significant(t.median_ms, 3),
            significant(t.tflops, 3),
            significant(ratio, 3)
        )
    };
    let mut marks = Marks::default();
    for (file, r) in &rows {
        let mx = r.mx.as_ref().expect("filtered above");
        let fp8 = match (&mx.cublaslt_fp8_tensorwise, mx.ratio_cublaslt_fp8_tensorwise) {
            (Some(t), Some(ratio)) => cell(t, ratio),
            _ => format!(
                "not run: {}",
                mx.cublaslt_fp8_unavailable.as_deref().unwrap_or("no timing")
            ),
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} ms, {} TFLOPS | {} | {} | {fp8} |",
            file.device.name,
            marks.on(shape_text(r), provenance::of_record(r)),
            significant(r.time.median_ms, 3),
            significant(r.time.tflops, 3),
            cell(&r.cublas_bf16, r.ratio_bf16),
            cell(&mx.dequantize_then_cublas_bf16, mx.ratio_dequantize_then_cublas_bf16),
        );
    }
    out.push('\n');
    out.push_str(&marks.note());
    out.push_str(
        "All four were timed in one alternating loop (the step's table gives the clocks), on the same \
         inputs; \"step ×\" is the step's speed over the baseline's, above 1 where the step is faster. The \
         dequantize kernel is the step's own conversion (shared/check/mx_dequant.cu), run on A and on B; \
         cuBLASLt fp8 computes the product of the e4m3 bytes without their block scales: a ceiling, not \
         the same product.\n",
    );
    out
}

/// A step's alternative designs as Markdown: one row per alternative per (plain) record of the step,
/// beside the step's own kernel from the same alternating loop, then their verification.
pub fn alternatives_table(files: &[ResultsFile], step: u8) -> String {
    let rows: Vec<(&ResultsFile, &StepRecord)> = files
        .iter()
        .flat_map(|f| f.records.iter().map(move |r| (f, r)))
        .filter(|(_, r)| !r.sweep && r.step == step && !r.alternatives.is_empty())
        .collect();
    if rows.is_empty() {
        return format!(
            "No alternative design of step {step:02} has been recorded on a GPU yet: `cargo run --release --bin step{step:02}` on a machine with an NVIDIA GPU times them with the step and records them here.\n"
        );
    }
    let mut out = String::new();
    let _ = writeln!(
        out,
        "| GPU | shape | design | TFLOPS | × cuBLAS bf16 | the step's kernel, TFLOPS | × the step's kernel | registers | shared memory |"
    );
    let _ = writeln!(out, "|:---|:---|:---|---:|---:|---:|---:|---:|---:|");
    let mut marks = Marks::default();
    for (file, r) in &rows {
        for a in &r.alternatives {
            let registers = match (a.registers, a.local_bytes) {
                (None, _) => "—".to_string(),
                (Some(n), Some(local)) if local > 0 => format!("{n} (+{local} B local)"),
                (Some(n), _) => n.to_string(),
            };
            // The alternative's own source decides its mark; the step's kernel (its ratio column)
            // is marked in the step's table.
            let design = format!("{} (`{}`)", a.name, a.kernel.rsplit('/').next().unwrap_or(&a.kernel));
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} | {} | {registers} | {} |",
                file.device.name,
                shape_text(r),
                marks.on(design, provenance::of_alternative(r, a)),
                significant(a.time.tflops, 3),
                significant(a.ratio_bf16, 3),
                significant(r.time.tflops, 3),
                significant(a.ratio_step, 3),
                bytes_text(a.dynamic_smem_bytes as u64),
            );
        }
    }
    out.push('\n');
    out.push_str(&marks.note());
    out.push_str(
        "Each alternative was timed in its step's alternating loop, with the step's own kernel and cuBLAS \
         (the step's table above gives their times and clocks), so all three ratios compare kernels that \
         ran at the same clocks.\n\n",
    );
    let _ = writeln!(out, "Verification of every recorded alternative of step {step:02}:\n");
    for (file, r) in &rows {
        for a in &r.alternatives {
            let checks: Vec<String> = a
                .checks
                .iter()
                .map(|c| {
                    format!(
                        "{} {} (bound {}){}",
                        c.against,
                        error_text(c.rel_fro, 2),
                        error_text(c.rel_fro_bound, 1),
                        if c.passed { "" } else { " **failed**" }
                    )
                })
                .collect();
            let _ = writeln!(
                out,
                "- {}, {}, seed {}, {}: relative Frobenius error against {}.",
                file.device.name,
                shape_text(r),
                r.seed,
                a.name,
                checks.join("; ")
            );
        }
    }
    out
}

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
fn shape_text(r: &StepRecord) -> String {
    let s = r.shape;
    if s.m == s.n && s.n == s.k {
        format!("{}³", s.m)
    } else {
        format!("{}×{}×{}", s.m, s.n, s.k)
    }
}

fn ratio_text(ratio: Option<f64>) -> String {
    ratio.map_or_else(|| "—".into(), |r| significant(r, 3))
}

/// The error against cuBLAS (`cublas`) or against the other reference (the previous step, the CPU).
fn check_text(r: &StepRecord, cublas: bool) -> String {
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
fn error_text(x: f64, decimals: usize) -> String {
    if x == 0.0 {
        "0".into()
    } else if x.is_finite() {
        format!("{x:.decimals$e}")
    } else {
        format!("{x}")
    }
}

fn registers_text(r: &StepRecord) -> String {
    match (r.registers, r.local_bytes) {
        (None, _) => "—".into(),
        (Some(n), Some(local)) if local > 0 => format!("{n} (+{local} B local)"),
        (Some(n), _) => n.to_string(),
    }
}

fn smem_text(r: &StepRecord) -> String {
    if r.static_smem_bytes.is_none() && r.dynamic_smem_bytes == 0 {
        return "—".into();
    }
    bytes_text(r.smem_bytes() as u64)
}

/// `48 KiB`, `8.5 KiB`, `512 B`, `50 MiB`, `80 GiB`.
fn bytes_text(bytes: u64) -> String {
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
fn timing_text(r: &StepRecord, device: &crate::run::results::DeviceInfo) -> String {
    let references = if r.cublas_sgemm.is_some() {
        "cuBLAS bf16 and cuBLAS SGEMM"
    } else {
        "cuBLAS bf16"
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
        "; cuBLAS bf16 reached {} TFLOPS",
        significant(r.cublas_bf16.tflops, 3)
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
fn clocks_seen(shown: &[&StepRecord]) -> String {
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
fn device_text(file: &ResultsFile, shown: impl Fn(&StepRecord) -> bool) -> String {
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
fn rerun_command(r: &StepRecord) -> String {
    let s = r.shape;
    let shape = if s.m == s.n && s.n == s.k {
        format!("--size {}", s.m)
    } else {
        format!("--m {} --n {} --k {}", s.m, s.n, s.k)
    };
    format!("cargo run --release --bin {} -- {shape} --seed {}", r.step_id(), r.seed)
}

/// Draws the ladder of every results file under `book_dir` into `book/src/figures`, its size sweep
/// when it has sweep records ([`crate::book::figure_sweep`]), and the figures computed from the encodings
/// rather than from measurements (the swizzle bank picture, [`crate::book::figure_banks`]). A figure whose
/// SVG is already up to date is left untouched. Returns the paths of the figures drawn from results,
/// in results-file order (each file's ladder, then its sweep).
pub fn regenerate_all(book_dir: &Path) -> Result<Vec<PathBuf>> {
    let mut paths = Vec::new();
    for file in crate::run::results::load_all(book_dir)? {
        let path = figure::ladder_svg_path(book_dir, &file.slug());
        figure::render_ladder(&file, &path)?;
        paths.push(path);
        let sweep = crate::book::figure_sweep::sweep_svg_path(book_dir, &file.slug());
        if crate::book::figure_sweep::render_sweep(&file, &sweep)? {
            paths.push(sweep);
        }
    }
    crate::book::figure_banks::render_swizzle_banks(&crate::book::figure_banks::swizzle_banks_svg_path(book_dir))?;
    Ok(paths)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::results::tests::{device, record_of};

    fn file() -> ResultsFile {
        ResultsFile {
            device: device("NVIDIA H100 80GB HBM3"),
            records: vec![
                record_of(1, "naive", 4096, 100.0),
                record_of(3, "register_tiling", 4096, 4.0),
            ],
        }
    }

    /// Step 11's `promote` alternative as registered now.
    fn promote_kernel() -> &'static crate::run::registry::KernelFile {
        let step = crate::run::steps::get(11).unwrap();
        &step.alternatives.iter().find(|a| a.name == "promote").unwrap().kernel
    }

    /// A row is marked for what it was measured on (another source, an unknown one, a dirty build),
    /// and the marks used are explained once, under the table; a record of the code shown is not.
    #[test]
    fn rows_measured_on_other_code_are_marked_and_explained_once() {
        let matching = record_of(1, "naive", 4096, 100.0);
        assert_eq!(provenance::of_record(&matching).source, Source::Matches);
        let mut changed = record_of(2, "smem_tiling", 4096, 30.0);
        changed.source_hash = Some("fnv1a64:0123456789abcdef".into());
        let mut unhashed = record_of(3, "register_tiling", 4096, 4.0);
        unhashed.source_hash = None;
        let mut dirty = record_of(2, "smem_tiling", 8192, 240.0);
        dirty.git = "abc1234-dirty".into();
        let mut both = record_of(3, "register_tiling", 8192, 32.0);
        both.source_hash = Some("fnv1a64:0123456789abcdef".into());
        both.git = "abc1234-dirty".into();
        let file = ResultsFile {
            device: device("NVIDIA H200"),
            records: vec![matching.clone(), changed, unhashed, dirty, both],
        };

        let all = table(std::slice::from_ref(&file), None);
        let row = |label: &str, shape: &str| {
            all.lines()
                .find(|l| l.contains(label) && l.contains(shape))
                .unwrap_or_else(|| panic!("{label} {shape}: {all}"))
                .to_string()
        };
        assert!(
            row("01 naive", "4096³").contains("| 01 naive | 4096³ | sm_90 |"),
            "{all}"
        );
        assert!(row("02 smem_tiling", "4096³").contains("| 4096³ † |"), "{all}");
        assert!(row("03 register_tiling", "4096³").contains("| 4096³ ° |"), "{all}");
        assert!(row("02 smem_tiling", "8192³").contains("| 8192³ ‡ |"), "{all}");
        assert!(row("03 register_tiling", "8192³").contains("| 8192³ †‡ |"), "{all}");
        // One line under the table, each mark explained once.
        let note: Vec<&str> = all
            .lines()
            .filter(|l| l.starts_with("† measured on a different"))
            .collect();
        assert_eq!(note.len(), 1, "{all}");
        assert!(
            note[0].contains("; ° recorded before records carried a hash")
                && note[0].contains("; ‡ built from a tree with uncommitted changes"),
            "{}",
            note[0]
        );
        assert_eq!(all.matches("kernel source").count(), 2, "{all}");

        // A table of clean records has neither marks nor the note.
        let clean = ResultsFile {
            device: device("NVIDIA H200"),
            records: vec![matching],
        };
        let text = table(std::slice::from_ref(&clean), Some(1));
        assert!(
            !text.contains(['†', '°', '‡']) && !text.contains("kernel source"),
            "{text}"
        );

        // The evidence columns carry the same marks.
        let mut profiled = file.clone();
        for r in &mut profiled.records {
            r.profile = Some(crate::evidence::Profile {
                source: crate::evidence::ProfileSource::Computed,
                note: None,
                computed: crate::evidence::computed_for_shape(r.shape),
                ncu: None,
            });
        }
        profiled.records.retain(|r| r.shape.m == 4096);
        let evidence = crate::book::evidence::evidence_table(&[profiled], 3);
        assert!(
            evidence.contains("| | 02 smem_tiling † | 03 register_tiling ° |") && evidence.contains("† measured on"),
            "{evidence}"
        );
    }

    /// An alternative is marked by its own source, found by name.
    #[test]
    fn alternatives_are_marked_by_their_own_source() {
        let mut mx = record_of(11, "mxfp8", 4096, 0.35);
        let alternative = |hash: Option<String>| crate::run::results::AlternativeRecord {
            name: "promote".into(),
            design: "design (a)".into(),
            kernel: "steps/step11_mxfp8/sm90_promote.cu".into(),
            source_hash: hash,
            time: mx.time.clone(),
            ratio_bf16: 0.227,
            ratio_step: 0.464,
            checks: Vec::new(),
            registers: Some(168),
            dynamic_smem_bytes: 218 * 1024,
            local_bytes: Some(0),
        };
        mx.alternatives = vec![
            alternative(Some(provenance::source_hash(promote_kernel()))),
            alternative(Some("fnv1a64:0123456789abcdef".into())),
            alternative(None),
        ];
        let text = alternatives_table(
            &[ResultsFile {
                device: device("NVIDIA H200"),
                records: vec![mx],
            }],
            11,
        );
        let rows: Vec<&str> = text.lines().filter(|l| l.contains("| promote")).collect();
        assert!(rows[0].contains("| promote (`sm90_promote.cu`) | "), "{text}");
        assert!(rows[1].contains("| promote (`sm90_promote.cu`) † | "), "{text}");
        assert!(rows[2].contains("| promote (`sm90_promote.cu`) ° | "), "{text}");
        assert!(text.contains("† measured on a different kernel source") && text.contains("° recorded before"));
    }

    #[test]
    fn finds_directives_and_escapes() {
        let text = "a {{#ladder-table}} b \\{{#ladder-figure}} c {{#include x.cu:kernel}} {{# open";
        let found = directives(text);
        let bodies: Vec<(&str, bool)> = found.iter().map(|d| (d.body, d.escaped)).collect();
        assert_eq!(
            bodies,
            [
                ("ladder-table", false),
                ("ladder-figure", true),
                ("include x.cu:kernel", false)
            ]
        );
    }

    #[test]
    fn mx_baselines_show_for_the_mx_step_and_say_when_there_are_none() {
        let pass = LadderResults::new(vec![file()]);
        let none = pass.expand("{{#ladder-mx step11}}", Path::new("x.md")).unwrap();
        assert!(none.contains("No MXFP8 baseline of step 11"), "{none}");
        let mut mx = record_of(11, "mxfp8", 4096, 0.83);
        let mut slower = mx.time.clone();
        slower.tflops = 600.0;
        mx.mx = Some(crate::run::results::MxBaselines {
            quantizer: crate::run::results::MxBaselines::QUANTIZER.into(),
            dequantize_then_cublas_bf16: slower,
            ratio_dequantize_then_cublas_bf16: 1.127,
            cublaslt_fp8_tensorwise: None,
            ratio_cublaslt_fp8_tensorwise: None,
            cublaslt_fp8_output: "fp32".into(),
            cublaslt_fp8_unavailable: Some("CUBLAS_STATUS_NOT_SUPPORTED".into()),
        });
        let mut with = file();
        with.records.push(mx);
        let table = LadderResults::new(vec![with])
            .expand("{{#ladder-mx step11}}", Path::new("x.md"))
            .unwrap();
        assert!(table.contains("600 TFLOPS (step × 1.13)"), "{table}");
        assert!(table.contains("not run: CUBLAS_STATUS_NOT_SUPPORTED"), "{table}");
        assert!(!table.contains("No MXFP8 baseline"), "{table}");
    }

    #[test]
    fn alternatives_show_beside_their_step_and_say_when_there_are_none() {
        let pass = LadderResults::new(vec![file()]);
        let none = pass
            .expand("{{#ladder-alternatives step11}}", Path::new("x.md"))
            .unwrap();
        assert!(none.contains("No alternative design of step 11"), "{none}");
        let mut mx = record_of(11, "mxfp8", 4096, 0.35);
        let mut time = mx.time.clone();
        time.tflops = 182.0;
        mx.alternatives.push(crate::run::results::AlternativeRecord {
            name: "promote".into(),
            design: "design (a)".into(),
            kernel: "steps/step11_mxfp8/sm90_promote.cu".into(),
            source_hash: Some(provenance::source_hash(promote_kernel())),
            time,
            ratio_bf16: 0.227,
            ratio_step: 0.464,
            checks: mx.checks.clone(),
            registers: Some(168),
            dynamic_smem_bytes: 218 * 1024,
            local_bytes: Some(0),
        });
        let mut with = file();
        with.records.push(mx);
        let pass = LadderResults::new(vec![with]);
        let table = pass
            .expand("{{#ladder-alternatives step11}}", Path::new("x.md"))
            .unwrap();
        assert!(
            table.contains("| promote (`sm90_promote.cu`) | 182 | 0.227 |")
                && table.contains("| 0.464 | 168 | 218 KiB |"),
            "{table}"
        );
        assert!(
            table.contains("Verification of every recorded alternative of step 11"),
            "{table}"
        );
        assert!(pass.expand("{{#ladder-alternatives}}", Path::new("x.md")).is_err());
    }

    #[test]
    fn expands_tables_and_figures() {
        let pass = LadderResults::new(vec![file()]);
        let text = pass
            .expand(
                "# R\n\n{{#ladder-figure}}\n\n{{#ladder-table}}\n",
                Path::new("results.md"),
            )
            .unwrap();
        assert!(text.contains("![TFLOPS ladder on NVIDIA H100 80GB HBM3](figures/ladder-nvidia-h100-80gb-hbm3.svg)"));
        // One GPU: named once above the table, not in a column.
        assert!(
            text.contains("On the NVIDIA H100 80GB HBM3:\n\n| step | shape |"),
            "{text}"
        );
        assert!(text.contains("| 01 naive | 4096³ | sm_90 | 100 | 1.37 |"), "{text}");
        assert!(text.contains("03 register_tiling"));
        assert!(!text.contains("{{#"));

        let nested = pass
            .expand("{{#ladder-figure}}", Path::new("part/deeper/x.md"))
            .unwrap();
        assert!(nested.contains("](../../figures/ladder-nvidia-h100-80gb-hbm3.svg)"));

        let step = pass.expand("{{#ladder-table step03}}", Path::new("step03.md")).unwrap();
        assert!(!step.contains("01 naive") && step.contains("| 4.00 | 34.4 |"), "{step}");
        assert!(
            step.contains("against cuBLAS bf16: relative Frobenius error 1.25e-3 (bound 1.0e-2)"),
            "{step}"
        );
        assert!(step.contains("cargo run --release --bin step03 -- --size 4096 --seed 42"));

        let escaped = pass.expand("\\{{#ladder-table}}", Path::new("x.md")).unwrap();
        assert_eq!(escaped, "\\{{#ladder-table}}");
        assert!(pass
            .expand("{{#ladder-tabel}}", Path::new("x.md"))
            .unwrap_err()
            .to_string()
            .contains("unknown"));
        assert!(pass.expand("{{#ladder-table 3}}", Path::new("x.md")).is_err());
    }

    #[test]
    fn says_how_to_record_when_empty() {
        let pass = LadderResults::new(Vec::new());
        let text = pass
            .expand("{{#ladder-table}}\n{{#ladder-figure}}\n", Path::new("results.md"))
            .unwrap();
        assert!(
            text.contains("Nothing has been recorded on a GPU yet")
                && text.contains("cargo run --release --bin ladder")
        );
        let one = LadderResults::new(vec![file()]);
        let text = one.expand("{{#ladder-table step02}}", Path::new("s.md")).unwrap();
        assert!(
            text.contains("Step 02 has not been recorded") && text.contains("--bin step02"),
            "{text}"
        );
    }

    #[test]
    fn sweep_directives_with_and_without_sweep_records() {
        // No sweep recorded: one line each that says how to record one, and nothing fails.
        let plain = LadderResults::new(vec![file()]);
        let text = plain
            .expand(
                "{{#ladder-sweep-figure}}\n\n{{#ladder-sweep-table}}\n",
                Path::new("results.md"),
            )
            .unwrap();
        assert!(
            text.contains("No size sweep has been drawn yet")
                && text.contains("No size sweep has been recorded yet")
                && text.contains("-- --sweep`"),
            "{text}"
        );
        assert!(!text.contains("{{#") && !text.contains('|'), "{text}");
        let empty = LadderResults::new(Vec::new());
        assert!(empty
            .expand("{{#ladder-sweep-table}}", Path::new("x.md"))
            .unwrap()
            .contains("No size sweep has been recorded yet"));

        // Swept: the figure and a table of the sweep records only, in the sweep's shape order.
        let swept = LadderResults::new(vec![crate::book::figure_sweep::tests::synthetic()]);
        let figure = swept
            .expand("{{#ladder-sweep-figure}}", Path::new("results.md"))
            .unwrap();
        assert_eq!(
            figure.trim(),
            "![Size sweep on NVIDIA H200](figures/sweep-nvidia-h200.svg)"
        );
        let nested = swept.expand("{{#ladder-sweep-figure}}", Path::new("a/b.md")).unwrap();
        assert!(nested.contains("](../figures/sweep-nvidia-h200.svg)"));
        let table = swept
            .expand("{{#ladder-sweep-table}}", Path::new("results.md"))
            .unwrap();
        let rows: Vec<&str> = table.lines().filter(|l| l.starts_with("| NVIDIA H200 |")).collect();
        assert_eq!(rows.len(), 22, "{table}");
        assert!(
            rows[0].starts_with("| NVIDIA H200 | 08 pipeline | 1024³ |"),
            "{}",
            rows[0]
        );
        assert!(
            rows[11].starts_with("| NVIDIA H200 | 10 persistent | 1024³ |"),
            "{}",
            rows[11]
        );
        assert!(
            rows[17].contains("| 4096×14336×4096 |") && rows[17].contains("| 1.01 |"),
            "{}",
            rows[17]
        );
        assert!(
            rows[18].contains("| 8192×8192×1024 |") && rows[18].contains("| 0.930 |"),
            "{}",
            rows[18]
        );
        assert!(rows.iter().all(|r| r.contains("| 1755 |")), "{table}");
        assert!(
            table.contains("`cargo run --release --bin step10 -- --sweep --seed 42`"),
            "{table}"
        );
        assert!(
            table.contains("`cargo run --release --bin step08 -- --sweep --seed 42`"),
            "{table}"
        );
        assert!(table.contains("**NVIDIA H200**"), "{table}");
        assert!(swept
            .expand("{{#ladder-sweep-table step10}}", Path::new("x.md"))
            .is_err());
        assert!(swept.expand("{{#ladder-sweep-figure x}}", Path::new("x.md")).is_err());
    }

    #[test]
    fn the_gpu_is_a_column_only_when_rows_come_from_several() {
        let mut other = file();
        other.device.name = "NVIDIA H200".into();
        let two = table(&[file(), other], None);
        assert!(two.starts_with("| GPU | step |"), "{two}");
        assert!(two.contains("| NVIDIA H200 | 01 naive |"), "{two}");
        assert!(!table(&[file()], None).contains("| GPU |"));
    }

    #[test]
    fn the_ladder_and_step_tables_leave_sweep_records_out() {
        let pass = LadderResults::new(vec![crate::book::figure_sweep::tests::synthetic()]);
        let all = pass.expand("{{#ladder-table}}", Path::new("results.md")).unwrap();
        let rows: Vec<&str> = all.lines().filter(|l| l.starts_with("| 10 persistent |")).collect();
        assert_eq!(rows.len(), 1, "only the plain run of step 10: {all}");
        assert!(rows[0].contains("| 4096³ |"));
        let step = pass.expand("{{#ladder-table step10}}", Path::new("s.md")).unwrap();
        assert!(!step.contains("1024³") && !step.contains("4096×14336×4096"), "{step}");
        assert!(pass
            .expand("{{#ladder-table step08}}", Path::new("s.md"))
            .unwrap()
            .contains("Step 08 has not been recorded"));
    }

    #[test]
    fn anchors_are_matched_whole() {
        let src =
            "// ANCHOR: load_tile\nx\n// ANCHOR_END: load_tile\n// ANCHOR: kernel_body\n// ANCHOR_END: kernel_body\n";
        assert!(has_anchor(src, "load_tile"));
        assert!(!has_anchor(src, "load"));
        assert!(!has_anchor(src, "kernel"));
        assert!(!has_anchor("// ANCHOR_END: a\n// ANCHOR: a\n", "a"));
    }

    #[test]
    fn a_missing_anchor_or_file_fails_the_build_and_says_where() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("book/src")).unwrap();
        std::fs::write(
            root.join("book/book.toml"),
            "[book]\ntitle = \"t\"\n[build]\ncreate-missing = false\n",
        )
        .unwrap();
        std::fs::write(root.join("book/src/SUMMARY.md"), "# Summary\n\n[One](one.md)\n").unwrap();
        std::fs::write(root.join("k.cu"), "// ANCHOR: body\nint x;\n// ANCHOR_END: body\n").unwrap();
        let chapter = |text: &str| std::fs::write(root.join("book/src/one.md"), text).unwrap();
        let out = root.join("out");

        chapter("```cpp\n{{#include ../../k.cu:body}}\n```\n\n{{#ladder-table}}\n");
        let built = build(&root.join("book"), Some(&out)).unwrap();
        let html = std::fs::read_to_string(built.join("one.html")).unwrap();
        assert!(html.contains("int x;") && html.contains("Nothing has been recorded on a GPU yet"));

        chapter("{{#include ../../k.cu:bdy}}\n");
        let err = build(&root.join("book"), Some(&out)).unwrap_err().to_string();
        assert!(err.contains("one.md") && err.contains("ANCHOR: bdy"), "{err}");

        chapter("{{#include ../../nowhere.cu}}\n\\{{#include ../../nowhere.cu}}\n");
        let err = build(&root.join("book"), Some(&out)).unwrap_err().to_string();
        assert!(
            err.contains("nowhere.cu") && err.matches("nowhere.cu").count() == 2,
            "only the unescaped one: {err}"
        );

        chapter("{{#ladder-tabel}}\n");
        assert!(build(&root.join("book"), Some(&out))
            .unwrap_err()
            .to_string()
            .contains("unknown directive"));
    }

    #[test]
    fn bytes_and_steps() {
        assert_eq!(bytes_text(8192), "8 KiB");
        assert_eq!(bytes_text(8704), "8.5 KiB");
        assert_eq!(bytes_text(50 * 1024 * 1024), "50 MiB");
        assert_eq!(bytes_text(300), "300 B");
        assert_eq!(parse_step("step03"), Some(3));
        assert_eq!(parse_step("step3"), None);
        assert_eq!(parse_step("03"), None);
        assert_eq!(error_text(0.0, 1), "0");
        assert_eq!(error_text(1.412e-4, 1), "1.4e-4");
        assert_eq!(error_text(f64::NAN, 1), "NaN");
    }
}
