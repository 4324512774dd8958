//! An exact edit of a kernel's source: how the exercises' starters (and the tests' planted pipeline
//! bugs) are made from the current kernels instead of being kept as copies of them. An edit that no
//! longer matches exactly once is an error that says so, never a silently stale kernel.

/// Replace `find`, which must occur exactly once in the source, by `replace`.
#[derive(Debug, Clone, Copy)]
pub struct Edit {
    pub find: &'static str,
    pub replace: &'static str,
}

/// Why an edit could not be applied: its `find` occurs `found` times in `path`, not once.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{find}` occurs {found} times in {path} (exactly once expected)")]
pub struct Mismatch {
    pub path: String,
    pub find: String,
    pub found: usize,
}

impl Edit {
    /// `source` (named `path` in the error) with this edit made.
    pub fn apply(&self, source: &str, path: &str) -> Result<String, Mismatch> {
        match source.matches(self.find).count() {
            1 => Ok(source.replacen(self.find, self.replace, 1)),
            found => Err(Mismatch {
                path: path.to_string(),
                find: self.find.to_string(),
                found,
            }),
        }
    }
}

/// `source` with `edits` made in order, each in the text the ones before it left.
pub fn apply_all(source: &str, path: &str, edits: &[Edit]) -> Result<String, Mismatch> {
    edits
        .iter()
        .try_fold(source.to_string(), |text, edit| edit.apply(&text, path))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SOURCE: &str = "a = 1;\nb = 2;\nc = 2;\n";

    #[test]
    fn an_edit_that_matches_once_is_made() {
        let edit = Edit {
            find: "a = 1;",
            replace: "a = 3;",
        };
        assert_eq!(edit.apply(SOURCE, "k.cu").unwrap(), "a = 3;\nb = 2;\nc = 2;\n");
    }

    #[test]
    fn an_edit_that_matches_zero_or_several_times_says_how_often() {
        for (find, found) in [("d = 4;", 0), ("= 2;", 2)] {
            let err = Edit { find, replace: "x" }.apply(SOURCE, "k.cu").unwrap_err();
            assert_eq!(err.found, found, "{err}");
            assert_eq!(
                err.to_string(),
                format!("`{find}` occurs {found} times in k.cu (exactly once expected)")
            );
        }
    }

    #[test]
    fn edits_apply_in_order_to_the_text_left_before() {
        let edits = [
            Edit {
                find: "b = 2;",
                replace: "b = 5;",
            },
            // Once b is 5, "= 2;" occurs once.
            Edit {
                find: "= 2;",
                replace: "= 6;",
            },
        ];
        assert_eq!(apply_all(SOURCE, "k.cu", &edits).unwrap(), "a = 1;\nb = 5;\nc = 6;\n");
    }
}
