//! The book builds from this checkout, its includes resolve, no directive is left unexpanded, and the
//! committed figures are exactly what the committed results draw, and the numbers it quotes are in
//! their sources. No GPU needed.

mod common;

use common::{Ran, Skip};
use gemm_ladder::book::{self, LadderResults};
use gemm_ladder::check::problem::Shape;
use gemm_ladder::check::verify::Check;
use gemm_ladder::device::nvml::ClockSummary;
use gemm_ladder::run::results::{self, DeviceInfo, ResultsFile, StepRecord, Timing, TimingMethod};
use gemm_ladder::{book::figure, book::figure_sweep};
use std::path::{Path, PathBuf};

fn book_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("book")
}

/// The numbers the book quotes (shared/book/quoted.rs) are the texts' own: each one printed in the
/// project's copy of its source, kept in `../shared` beside the repository (where it is), except the
/// derived ones, whose parts are.
fn every_quoted_number_appears_in_its_source_copy() -> Ran {
    use gemm_ladder::book::quoted::QUOTED;
    let seeds = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared");
    for q in QUOTED.iter().filter(|q| !q.source.seed.is_empty()) {
        let Ok(text) = std::fs::read_to_string(seeds.join(q.source.seed)) else {
            return Err(Skip(
                "a maintainers' check: needs the project's copies of the source texts, which are not part \
                 of the repository"
                    .into(),
            ));
        };
        let printed = match q.id {
            "modular-k7" => "64 TFlops".to_string(),
            "sgemm-k5" => "15,972".to_string(),
            "modular-k6" => "1429".to_string(),
            _ => format!("{}", q.tflops),
        };
        let alt = format!("{:.2}", q.tflops);
        assert!(
            text.contains(&printed) || text.contains(&alt),
            "{} ({printed}) not in {}",
            q.id,
            q.source.seed
        );
    }
    Ok(())
}

/// Every `.html` file under `dir`.
fn html_files(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "html") {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

/// The text between `// ANCHOR: name` and `// ANCHOR_END: name` of a kernel, without the marker lines.
fn anchor_lines(kernel: &str, name: &str) -> Vec<String> {
    let source = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(kernel)).unwrap();
    let start = format!("ANCHOR: {name}");
    let end = format!("ANCHOR_END: {name}");
    let mut inside = false;
    let mut lines = Vec::new();
    for line in source.lines() {
        if line.contains(&end) {
            break;
        }
        if inside && !line.contains("ANCHOR") {
            lines.push(line.trim().to_string());
        }
        if line.contains(&start) {
            inside = true;
        }
    }
    assert!(!lines.is_empty(), "{kernel} has no anchor {name}");
    lines
}

/// What HTML makes of source text in a code block.
fn escape_html(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn book_builds_with_includes_resolved_and_directives_expanded() {
    let tmp = tempfile::tempdir().unwrap();
    let out = book::build(&book_dir(), Some(tmp.path())).unwrap();
    assert!(out.join("index.html").is_file(), "no index.html in {}", out.display());

    let chapters = [
        (
            "step01-naive.html",
            "steps/step01_naive/kernel.cu",
            &["kernel", "index", "dot"][..],
        ),
        (
            "step02-smem-tiling.html",
            "steps/step02_smem_tiling/kernel.cu",
            &["kernel", "load_tile", "compute_tile"][..],
        ),
        (
            "step03-register-tiling.html",
            "steps/step03_register_tiling/kernel.cu",
            &["kernel", "load_tile", "register_tile", "store"][..],
        ),
    ];
    for (page, kernel, anchors) in chapters {
        let html = std::fs::read_to_string(out.join(page)).unwrap_or_else(|e| panic!("{page}: {e}"));
        for anchor in anchors {
            // The longest line of each anchor must appear, as HTML writes it: proof the include ran.
            let lines = anchor_lines(kernel, anchor);
            let longest = lines.iter().max_by_key(|l| l.len()).unwrap();
            assert!(
                html.contains(&escape_html(longest)),
                "{page}: the include of {kernel}:{anchor} did not resolve ({longest})"
            );
        }
        assert!(html.contains("Measured"), "{page} has no Measured section");
    }

    for file in html_files(&out) {
        let html = std::fs::read_to_string(&file).unwrap();
        assert!(!html.contains("{{#"), "{} has an unexpanded {{{{#…}}}}", file.display());
    }
    let results = std::fs::read_to_string(out.join("results.html")).unwrap();
    if results::load_all(&book_dir()).unwrap().is_empty() {
        assert!(results.contains("Nothing has been recorded on a GPU yet"));
    } else {
        // An image per GPU, or (before the figures are drawn) a note saying how to draw them.
        assert!(results.contains("figures/ladder-") || results.contains("not drawn yet"));
    }
    // The size sweep: its figure and table, or one line each saying that none has been recorded.
    assert!(results.contains("Size sweep"), "results.html has no size sweep section");
    let swept = results::load_all(&book_dir())
        .unwrap()
        .iter()
        .any(|f| f.records.iter().any(|r| r.sweep));
    if swept {
        assert!(results.contains("figures/sweep-") || results.contains("not drawn yet"));
        assert!(results.contains("To repeat a sweep"));
    } else {
        assert!(
            results.contains("No size sweep has been drawn yet")
                && results.contains("No size sweep has been recorded yet")
        );
    }
}

fn committed_figures_match_committed_results() -> Ran {
    let dir = book_dir();
    let files = results::load_all(&dir).unwrap();
    if files.is_empty() {
        return Err(Skip("no results are committed yet (book/src/results/ is empty)".into()));
    }
    let tmp = tempfile::tempdir().unwrap();
    for file in &files {
        let committed = figure::ladder_svg_path(&dir, &file.slug());
        let fresh = tmp.path().join("ladder.svg");
        figure::render_ladder(file, &fresh).unwrap();
        let expected = std::fs::read(&committed).unwrap_or_else(|e| {
            panic!(
                "{} is missing ({e}); run `cargo run --release --bin ladder -- --book-only`",
                committed.display()
            )
        });
        assert!(
            std::fs::read(&fresh).unwrap() == expected,
            "{} is not what its results draw; regenerate it with `cargo run --release --bin ladder -- --book-only`",
            committed.display()
        );

        // The size sweep's figure, for a file with sweep records; none for a file without.
        let committed = figure_sweep::sweep_svg_path(&dir, &file.slug());
        let fresh = tmp.path().join("sweep.svg");
        let _ = std::fs::remove_file(&fresh);
        if figure_sweep::render_sweep(file, &fresh).unwrap() {
            let expected = std::fs::read(&committed).unwrap_or_else(|e| {
                panic!(
                    "{} is missing ({e}); run `cargo run --release --bin ladder -- --book-only`",
                    committed.display()
                )
            });
            assert!(
                std::fs::read(&fresh).unwrap() == expected,
                "{} is not what its results draw; regenerate it with `cargo run --release --bin ladder -- --book-only`",
                committed.display()
            );
        } else {
            assert!(
                !committed.exists(),
                "{} is committed but {} has no sweep records",
                committed.display(),
                file.device.name
            );
        }
    }
    Ok(())
}

fn timing(ms: f64, shape: Shape) -> Timing {
    Timing {
        median_ms: ms,
        min_ms: ms,
        max_ms: ms,
        runs: 20,
        tflops: results::tflops(&shape, ms),
    }
}

fn table_expansion_shows_the_numbers_it_was_given() {
    let shape = Shape::new(4099, 17, 4104);
    let check = |against: &str, rel_fro: f64| Check {
        against: against.into(),
        compared: 4099 * 17,
        rel_fro,
        max_abs: 0.03125,
        rel_fro_bound: 0.0048828125,
        elementwise_bound: "|d| <= 2^-7·|ref| + 2^-8·rms(ref)".into(),
        passed: true,
        first_failure: None,
    };
    let record = StepRecord {
        step: 2,
        name: "smem_tiling".into(),
        title: "shared-memory tiling".into(),
        arch: "sm_90".into(),
        kernel: "steps/step02_smem_tiling/kernel.cu".into(),
        source_hash: gemm_ladder::run::provenance::current_hash(2, "steps/step02_smem_tiling/kernel.cu"),
        shape,
        sweep: false,
        random_sweep: None,
        seed: 987_654_321,
        date: "2025-11-21T04:26:07Z".into(),
        git: "0123abc".into(),
        time: timing(0.123, shape),
        cublas_bf16: timing(0.0456, shape),
        cublas_sgemm: Some(timing(0.0789, shape)),
        ratio_bf16: 0.370_731_7,
        ratio_sgemm: Some(0.641_463_4),
        baseline: gemm_ladder::run::registry::Baseline::CublasBf16C,
        timing_method: TimingMethod::Alternating,
        warmup_ms: Some(812.0),
        clocks: Some(ClockSummary {
            samples: 12,
            sm_mhz_min: 1410,
            sm_mhz_median: 1665,
            sm_mhz_max: 1980,
            power_w_mean: Some(688.4),
            power_limit_w: Some(700.0),
            power_capped_fraction: Some(0.5),
        }),
        checks: vec![check("step01", 2.34e-3), check("cuBLAS bf16", 5.67e-3)],
        registers: Some(38),
        static_smem_bytes: Some(8320),
        dynamic_smem_bytes: 0,
        local_bytes: Some(0),
        profile: None,
        mx: None,
        plan: None,
        alternatives: Vec::new(),
        choice: None,
        mma_sync_ceiling: None,
    };
    let file = ResultsFile {
        device: DeviceInfo {
            name: "NVIDIA H200".into(),
            compute_capability: "9.0".into(),
            sms: 132,
            l2_bytes: 60 * 1024 * 1024,
            memory_bytes: 141 * 1000 * 1000 * 1000,
            sm_clock_mhz: Some(1980),
            mem_clock_mhz: None,
            driver: "13.0".into(),
            nvrtc: "13.0".into(),
        },
        records: vec![record],
        superseded: Vec::new(),
    };
    let pass = LadderResults::new(vec![file]);
    let all = pass.expand("{{#ladder-table}}", Path::new("results.md")).unwrap();
    for expected in [
        "NVIDIA H200",
        "02 smem_tiling",
        "4099×17×4104",
        "sm_90",
        "0.123",
        "0.371",
        "0.641",
        "2.3e-3 (step01)",
        "5.7e-3",
        "38",
        "8.1 KiB",
        "132 SMs",
        "60 MiB of L2",
        "SM clock while timing 1410–1980 MHz (median 1665 MHz, NVML)",
    ] {
        assert!(all.contains(expected), "{expected} missing from\n{all}");
    }
    let tflops = format!("| {} |", results::significant(results::tflops(&shape, 0.123), 3));
    assert!(all.contains(&tflops), "{tflops} missing from\n{all}");

    let step = pass
        .expand("{{#ladder-table step02}}", Path::new("step02-smem-tiling.md"))
        .unwrap();
    assert!(
        step.contains("against step01: relative Frobenius error 2.34e-3 (bound 4.9e-3)"),
        "{step}"
    );
    assert!(
        step.contains(
            "- NVIDIA H200, 4099×17×4104: timed in one loop with cuBLAS (bf16 C) and cuBLAS SGEMM, launched in turn, \
             20 launches each (2.46 ms of the step's GPU time) after 0.81 s of untimed warm-up; cuBLAS (bf16 C) reached "
        ) && step.contains(
            "; SM clock 1665 MHz (1410–1980) over 12 readings, 688 W of 700 W, power-capped 50% of the time."
        ),
        "{step}"
    );
    assert!(
        step.contains("seed 987654321") && step.contains("--m 4099 --n 17 --k 4104 --seed 987654321"),
        "{step}"
    );
    assert!(pass
        .expand("{{#ladder-table step01}}", Path::new("x.md"))
        .unwrap()
        .contains("has not been recorded"));
}

/// The shape as the tables write it: `4096³`, or `M×N×K`.
fn shape_cell(s: Shape) -> String {
    if s.m == s.n && s.n == s.k {
        format!("{}³", s.m)
    } else {
        format!("{}×{}×{}", s.m, s.n, s.k)
    }
}

/// Every committed record's row in its step's table carries exactly the marks its provenance calls
/// for: none for a record of the source the chapter shows, built from a commit; `†` for another source,
/// `°` for no recorded hash, `‡` for a dirty build. So no record can sit in the book unmarked while its
/// kernel source has changed, or while it came from uncommitted code.
fn committed_records_are_marked_unless_they_ran_the_source_shown() {
    use gemm_ladder::run::provenance::{self, Source};
    for file in results::load_all(&book_dir()).unwrap() {
        for r in file.records.iter().filter(|r| !r.sweep) {
            let p = provenance::of_record(r);
            let mut marks = String::from(match p.source {
                Source::Matches => "",
                Source::Changed => " †",
                Source::Unhashed => " °",
            });
            if p.dirty {
                marks.push_str(if marks.is_empty() { " ‡" } else { "‡" });
            }
            let table = book::table(std::slice::from_ref(&file), Some(r.step));
            // One file, one GPU: the table names it above the rows, not in a column.
            let row = format!("| {}{marks} | {} |", shape_cell(r.shape), r.arch);
            assert!(
                table.lines().any(|l| l.starts_with(&row)),
                "step {:02} at {} ({:?}): no row `{row}` in\n{table}",
                r.step,
                r.shape,
                p
            );
        }
    }
}

/// The promise of issue 17, once every step is re-recorded at one clean commit: every committed
/// record ran the kernel source its chapter shows, from a clean build.
fn committed_records_ran_the_source_shown_from_a_clean_build() {
    use gemm_ladder::run::provenance;
    let mut stale = Vec::new();
    for file in results::load_all(&book_dir()).unwrap() {
        for r in &file.records {
            let p = provenance::of_record(r);
            if !p.is_clean() {
                stale.push(format!("{} step {:02} at {}: {p:?}", file.device.name, r.step, r.shape));
            }
            for a in &r.alternatives {
                let p = provenance::of_alternative(r, a);
                if !p.is_clean() {
                    stale.push(format!(
                        "{} step {:02} at {}, {}: {p:?}",
                        file.device.name, r.step, r.shape, a.name
                    ));
                }
            }
        }
    }
    assert!(stale.is_empty(), "records to measure again:\n{}", stale.join("\n"));
}

/// The column of `header` (a table's header row) whose label contains `label`.
fn column_of(header: &str, label: &str) -> Option<usize> {
    header.split('|').position(|cell| cell.contains(label))
}

/// Chapter 11's evidence table shows the step "before" the change the chapter discusses: the
/// superseded record its directive names. Recording step 11 twice more, on other kernels, through the
/// merge every run uses, leaves that column, cell for cell, as the committed results draw it now.
fn the_before_record_chapter_11_cites_survives_two_re_records() {
    let chapter = std::fs::read_to_string(book_dir().join("src/step11-mxfp8.md")).unwrap();
    let cited = chapter
        .split("{{#ladder-evidence step11 before=")
        .nth(1)
        .and_then(|rest| rest.split("}}").next())
        .expect("chapter 11's evidence directive names the record before the change");
    let dir = tempfile::tempdir().unwrap();
    let copy = results::results_dir(dir.path());
    std::fs::create_dir_all(&copy).unwrap();
    for entry in std::fs::read_dir(results::results_dir(&book_dir())).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "json") {
            std::fs::copy(&path, copy.join(path.file_name().unwrap())).unwrap();
        }
    }
    let committed = results::load_all(dir.path()).unwrap();
    // The Hopper chapter's view, as the book builds it: the sm80 twins' records apart.
    let table = |files: &[ResultsFile]| {
        let (hopper, _sm80) = results::split_sm80_twins(files.to_vec());
        book::evidence::evidence_table(&hopper, 11, false, Some(cited))
    };
    let before_column = |text: &str| -> Vec<String> {
        let mut lines = text.lines().skip_while(|l| !l.starts_with("| |"));
        let header = lines.next().expect("an evidence table");
        let column = column_of(header, " before (at ").unwrap_or_else(|| panic!("a column before the change:\n{text}"));
        std::iter::once(header)
            .chain(lines.skip(1).take_while(|l| l.starts_with('|')))
            .map(|row| row.split('|').nth(column).unwrap_or_default().trim().to_string())
            .collect()
    };
    let shown = before_column(&table(&committed));

    for round in 1..=2u64 {
        for file in &committed {
            let again: Vec<StepRecord> = file
                .records
                .iter()
                .filter(|r| r.step == 11 && !r.sweep && r.profile.is_some())
                .map(|r| StepRecord {
                    source_hash: Some(format!("fnv1a64:{round:016x}")),
                    git: format!("re-record-{round}"),
                    ..r.clone()
                })
                .collect();
            results::record(dir.path(), &file.device, &again).unwrap();
        }
    }
    let recorded_again = results::load_all(dir.path()).unwrap();
    let kept: usize = recorded_again.iter().map(|f| f.superseded.len()).sum();
    let had: usize = committed.iter().map(|f| f.superseded.len()).sum();
    assert!(kept >= had + 2, "the history grows: {had} → {kept}");
    assert_eq!(before_column(&table(&recorded_again)), shown);
}

common::harness::tests!(
    every_quoted_number_appears_in_its_source_copy,
    book_builds_with_includes_resolved_and_directives_expanded,
    committed_figures_match_committed_results,
    table_expansion_shows_the_numbers_it_was_given,
    committed_records_are_marked_unless_they_ran_the_source_shown,
    committed_records_ran_the_source_shown_from_a_clean_build,
    the_before_record_chapter_11_cites_survives_two_re_records,
);
