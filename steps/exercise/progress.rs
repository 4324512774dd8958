//! The student's progress: a small JSON file (`.exercise-progress.json` in the crate root, or the
//! file GEMM_LADDER_EXERCISE_PROGRESS names) with each exercise's status, attempts, hints and
//! prediction. `check` writes it, `hint` counts in it, `report` reads it.

use crate::root;
use gemm_ladder::error::{Error, Result};
use gemm_ladder::run::exercise::{self, Exercise};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Where progress is kept in the crate root, unless [`VARIABLE`] names another file.
pub const FILE_NAME: &str = ".exercise-progress.json";

/// Names the progress file, instead of [`FILE_NAME`] in the crate root.
pub const VARIABLE: &str = "GEMM_LADDER_EXERCISE_PROGRESS";

/// The statuses an exercise's entry can have, as the file, `list` and `report` write them.
pub const PASS: &str = "pass";
pub const FAIL: &str = "fail";
/// Compiled and assembled, not run: no GPU.
pub const COMPILED: &str = "compiled";
/// Never checked (whether or not `start` has written the file): `list`, `report` and `solution` alike.
pub const NOT_STARTED: &str = "not started";

#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Progress {
    #[serde(default)]
    pub exercises: BTreeMap<String, Entry>,
}

#[derive(Debug, Default, Clone, Serialize, Deserialize)]
pub struct Entry {
    /// [`PASS`], [`FAIL`] or [`COMPILED`].
    #[serde(default)]
    pub status: Option<String>,
    /// Checks of a changed file: checking the same content again is not another attempt.
    #[serde(default)]
    pub attempts: u32,
    /// The hash of the file the last attempt checked (`provenance::text_hash`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checked_hash: Option<String>,
    #[serde(default)]
    pub hints_shown: u32,
    /// When it was last checked (UTC).
    #[serde(default)]
    pub last: Option<String>,
    /// One line on the last check's outcome.
    #[serde(default)]
    pub last_result: Option<String>,
    #[serde(default)]
    pub prediction: Option<f64>,
    #[serde(default)]
    pub measurement: Option<f64>,
    #[serde(default)]
    pub unit: Option<String>,
}

pub fn path() -> PathBuf {
    match std::env::var_os(VARIABLE) {
        Some(p) => PathBuf::from(p),
        None => root().join(FILE_NAME),
    }
}

impl Progress {
    pub fn load() -> Result<Progress> {
        let path = path();
        match std::fs::read_to_string(&path) {
            Ok(text) => serde_json::from_str(&text)
                .map_err(|e| Error::Other(format!("{} is not a progress file: {e}", path.display()))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Progress::default()),
            Err(e) => Err(Error::io(format!("reading {}", path.display()))(e)),
        }
    }

    /// Writes the file whole or not at all (a file beside it, renamed over it): a check that is
    /// stopped, or one of `watch`'s checks, never leaves half a file for the next reader.
    pub fn save(&self) -> Result<()> {
        let path = path();
        let text = serde_json::to_string_pretty(self).map_err(|e| Error::Other(e.to_string()))?;
        let beside = PathBuf::from(format!("{}.{}.tmp", path.display(), std::process::id()));
        std::fs::write(&beside, text + "\n").map_err(Error::io(format!("writing {}", beside.display())))?;
        std::fs::rename(&beside, &path).map_err(Error::io(format!("writing {}", path.display())))
    }

    pub fn entry(&mut self, id: &str) -> &mut Entry {
        self.exercises.entry(id.to_string()).or_default()
    }

    /// The exercise's status: [`PASS`], [`FAIL`], [`COMPILED`] or [`NOT_STARTED`].
    pub fn status(&self, id: &str) -> &str {
        self.exercises
            .get(id)
            .and_then(|e| e.status.as_deref())
            .unwrap_or(NOT_STARTED)
    }

    /// The first exercise, in ladder order, that has not passed; `None` when all have.
    #[cfg(test)]
    pub fn first_not_passed(&self) -> Option<&'static Exercise> {
        self.first_not_passed_where(|_| true)
    }

    /// The first exercise not yet passed of those `wanted` keeps (`exercise` picks one that runs on
    /// the GPU here).
    pub fn first_not_passed_where(&self, wanted: impl Fn(&Exercise) -> bool) -> Option<&'static Exercise> {
        exercise::all().find(|e| wanted(e) && self.status(e.id) != PASS)
    }

    /// The next exercise after `current` that has not passed, coming round to the first ones
    /// again; `None` when every other one has passed.
    pub fn next_not_passed(&self, current: &Exercise) -> Option<&'static Exercise> {
        let all: Vec<&'static Exercise> = exercise::all().collect();
        let at = all.iter().position(|e| e.id == current.id).unwrap_or(0);
        all[at + 1..]
            .iter()
            .chain(&all[..at])
            .find(|e| self.status(e.id) != PASS)
            .copied()
    }
}

impl Entry {
    /// Records a check of a file whose content hashes to `hash`: one more attempt only when the
    /// content differs from the last attempt's (`watch` re-checks; a teacher's `check --all --tree`
    /// does not call it at all).
    pub fn count_attempt(&mut self, hash: String) {
        if self.checked_hash.as_ref() != Some(&hash) {
            self.attempts += 1;
            self.checked_hash = Some(hash);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unchanged_file_is_not_another_attempt() {
        let mut entry = Entry::default();
        entry.count_attempt("a".into());
        entry.count_attempt("a".into());
        assert_eq!(entry.attempts, 1);
        entry.count_attempt("b".into());
        entry.count_attempt("a".into());
        assert_eq!(entry.attempts, 3);
    }

    #[test]
    fn the_next_exercise_not_passed_comes_round_to_the_first() {
        let all: Vec<&Exercise> = exercise::all().collect();
        let mut progress = Progress::default();
        assert_eq!(progress.first_not_passed().map(|e| e.id), Some(all[0].id));
        assert_eq!(progress.next_not_passed(all[0]).map(|e| e.id), Some(all[1].id));
        for e in &all[1..] {
            progress.entry(e.id).status = Some(PASS.into());
        }
        // From the second, every later one passed: round to the first.
        assert_eq!(progress.next_not_passed(all[1]).map(|e| e.id), Some(all[0].id));
        assert_eq!(progress.first_not_passed().map(|e| e.id), Some(all[0].id));
        progress.entry(all[0].id).status = Some(PASS.into());
        assert!(progress.next_not_passed(all[0]).is_none());
        assert!(progress.first_not_passed().is_none());
    }
}
