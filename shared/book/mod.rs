//! Builds the book (`book/`) with mdBook's library, in process, with no network and no `mdbook` binary.
//!
//! Numbers never appear in the chapters' source: a chapter asks for them with a directive, and the
//! `ladder-results` pass replaces it with what the results files hold.
//!
//! | directive                  | becomes                                                          |
//! |----------------------------|------------------------------------------------------------------|
//! | `{{#ladder-table}}`        | one row per record of every results file, then the devices       |
//! | `{{#ladder-table step03}}` | that step's rows, then one line per verification check           |
//! | `{{#ladder-table step05 sm80}}` | the step's sm80 twin's rows, with × its mma.sync ceiling    |
//! | `{{#ladder-figure}}`       | an image of `figures/ladder-<gpu>.svg` per results file          |
//! | `{{#ladder-sweep-figure}}` | an image of `figures/sweep-<gpu>.svg` per file with sweep records|
//! | `{{#ladder-sweep-table}}`  | one row per sweep record (`stepNN --sweep`), then the devices    |
//! | `{{#ladder-sweep-table sm80}}` | the same for the sm80 twins' sweeps (`step10 --twin sm80 --sweep`) |
//! | `{{#ladder-plans stepNN}}` | per sweep shape: what the launch chose, and the fastest alternative |
//! | `{{#ladder-plans step10 sm80}}` | the same for the sm80 twin's sweep |
//! | `{{#ladder-sweep-compare step10 A B}}` | inline: the swept ratio at shape A against B, and whether lower |
//! | `{{#ladder-choice step10}}` | inline: the random sweep (`--sweep random`) in words: the choice against the fastest plan, the worst case, the geometric mean |
//! | `{{#ladder-choice-figure}}` | an image of `figures/choice-<gpu>.svg` per file with a random sweep |
//! | `{{#ladder-alternatives step11}}` | one row per alternative design timed with that step's runs |
//! | `{{#ladder-alternatives step11 sm80}}` | the same for the step's sm80 twin and its designs |
//! | `{{#ladder-mx step11}}` | an MXFP8 step's baselines (cuBLAS fp32 C and bf16 C, dequantize + cuBLAS, cuBLASLt fp8) |
//!
//! and the evidence directives of [`crate::book::evidence`] (`ladder-evidence stepNN`,
//! `ladder-timeline stepNN`, `ladder-l2`, `ladder-quoted`, `ladder-quote ID`, `ladder-sources`) and
//! those of [`crate::book::peak`] (`ladder-peak`, `ladder-peak datasheet`, `ladder-rounds`).
//!
//! Every directive reads the records of one family of kernels: without `sm80`, the GPU's own kernels'
//! (the sm80 twins' records left out), so the chapters' tables, figures and evidence are the Hopper
//! kernels'; with `sm80` (`ladder-table stepNN sm80`, `ladder-evidence stepNN sm80`, `ladder-sweep-table sm80`, `ladder-plans stepNN sm80`,
//! `ladder-evidence-value|-delta stepNN KEY sm80`), the sm80 twins' (and steps 01–03's, which every
//! twin shares).
//! The ladder table and figure leave sweep records out (a sweep's 4096³ is not the chapter's run);
//! the sweep directives show only them.
//! Every row (or evidence column) of a record whose numbers were not measured on the code the chapter
//! shows carries a mark, explained in one line under its table (`Marks`): `†` its kernel source has
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
//!
//! The tables the directives become are drawn up in `book/tables.rs`, cell by cell in `book/cells.rs`.
//!
//! # Layers, bottom to top
//!
//! Each file uses only the files listed before it (`tests/layers.rs`):
//!
//! 1. [`quoted`]: the numbers quoted from other texts, with their sources.
//! 2. [`peak`]: which peak, at which clock, and how much GPU time a measurement spans.
//! 3. `cells`: how a record's numbers are written in a table cell, and the marks.
//! 4. `tables`: the results tables the directives become.
//! 5. `include`: anchored includes, checked and dedented before mdBook expands them.
//! 6. [`figure`]: the TFLOPS ladder figure.
//! 7. [`figure_banks`]: the bank picture of the 128-byte-swizzle chapter.
//! 8. [`figure_sweep`]: the size-sweep figure and its comparisons.
//! 9. [`figure_choice`]: the random sweep's figure: the chosen plan against the fastest, per shape.
//! 10. [`evidence`]: the evidence directives: counters, timelines, the L2 roofline, quoted numbers.

mod cells;
pub mod evidence;
pub mod figure;
pub mod figure_banks;
pub mod figure_choice;
pub mod figure_sweep;
pub mod include;
pub mod peak;
pub mod quoted;
mod tables;
/// The figures' shared style, below the timeline's figure too; `book::svg` for the figures' `super::svg`.
pub use crate::svg;

pub(crate) use cells::Marks;
pub use tables::{
    alternatives_table, mx_baselines_table, plans_table, sweep_table, table, twin_alternatives_table, twin_table,
};

use crate::error::{Error, Result};
use crate::run::results::{self, ResultsFile};
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
///
/// `book/book.toml` registers the `ladder-results` pass as a command (`mdbook-ladder`) for a plain
/// `mdbook build`; here the same pass runs in process, in the command's place in the order.
pub fn build(book_dir: &Path, dest: Option<&Path>) -> Result<PathBuf> {
    let fail =
        |e: mdbook_driver::errors::Error| Error::Other(format!("building the book in {}: {e:#}", book_dir.display()));
    let mut config = match book_dir.join("book.toml") {
        toml if toml.is_file() => mdbook_driver::config::Config::from_disk(&toml).map_err(fail)?,
        _ => mdbook_driver::config::Config::default(),
    };
    config.update_from_env().map_err(fail)?;
    // Before mdBook's `links`, which must see the anchored includes this pass has cut and dedented.
    config
        .set(format!("preprocessor.{PASS_NAME}.before"), ["links"])
        .map_err(fail)?;
    if let Some(dest) = dest {
        // mdBook resolves a relative build folder against the book's root; the caller meant ours.
        let dest = if dest.is_absolute() {
            dest.to_path_buf()
        } else {
            std::env::current_dir()
                .map_err(Error::io("reading the current folder"))?
                .join(dest)
        };
        config.build.build_dir = dest;
    }
    let mut book = MDBook::load_with_config(book_dir, config).map_err(fail)?;
    book.with_preprocessor(LadderResults::load(book_dir)?);
    book.build().map_err(fail)?;
    Ok(book.build_dir_for("html"))
}

/// The `ladder-results` pass over a whole book, as mdBook hands it to a preprocessor: the includes
/// are checked, then every chapter's `{{#ladder-…}}` directives are expanded and its anchored
/// includes dedented. The crate's own build ([`build`]) and `mdbook-ladder` both run it.
impl mdbook_preprocessor::Preprocessor for LadderResults {
    fn name(&self) -> &str {
        PASS_NAME
    }

    fn run(
        &self,
        ctx: &mdbook_preprocessor::PreprocessorContext,
        mut book: mdbook_preprocessor::book::Book,
    ) -> mdbook_preprocessor::errors::Result<mdbook_preprocessor::book::Book> {
        let src_dir = ctx.root.join(&ctx.config.book.src);
        check_includes(&book, &src_dir).map_err(mdbook_preprocessor::errors::Error::msg)?;
        let mut failure = None;
        book.for_each_chapter_mut(|chapter| {
            let Some(path) = chapter.path.clone() else { return };
            match self.expand(&chapter.content, &path) {
                // Anchored includes are cut here, dedented, before mdBook's `links` pass sees them.
                Ok(text) => {
                    let base = src_dir.join(path.parent().unwrap_or(Path::new("")));
                    chapter.content = crate::book::include::dedent_anchor_includes(&text, &base);
                }
                Err(e) => {
                    failure.get_or_insert(e);
                }
            }
        });
        match failure {
            Some(e) => Err(mdbook_preprocessor::errors::Error::msg(e)),
            None => Ok(book),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Include checks

/// Every `{{#include path}}` / `{{#include path:anchor}}` (and `rustdoc_include`) of every chapter must
/// name a file that exists, and an anchor that the file opens and closes.
fn check_includes(book: &mdbook_preprocessor::book::Book, src_dir: &Path) -> Result<()> {
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
    /// Every record but the sm80 twins': what the chapters' Hopper tables, figures and evidence show.
    files: Vec<ResultsFile>,
    /// The sm80 twins' records (with steps 01–03's, which every twin shares), for the directives of
    /// the sm80 sections: `{{#ladder-table stepNN sm80}}`, `{{#ladder-evidence stepNN sm80}}`, …
    sm80_files: Vec<ResultsFile>,
    /// The book's folder, to tell whether a figure has been drawn; `None` assumes it has.
    book_dir: Option<PathBuf>,
}

impl LadderResults {
    /// A pass over the given results (for tests and previews); figures are assumed to exist.
    pub fn new(files: Vec<ResultsFile>) -> LadderResults {
        let (files, sm80_files) = results::split_sm80_twins(files);
        LadderResults {
            files,
            sm80_files,
            book_dir: None,
        }
    }

    /// A pass over the results files of the book at `book_dir`.
    pub fn load(book_dir: &Path) -> Result<LadderResults> {
        let (files, sm80_files) = results::split_sm80_twins(results::load_all(book_dir)?);
        Ok(LadderResults {
            files,
            sm80_files,
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
                ("ladder-table", [step, "sm80"]) => {
                    let id = parse_step(step).ok_or_else(|| bad("the step is written step01 … step11"))?;
                    twin_table(&self.sm80_files, id)
                }
                ("ladder-alternatives", [step]) => {
                    let id = parse_step(step).ok_or_else(|| bad("the step is written step01 … step11"))?;
                    alternatives_table(&self.files, id)
                }
                ("ladder-alternatives", [step, "sm80"]) => {
                    let id = parse_step(step).ok_or_else(|| bad("the step is written step01 … step11"))?;
                    twin_alternatives_table(&self.sm80_files, id)
                }
                ("ladder-mx", [step]) => {
                    let id = parse_step(step).ok_or_else(|| bad("the step is written step01 … step11"))?;
                    mx_baselines_table(&self.files, id)
                }
                ("ladder-figure", []) => self.figure_links(chapter),
                ("ladder-sweep-table", []) => sweep_table(&self.files),
                ("ladder-sweep-table", ["sm80"]) => sweep_table(&self.sm80_files),
                ("ladder-plans", [step]) => {
                    let id = parse_step(step).ok_or_else(|| bad("the step is written step01 … step11"))?;
                    plans_table(&self.files, id)
                }
                ("ladder-plans", [step, "sm80"]) => {
                    let id = parse_step(step).ok_or_else(|| bad("the step is written step01 … step11"))?;
                    plans_table(&self.sm80_files, id)
                }
                ("ladder-sweep-figure", []) => self.sweep_figure_links(chapter),
                ("ladder-evidence", [step]) => {
                    let id = parse_step(step).ok_or_else(|| bad("the step is written step01 … step11"))?;
                    crate::book::evidence::evidence_table(&self.files, id, false, None)
                }
                ("ladder-evidence", [step, "sm80"]) => {
                    let id = parse_step(step).ok_or_else(|| bad("the step is written step01 … step11"))?;
                    crate::book::evidence::evidence_table(&self.sm80_files, id, true, None)
                }
                ("ladder-evidence", [step, cited]) => {
                    let id = parse_step(step).ok_or_else(|| bad("the step is written step01 … step11"))?;
                    let name = cited.strip_prefix("before=").ok_or_else(|| {
                        bad("the second argument is sm80, before=REVISION or before=SOURCE_HASH: the superseded record to show")
                    })?;
                    crate::book::evidence::evidence_table(&self.files, id, false, Some(name))
                }
                ("ladder-timeline", [step]) => {
                    let id = parse_step(step).ok_or_else(|| bad("the step is written step01 … step11"))?;
                    crate::book::evidence::timeline_section(self.book_dir.as_deref(), id, chapter)
                }
                ("ladder-l2", []) => crate::book::evidence::l2_roofline(&self.files),
                ("ladder-quoted", []) => crate::book::evidence::quoted_table(),
                ("ladder-sources", []) => crate::book::evidence::sources_list(),
                ("ladder-evidence-value" | "ladder-evidence-delta", [step, key, twin @ ..])
                    if matches!(twin, [] | ["sm80"]) =>
                {
                    let id = parse_step(step).ok_or_else(|| bad("the step is written step01 … step11"))?;
                    // Each directive reads the records of its own family: the sm80 sections the twins'.
                    let sm80 = !twin.is_empty();
                    let files = if sm80 { &self.sm80_files } else { &self.files };
                    let text = if name == "ladder-evidence-value" {
                        crate::book::evidence::evidence_value(files, id, key, sm80)
                    } else {
                        crate::book::evidence::evidence_delta(files, id, key, sm80)
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
                ("ladder-choice", [step]) => {
                    let id = parse_step(step).ok_or_else(|| bad("the step is written step01 … step11"))?;
                    figure_choice::choice_text(&self.files, id)
                }
                ("ladder-choice-figure", []) => self.choice_figure_links(chapter),
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
                        "unknown directive: the known ones are ladder-table [stepNN [sm80]], ladder-alternatives stepNN [sm80], ladder-mx stepNN, ladder-figure, ladder-sweep-table [sm80], ladder-sweep-figure, ladder-plans stepNN [sm80], ladder-evidence stepNN [sm80|before=REVISION], ladder-timeline stepNN, ladder-l2, ladder-evidence-value|-delta stepNN KEY [sm80], ladder-timeline-share stepNN PART, ladder-clusters stepNN, ladder-sweep-compare stepNN MxNxK MxNxK, ladder-choice stepNN, ladder-choice-figure, ladder-peak [datasheet], ladder-rounds, ladder-quoted, ladder-quote ID and ladder-sources",
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
                let like_for_like = file
                    .records
                    .iter()
                    .any(|r| !r.sweep && r.headline().baseline == crate::run::registry::Baseline::CublasF32C);
                if like_for_like {
                    let _ = writeln!(
                        out,
                        "On the {}, each bar and ratio of a bf16 step is against cuBLAS writing bf16 C; the MXFP8 step's (hollow markers) against cuBLAS writing fp32 C on the dequantized operands, the C it writes itself.\n",
                        file.device.name
                    );
                }
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

    /// One image of the random sweep per results file that has one ([`figure_choice`]), linked
    /// relative to the chapter; without one, a line that says how to record it.
    fn choice_figure_links(&self, chapter: &Path) -> String {
        let up = "../".repeat(chapter.parent().map_or(0, |p| p.components().count()));
        let mut out = String::new();
        for file in self
            .files
            .iter()
            .filter(|f| f.records.iter().any(figure_choice::is_drawn))
        {
            let slug = file.slug();
            let drawn = self
                .book_dir
                .as_ref()
                .is_none_or(|dir| figure_choice::choice_svg_path(dir, &slug).is_file());
            let _ = if drawn {
                writeln!(
                    out,
                    "![Random sweep on {}]({up}figures/choice-{slug}.svg)\n",
                    file.device.name
                )
            } else {
                writeln!(
                    out,
                    "The random sweep of {} is recorded but not drawn yet: `cargo run --release --bin ladder -- --book-only` draws it.\n",
                    file.device.name
                )
            };
        }
        if out.is_empty() {
            out = "No random sweep has been drawn yet, because none has been recorded: `cargo run --release --bin step10 -- --sweep random` records one.\n".to_string();
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
        let choice = figure_choice::choice_svg_path(book_dir, &file.slug());
        if figure_choice::render_choice(&file, &choice)? {
            paths.push(choice);
        }
    }
    crate::book::figure_banks::render_swizzle_banks(&crate::book::figure_banks::swizzle_banks_svg_path(book_dir))?;
    Ok(paths)
}

#[cfg(test)]
mod tests {
    use super::cells::{bytes_text, error_text};
    use super::*;
    use crate::run::results::tests::{device, record_of};

    pub(super) fn file() -> ResultsFile {
        ResultsFile {
            device: device("NVIDIA H100 80GB HBM3"),
            records: vec![
                record_of(1, "naive", 4096, 100.0),
                record_of(3, "register_tiling", 4096, 4.0),
            ],
            superseded: Vec::new(),
        }
    }

    /// Step 11's `promote` alternative as registered now.
    pub(super) fn promote_kernel() -> &'static crate::run::registry::KernelFile {
        let step = crate::run::steps::get(11).unwrap();
        &step.alternatives.iter().find(|a| a.name == "promote").unwrap().kernel
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
    fn the_sm80_sweep_table_shows_the_twin_s_sweep_and_the_plain_one_does_not() {
        // Step 10's sweep records made the sm80 twin's: they leave the plain table for the sm80 one.
        let mut file = crate::book::figure_sweep::tests::synthetic();
        for r in file.records.iter_mut().filter(|r| r.step == 10) {
            r.kernel = "steps/step10_persistent/sm80.cu".into();
        }
        let results = LadderResults::new(vec![file]);
        let rows = |directive: &str| -> Vec<String> {
            let table = results.expand(directive, Path::new("results.md")).unwrap();
            table
                .lines()
                .filter(|l| l.starts_with("| NVIDIA H200 |"))
                .map(str::to_string)
                .collect()
        };
        let (plain, twin) = (rows("{{#ladder-sweep-table}}"), rows("{{#ladder-sweep-table sm80}}"));
        assert!(
            !plain.is_empty() && plain.iter().all(|r| !r.contains("10 persistent")),
            "{plain:?}"
        );
        assert!(
            !twin.is_empty() && twin.iter().all(|r| r.contains("10 persistent")),
            "{twin:?}"
        );
        assert_eq!(plain.len() + twin.len(), 22);
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
