//! What every figure shares, the book's and the timeline's ([`crate::evidence::timeline`]): where
//! figures live, how they are written (only when they change), and the drawing style (font, ink, grid,
//! one colour per series, cuBLAS's colour).

use crate::error::{Error, Result};
use plotters::prelude::*;
use std::path::{Path, PathBuf};

/// `book/src/figures`.
pub fn figures_dir(book_dir: &Path) -> PathBuf {
    book_dir.join("src").join("figures")
}

pub(crate) const FONT: &str = "sans-serif";
pub(crate) const INK: RGBColor = RGBColor(40, 40, 40);
pub(crate) const GRID: RGBColor = RGBColor(225, 225, 225);
pub(crate) const GRID_BOLD: RGBColor = RGBColor(190, 190, 190);
pub(crate) const TRANSPARENT: RGBAColor = RGBAColor(0, 0, 0, 0.0);
/// One colour per measured size, in increasing size order (4096 blue, 8192 orange, ...).
pub(crate) const SERIES: [RGBColor; 5] = [
    RGBColor(31, 100, 180),
    RGBColor(230, 110, 0),
    RGBColor(40, 150, 60),
    RGBColor(140, 80, 170),
    RGBColor(120, 90, 70),
];
pub(crate) const CUBLAS_BF16: RGBColor = RGBColor(190, 30, 45);

pub(crate) fn draw_error(what: &str) -> impl FnOnce(DrawingAreaErrorKind<std::io::Error>) -> Error + '_ {
    move |e| Error::Other(format!("drawing {what}: {e}"))
}

/// Writes `text` to `path` unless it already holds it (so regenerating leaves unchanged figures alone).
pub(crate) fn write_if_changed(path: &Path, text: &str) -> Result<()> {
    if std::fs::read_to_string(path).is_ok_and(|old| old == text) {
        return Ok(());
    }
    crate::run::results::write_file_atomically(path, text)
}
