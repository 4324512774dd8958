//! An exact edit of a kernel's source: how the exercises' starters (and the tests' planted pipeline
//! bugs) are made from the current kernels instead of being kept as copies of them. An edit that no
//! longer matches exactly once is an error that says so, never a silently stale kernel. And the other
//! way round, [`unified_diff`]: the lines two texts differ in, which is how `exercise solution` shows
//! an exercise's lesson.

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

/// One line of a diff: in both texts, only in the old one, or only in the new one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Line<'a> {
    Same(&'a str),
    Removed(&'a str),
    Added(&'a str),
}

/// The lines from `old` to `new`: the common head and tail set aside (an exercise changes a few lines
/// of a long kernel), the rest matched by a longest common subsequence.
fn line_diff<'a>(old: &[&'a str], new: &[&'a str]) -> Vec<Line<'a>> {
    let head = old.iter().zip(new).take_while(|(a, b)| a == b).count();
    let tail = old[head..]
        .iter()
        .rev()
        .zip(new[head..].iter().rev())
        .take_while(|(a, b)| a == b)
        .count();
    let (a, b) = (&old[head..old.len() - tail], &new[head..new.len() - tail]);
    // common[i][j]: the longest common subsequence of a[i..] and b[j..].
    let width = b.len() + 1;
    let mut common = vec![0u32; (a.len() + 1) * width];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            common[i * width + j] = if a[i] == b[j] {
                common[(i + 1) * width + j + 1] + 1
            } else {
                common[(i + 1) * width + j].max(common[i * width + j + 1])
            };
        }
    }
    let mut lines: Vec<Line> = old[..head].iter().map(|l| Line::Same(l)).collect();
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            lines.push(Line::Same(a[i]));
            (i, j) = (i + 1, j + 1);
        } else if j == b.len() || (i < a.len() && common[(i + 1) * width + j] >= common[i * width + j + 1]) {
            lines.push(Line::Removed(a[i]));
            i += 1;
        } else {
            lines.push(Line::Added(b[j]));
            j += 1;
        }
    }
    lines.extend(old[old.len() - tail..].iter().map(|l| Line::Same(l)));
    lines
}

/// `old` against `new` as a unified diff (`diff -u`, `git diff`): `---`/`+++` naming the two,
/// then each change with `context` unchanged lines around it; empty when the texts are equal.
pub fn unified_diff(old: &str, new: &str, old_name: &str, new_name: &str, context: usize) -> String {
    let (old_lines, new_lines): (Vec<&str>, Vec<&str>) = (old.lines().collect(), new.lines().collect());
    let lines = line_diff(&old_lines, &new_lines);
    let changed: Vec<usize> = (0..lines.len())
        .filter(|&n| !matches!(lines[n], Line::Same(_)))
        .collect();
    let Some(&first) = changed.first() else {
        return String::new();
    };
    let mut out = format!("--- {old_name}\n+++ {new_name}\n");
    // Hunks: runs of changes less than two contexts apart, each widened by its context.
    let mut hunks = vec![(first, first)];
    for &n in &changed[1..] {
        let last = hunks.last_mut().expect("one hunk at least");
        if n - last.1 <= 2 * context {
            last.1 = n;
        } else {
            hunks.push((n, n));
        }
    }
    for (from, to) in hunks {
        let (from, to) = (from.saturating_sub(context), (to + context).min(lines.len() - 1));
        // Lines of each text before the hunk, and in it.
        let count = |range: &[Line], old: bool| {
            range
                .iter()
                .filter(|l| match l {
                    Line::Same(_) => true,
                    Line::Removed(_) => old,
                    Line::Added(_) => !old,
                })
                .count()
        };
        let (old_before, new_before) = (count(&lines[..from], true), count(&lines[..from], false));
        let (old_count, new_count) = (count(&lines[from..=to], true), count(&lines[from..=to], false));
        // An empty side names the line before it, as diff does.
        let start = |before: usize, count: usize| if count == 0 { before } else { before + 1 };
        out += &format!(
            "@@ -{},{old_count} +{},{new_count} @@\n",
            start(old_before, old_count),
            start(new_before, new_count)
        );
        for line in &lines[from..=to] {
            out += &match line {
                Line::Same(l) => format!(" {l}\n"),
                Line::Removed(l) => format!("-{l}\n"),
                Line::Added(l) => format!("+{l}\n"),
            };
        }
    }
    out
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

    #[test]
    fn a_unified_diff_shows_each_change_with_its_context() {
        let old = "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n";
        let new = "1\n2\nthree\n4\n5\n6\n7\n8\n9\n10\neleven\n";
        assert_eq!(
            unified_diff(old, new, "a", "b", 1),
            "--- a\n+++ b\n@@ -2,3 +2,3 @@\n 2\n-3\n+three\n 4\n@@ -10,1 +10,2 @@\n 10\n+eleven\n"
        );
        // Two changes closer than two contexts share one hunk; equal texts give nothing.
        let near = "1\n2\nthree\n4\nfive\n6\n7\n8\n9\n10\n";
        assert_eq!(
            unified_diff(old, near, "a", "b", 1),
            "--- a\n+++ b\n@@ -2,5 +2,5 @@\n 2\n-3\n+three\n 4\n-5\n+five\n 6\n"
        );
        assert_eq!(unified_diff(old, old, "a", "b", 3), "");
        // A line only removed: the new side is empty at the line before it.
        assert_eq!(
            unified_diff("a\nb\n", "a\n", "x", "y", 0),
            "--- x\n+++ y\n@@ -2,1 +1,0 @@\n-b\n"
        );
    }

    #[test]
    fn applying_an_edit_and_diffing_back_shows_exactly_the_edit_reversed() {
        let edit = Edit {
            find: "b = 2;\nc = 2;",
            replace: "b = 5;",
        };
        let edited = edit.apply(SOURCE, "k.cu").unwrap();
        assert_eq!(
            unified_diff(&edited, SOURCE, "starter", "solution", 3),
            "--- starter\n+++ solution\n@@ -1,2 +1,3 @@\n a = 1;\n-b = 5;\n+b = 2;\n+c = 2;\n"
        );
    }
}
