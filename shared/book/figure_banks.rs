//! The bank picture for the 128-byte-swizzle chapter: which shared-memory bank group each 16-byte chunk
//! of one 1024-byte swizzle atom lands in, without and with the swizzle.
//!
//! The picture is computed from [`encoding::swizzle`] and [`encoding::bank`], not drawn by hand, and is
//! a pure function: the same code gives a byte-identical SVG. Text follows `figure.rs`: a generic
//! `sans-serif` family sized with plotters' built-in estimate (no font files are read); the browser draws
//! the glyphs.

use crate::encoding::{self, SmemSwizzle};
use crate::error::{Error, Result};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::path::{Path, PathBuf};

/// Rows of the atom (M rows of A, 128 bytes each).
pub const ROWS: u32 = 8;
/// 16-byte chunks across one 128-byte row (8 bf16 each, along K).
pub const CHUNKS: u32 = 8;
/// Bytes of one row.
const ROW_BYTES: u32 = 128;
/// Bytes of one chunk.
const CHUNK_BYTES: u32 = 16;

/// `book/src/figures/swizzle-banks.svg`.
pub fn swizzle_banks_svg_path(book_dir: &Path) -> PathBuf {
    crate::svg::figures_dir(book_dir).join("swizzle-banks.svg")
}

/// Draws the figure into `out` (an SVG file), creating folders; a file that already holds exactly this
/// figure is left untouched.
pub fn render_swizzle_banks(out: &Path) -> Result<()> {
    crate::svg::write_if_changed(out, &swizzle_banks_svg()?)
}

/// `groups[row][chunk]`: the bank group (`bank / 4`, 0..8) that the 16-byte chunk `chunk` of row `row`
/// of a 1024-byte-aligned atom occupies once stored under `swizzle`.
pub fn bank_groups(swizzle: SmemSwizzle) -> [[u32; CHUNKS as usize]; ROWS as usize] {
    let mut groups = [[0; CHUNKS as usize]; ROWS as usize];
    for (row, line) in groups.iter_mut().enumerate() {
        for (chunk, cell) in line.iter_mut().enumerate() {
            let logical = row as u32 * ROW_BYTES + chunk as u32 * CHUNK_BYTES;
            *cell = encoding::bank(encoding::swizzle(swizzle, logical)) / 4;
        }
    }
    groups
}

/// The worst bank conflict of reading one logical chunk column from all 8 rows: how many of the 8
/// chunks share a bank group (8 = every row in the same four banks, 1 = conflict-free).
pub fn column_conflict_ways(groups: &[[u32; CHUNKS as usize]; ROWS as usize]) -> u32 {
    (0..CHUNKS as usize)
        .map(|chunk| {
            let mut count = [0u32; CHUNKS as usize];
            for line in groups {
                count[line[chunk] as usize] += 1;
            }
            count.into_iter().max().unwrap_or(0)
        })
        .max()
        .unwrap_or(0)
}

/// The figure as SVG text.
pub fn swizzle_banks_svg() -> Result<String> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, HEIGHT)).into_drawing_area();
        let fail =
            |e: DrawingAreaErrorKind<std::io::Error>| Error::Other(format!("drawing the swizzle bank figure: {e}"));
        draw(&root).map_err(fail)?;
        root.present().map_err(fail)?;
    }
    if !svg.ends_with('\n') {
        svg.push('\n');
    }
    Ok(svg)
}

// ---------------------------------------------------------------------------------------------
// Layout

const WIDTH: u32 = 1060;
const HEIGHT: u32 = 590;
const FONT: &str = "sans-serif";
const INK: RGBColor = RGBColor(40, 40, 40);
const CELL_W: i32 = 52;
const CELL_H: i32 = 40;
const GRID_TOP: i32 = 164;
/// Left edge of the two grids.
const PANEL_X: [i32; 2] = [84, 610];
/// The column outlined in both panels, as the example of a column-wise read.
const HIGHLIGHT: i32 = 1;
/// One light colour per bank group, distinct enough side by side, dark text readable on all.
const GROUP_COLOURS: [RGBColor; 8] = [
    RGBColor(166, 206, 235),
    RGBColor(255, 204, 153),
    RGBColor(178, 223, 160),
    RGBColor(240, 170, 170),
    RGBColor(205, 190, 230),
    RGBColor(225, 200, 170),
    RGBColor(245, 190, 225),
    RGBColor(215, 215, 140),
];

type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;
type DrawResult = std::result::Result<(), DrawingAreaErrorKind<std::io::Error>>;

fn text(root: &Area<'_>, s: &str, at: (i32, i32), size: u32, pos: Pos) -> DrawResult {
    root.draw(&Text::new(
        s.to_string(),
        at,
        TextStyle::from((FONT, size).into_font()).color(&INK).pos(pos),
    ))
}

fn draw(root: &Area<'_>) -> DrawResult {
    root.fill(&WHITE)?;
    let centre_top = Pos::new(HPos::Center, VPos::Top);
    let title = "Which shared-memory banks each 16-byte chunk of a 1024-byte tile occupies";
    text(root, title, (WIDTH as i32 / 2, 14), 26, centre_top)?;
    let lines = [
        "one 1024-byte swizzle atom: 8 rows of 128 bytes, each cut into 8 chunks of 16 bytes (8 bf16 along K)",
        "each cell: the bank group g = bank / 4 (banks 4g … 4g+3) that its chunk is stored in",
    ];
    for (i, line) in lines.into_iter().enumerate() {
        text(root, line, (WIDTH as i32 / 2, 48 + 22 * i as i32), 17, centre_top)?;
    }
    let panels = [
        (SmemSwizzle::None, "No swizzle: group = k"),
        (SmemSwizzle::B128, "128-byte swizzle: group = k XOR row"),
    ];
    for ((swizzle, title), x0) in panels.into_iter().zip(PANEL_X) {
        draw_panel(root, swizzle, title, x0)?;
    }
    draw_legend(root)
}

fn draw_panel(root: &Area<'_>, swizzle: SmemSwizzle, title: &str, x0: i32) -> DrawResult {
    let groups = bank_groups(swizzle);
    let grid_w = CELL_W * CHUNKS as i32;
    let grid_h = CELL_H * ROWS as i32;
    let centre = x0 + grid_w / 2;
    let top = Pos::new(HPos::Center, VPos::Top);
    text(root, title, (centre, GRID_TOP - 58), 20, top)?;
    text(root, "logical chunk k along K →", (centre, GRID_TOP - 34), 15, top)?;
    for k in 0..CHUNKS as i32 {
        let at = (x0 + k * CELL_W + CELL_W / 2, GRID_TOP - 6);
        text(root, &k.to_string(), at, 15, Pos::new(HPos::Center, VPos::Bottom))?;
    }
    let middle = Pos::new(HPos::Center, VPos::Center);
    for (row, line) in groups.iter().enumerate() {
        let y = GRID_TOP + row as i32 * CELL_H;
        let label_at = (x0 - 8, y + CELL_H / 2);
        text(
            root,
            &format!("row {row}"),
            label_at,
            15,
            Pos::new(HPos::Right, VPos::Center),
        )?;
        for (k, &group) in line.iter().enumerate() {
            let x = x0 + k as i32 * CELL_W;
            let cell = [(x, y), (x + CELL_W, y + CELL_H)];
            root.draw(&Rectangle::new(cell, GROUP_COLOURS[group as usize].filled()))?;
            root.draw(&Rectangle::new(cell, WHITE.stroke_width(1)))?;
            let (cx, cy) = (x + CELL_W / 2, y + CELL_H / 2);
            text(root, &group.to_string(), (cx, cy - 6), 19, middle)?;
            text(
                root,
                &format!("{}–{}", 4 * group, 4 * group + 3),
                (cx, cy + 11),
                12,
                middle,
            )?;
        }
    }
    let hx = x0 + HIGHLIGHT * CELL_W;
    root.draw(&Rectangle::new(
        [(hx, GRID_TOP), (hx + CELL_W, GRID_TOP + grid_h)],
        INK.stroke_width(3),
    ))?;
    let ways = column_conflict_ways(&groups);
    let verdict = if ways <= 1 {
        format!("column {HIGHLIGHT}: 8 rows in 8 different bank groups → conflict-free")
    } else {
        let group = groups[0][HIGHLIGHT as usize];
        format!("column {HIGHLIGHT}: all 8 rows in bank group {group} → {ways}-way bank conflict")
    };
    text(root, &verdict, (centre, GRID_TOP + grid_h + 12), 17, top)
}

fn draw_legend(root: &Area<'_>) -> DrawResult {
    let y = HEIGHT as i32 - 44;
    let swatch = 22;
    let step = 96;
    let x0 = WIDTH as i32 / 2 - step * 4 + 60;
    let left = Pos::new(HPos::Left, VPos::Center);
    text(
        root,
        "bank group (banks):",
        (x0 - 10, y + swatch / 2),
        15,
        Pos::new(HPos::Right, VPos::Center),
    )?;
    for (g, colour) in GROUP_COLOURS.iter().enumerate() {
        let x = x0 + g as i32 * step;
        root.draw(&Rectangle::new([(x, y), (x + swatch, y + swatch)], colour.filled()))?;
        let label = format!("{g} ({}–{})", 4 * g, 4 * g + 3);
        text(root, &label, (x + swatch + 6, y + swatch / 2), 15, left)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_swizzle_every_column_is_one_bank_group() {
        let groups = bank_groups(SmemSwizzle::None);
        for line in &groups {
            assert_eq!(line, &[0, 1, 2, 3, 4, 5, 6, 7]);
        }
        assert_eq!(column_conflict_ways(&groups), 8);
    }

    #[test]
    fn with_the_128b_swizzle_every_row_and_column_is_a_permutation() {
        let groups = bank_groups(SmemSwizzle::B128);
        for k in 0..CHUNKS as usize {
            let mut column: Vec<u32> = groups.iter().map(|line| line[k]).collect();
            column.sort();
            assert_eq!(column, (0..8).collect::<Vec<_>>(), "column {k}");
        }
        for line in &groups {
            let mut row = line.to_vec();
            row.sort();
            assert_eq!(row, (0..8).collect::<Vec<_>>());
        }
        // Row r, chunk k lands in group k ^ r (the XOR of bits 4-6 with bits 7-9).
        assert_eq!(groups[3][1], 2);
        assert_eq!(column_conflict_ways(&groups), 1);
    }

    #[test]
    fn renders_a_deterministic_svg_into_a_temp_dir() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = swizzle_banks_svg_path(dir.path());
        render_swizzle_banks(&path).expect("render");
        let first = std::fs::read_to_string(&path).expect("read back");
        assert!(first.starts_with("<svg"), "{}", &first[..first.len().min(80)]);
        assert!(first.contains("No swizzle"));
        assert!(first.contains("8-way bank conflict"));
        assert!(first.contains("conflict-free"));
        // 2 panels × 64 cells, each filled and outlined, plus outlines, legend and background.
        assert!(first.matches("<rect").count() >= 2 * 64 * 2 + 8);
        // Same input, same bytes; a second render leaves the file as it is.
        assert_eq!(swizzle_banks_svg().expect("svg"), first);
        render_swizzle_banks(&path).expect("render again");
        assert_eq!(std::fs::read_to_string(&path).expect("read back"), first);
        assert_eq!(
            std::fs::read_dir(path.parent().unwrap()).unwrap().count(),
            1,
            "no temporary file left"
        );
    }

    #[test]
    fn regenerate_all_draws_it_even_without_results() {
        let dir = tempfile::tempdir().expect("temp dir");
        let ladders = crate::book::regenerate_all(dir.path()).expect("regenerate");
        assert!(ladders.is_empty());
        let drawn = std::fs::read_to_string(swizzle_banks_svg_path(dir.path())).expect("drawn");
        assert_eq!(drawn, swizzle_banks_svg().expect("svg"));
    }

    #[test]
    fn committed_figure_is_up_to_date() {
        let committed = swizzle_banks_svg_path(&Path::new(env!("CARGO_MANIFEST_DIR")).join("book"));
        if let Ok(text) = std::fs::read_to_string(&committed) {
            assert_eq!(
                text,
                swizzle_banks_svg().expect("svg"),
                "{} is stale: rerun `ladder`",
                committed.display()
            );
        }
    }
}
