//! `exercise report`: the progress file as a table, or as CSV for a teacher to collect (one row per
//! exercise, the student named in each row); `report --merge FILES…`: several students' CSV reports
//! as one class, in one CSV or in tables.

use crate::progress::{self, Progress, COMPILED, FAIL, NOT_STARTED, PASS};
use crate::root;
use gemm_ladder::error::{Error, Result};
use gemm_ladder::run::exercise::{self, Quantity};
use gemm_ladder::run::results::utc_now_rfc3339;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use tabled::{settings::Style, Table, Tabled};

/// One exercise of one student: a row of `report --csv`. The field names are the CSV's header.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Row {
    pub student: String,
    pub exercise: String,
    pub kind: String,
    pub status: String,
    pub attempts: u32,
    #[serde(rename = "hints used")]
    pub hints_used: u32,
    #[serde(rename = "last checked")]
    pub last_checked: Option<String>,
    pub prediction: Option<f64>,
    pub measurement: Option<f64>,
    pub unit: Option<String>,
}

/// The header of `report --csv`, which `--merge` expects of every file.
pub const HEADER: [&str; 10] = [
    "student",
    "exercise",
    "kind",
    "status",
    "attempts",
    "hints used",
    "last checked",
    "prediction",
    "measurement",
    "unit",
];

/// The student's name: `--student`, else `git config user.name` (in the crate's repository), else
/// the login name ($USER, $LOGNAME, $USERNAME), else "unknown".
pub fn student_name(given: Option<&str>) -> String {
    let named = |name: String| Some(name.trim().to_string()).filter(|n| !n.is_empty());
    given
        .and_then(|n| named(n.to_string()))
        .or_else(|| {
            let git = std::process::Command::new("git")
                .args(["config", "user.name"])
                .current_dir(root())
                .output()
                .ok()?;
            named(String::from_utf8_lossy(&git.stdout).into_owned()).filter(|_| git.status.success())
        })
        .or_else(|| {
            ["USER", "LOGNAME", "USERNAME"]
                .iter()
                .find_map(|v| std::env::var(v).ok().and_then(named))
        })
        .unwrap_or_else(|| "unknown".into())
}

/// Every exercise of `student`, from the progress file.
pub fn rows(progress: &Progress, student: &str) -> Vec<Row> {
    exercise::all()
        .map(|e| {
            let entry = progress.exercises.get(e.id).cloned().unwrap_or_default();
            Row {
                student: student.to_string(),
                exercise: e.id.to_string(),
                kind: e.kind.describe().to_string(),
                status: progress.status(e.id).to_string(),
                attempts: entry.attempts,
                hints_used: entry.hints_shown,
                last_checked: entry.last,
                prediction: entry.prediction,
                measurement: entry.measurement,
                unit: e.prediction.as_ref().map(|p| p.unit.to_string()),
            }
        })
        .collect()
}

/// `rows` as CSV (RFC 4180: a field with a comma or a quote is quoted), header first.
pub fn write_csv(rows: &[Row], out: impl std::io::Write) -> Result<()> {
    let mut writer = csv::Writer::from_writer(out);
    for row in rows {
        writer
            .serialize(row)
            .map_err(|e| Error::Other(format!("writing CSV: {e}")))?;
    }
    writer.flush().map_err(Error::io("writing CSV"))
}

/// The rows of one `report --csv` file; a usage error naming the file and what is wrong with it.
pub fn read_csv(path: &Path) -> Result<Vec<Row>> {
    let shown = path.display();
    let not_a_report = |why: String| Error::Usage(format!("{shown} is not a report of `exercise report --csv`: {why}"));
    if !path.is_file() {
        return Err(Error::Usage(format!(
            "{shown}: no such file (name the files `exercise report --csv` wrote)"
        )));
    }
    let mut reader = csv::Reader::from_path(path).map_err(|e| not_a_report(e.to_string()))?;
    let header = reader.headers().map_err(|e| not_a_report(e.to_string()))?;
    if header.iter().ne(HEADER) {
        return Err(not_a_report(format!(
            "its header is `{}`",
            header.iter().collect::<Vec<_>>().join(",")
        )));
    }
    reader
        .deserialize()
        .collect::<Result<Vec<Row>, csv::Error>>()
        .map_err(|e| not_a_report(e.to_string()))
}

#[derive(Tabled)]
struct StudentRow {
    exercise: &'static str,
    status: String,
    attempts: u32,
    hints: String,
    #[tabled(rename = "last checked (UTC)")]
    last: String,
    #[tabled(rename = "predicted vs measured")]
    prediction: String,
}

pub fn number(v: Option<f64>) -> String {
    v.map_or("—".into(), |v| {
        format!("{v:.3}")
            .trim_end_matches('0')
            .trim_end_matches('.')
            .to_string()
    })
}

/// `n` and `thing`, plural where `n` is not 1: `1 file`, `2 files`.
fn count(n: usize, thing: &str) -> String {
    match n {
        1 => format!("1 {thing}"),
        n => format!("{n} {thing}s"),
    }
}

/// `2026-11-24T08:50:49Z` as `2026-11-24 08:50`, to keep the table narrow.
fn minutes(rfc3339: Option<&str>) -> String {
    rfc3339.map_or("—".into(), |t| t.replace('T', " ").chars().take(16).collect())
}

/// `exercise report`: one student's progress, as a table or CSV.
pub fn report(csv: bool, student: Option<&str>) -> Result<()> {
    let progress = Progress::load()?;
    let student = student_name(student);
    let rows = rows(&progress, &student);
    if csv {
        return write_csv(&rows, std::io::stdout().lock());
    }
    let table: Vec<StudentRow> = exercise::all()
        .zip(&rows)
        .map(|(e, row)| StudentRow {
            exercise: e.id,
            status: row.status.clone(),
            attempts: row.attempts,
            hints: format!("{}/{}", row.hints_used, e.hints.len()),
            last: minutes(row.last_checked.as_deref()),
            prediction: match e.quantity() {
                Some(_) if row.prediction.is_none() && row.measurement.is_none() => "—".into(),
                Some(q) => format!(
                    "{} vs {} {}",
                    number(row.prediction),
                    number(row.measurement),
                    q.short_unit()
                ),
                None => String::new(),
            },
        })
        .collect();
    let passed = rows.iter().filter(|r| r.status == PASS).count();
    println!(
        "exercise report · {student} · {passed} of {} passed · {}",
        rows.len(),
        utc_now_rfc3339()
    );
    println!("progress file: {}", progress::path().display());
    println!("{}", Table::new(table).with(Style::rounded()));
    println!("Units: {}.", units_legend());
    Ok(())
}

/// What the short units of the table stand for.
fn units_legend() -> String {
    [
        Quantity::TimeRatio,
        Quantity::Registers,
        Quantity::Tflops,
        Quantity::Milliseconds,
    ]
    .iter()
    .filter(|q| exercise::all().any(|e| e.quantity() == Some(**q)))
    .map(|q| {
        let unit = exercise::all()
            .filter_map(|e| e.prediction.as_ref())
            .find(|p| Quantity::of_unit(p.unit) == Some(*q))
            .map_or("", |p| p.unit);
        format!("{} = {unit}", q.short_unit())
    })
    .collect::<Vec<_>>()
    .join("; ")
}

/// Counts of each status.
#[derive(Default)]
struct Tally {
    passed: usize,
    compiled: usize,
    failed: usize,
    not_started: usize,
    attempts: u32,
    hints: u32,
    last: Option<String>,
}

impl Tally {
    fn add(&mut self, row: &Row) {
        match row.status.as_str() {
            PASS => self.passed += 1,
            COMPILED => self.compiled += 1,
            FAIL => self.failed += 1,
            _ => self.not_started += 1,
        }
        self.attempts += row.attempts;
        self.hints += row.hints_used;
        if row.last_checked > self.last {
            self.last = row.last_checked.clone();
        }
    }
}

#[derive(Tabled)]
struct ClassRow {
    #[tabled(rename = "student")]
    name: String,
    passed: String,
    compiled: usize,
    failed: usize,
    #[tabled(rename = "not started")]
    not_started: usize,
    attempts: u32,
    hints: u32,
    #[tabled(rename = "last (UTC)")]
    last: String,
}

#[derive(Tabled)]
struct ExerciseRow {
    exercise: String,
    kind: String,
    passed: String,
    compiled: usize,
    failed: usize,
    #[tabled(rename = "not started")]
    not_started: usize,
    attempts: u32,
    hints: u32,
}

/// `exercise report --merge FILES…`: the students' `report --csv` files as one class: one CSV (every
/// row, one header), or a table per student and one per exercise.
pub fn merge(files: &[PathBuf], csv: bool) -> Result<()> {
    let mut rows: Vec<Row> = Vec::new();
    let mut from: BTreeMap<(String, String), &Path> = BTreeMap::new();
    for file in files {
        for row in read_csv(file)? {
            if let Some(earlier) = from.insert((row.student.clone(), row.exercise.clone()), file) {
                return Err(Error::Usage(format!(
                    "{} and {} both report exercise {} of {}: merge one report per student",
                    earlier.display(),
                    file.display(),
                    row.exercise,
                    row.student
                )));
            }
            rows.push(row);
        }
    }
    if csv {
        return write_csv(&rows, std::io::stdout().lock());
    }
    let mut students: BTreeMap<&str, Tally> = BTreeMap::new();
    let mut exercises: BTreeMap<(&str, &str), Tally> = BTreeMap::new();
    for row in &rows {
        students.entry(&row.student).or_default().add(row);
        exercises.entry((&row.exercise, &row.kind)).or_default().add(row);
    }
    let of = |passed: usize, tally: &Tally| {
        format!(
            "{passed} of {}",
            tally.passed + tally.compiled + tally.failed + tally.not_started
        )
    };
    println!(
        "class report · {} · {} · {}",
        count(students.len(), "student"),
        count(files.len(), "file"),
        utc_now_rfc3339()
    );
    let by_student: Vec<ClassRow> = students
        .iter()
        .map(|(name, t)| ClassRow {
            name: name.to_string(),
            passed: of(t.passed, t),
            compiled: t.compiled,
            failed: t.failed,
            not_started: t.not_started,
            attempts: t.attempts,
            hints: t.hints,
            last: minutes(t.last.as_deref()),
        })
        .collect();
    println!("{}", Table::new(by_student).with(Style::rounded()));
    let by_exercise: Vec<ExerciseRow> = exercises
        .iter()
        .map(|((id, kind), t)| ExerciseRow {
            exercise: id.to_string(),
            kind: kind.to_string(),
            passed: of(t.passed, t),
            compiled: t.compiled,
            failed: t.failed,
            not_started: t.not_started,
            attempts: t.attempts,
            hints: t.hints,
        })
        .collect();
    println!("{}", Table::new(by_exercise).with(Style::rounded()));
    println!(
        "Per student, counts of exercises; per exercise, counts of students. passed: the last check\n\
         passed; compiled: compiles and assembles, not verified (no GPU); {NOT_STARTED}: never checked."
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_header_is_the_rows_field_names() {
        let row = Row {
            student: "s".into(),
            exercise: "01.1".into(),
            kind: "k".into(),
            status: PASS.into(),
            attempts: 1,
            hints_used: 0,
            last_checked: None,
            prediction: None,
            measurement: None,
            unit: None,
        };
        let mut out = Vec::new();
        write_csv(&[row], &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(text.lines().next(), Some(HEADER.join(",").as_str()), "{text}");
    }

    #[test]
    fn numbers_are_short() {
        assert_eq!(number(Some(80.0)), "80");
        assert_eq!(number(Some(1.25)), "1.25");
        assert_eq!(number(Some(1.0004)), "1");
        assert_eq!(number(None), "—");
        assert_eq!(minutes(Some("2026-11-24T08:50:49Z")), "2026-11-24 08:50");
        assert_eq!(
            (count(1, "file"), count(2, "student")),
            ("1 file".into(), "2 students".into())
        );
    }
}
