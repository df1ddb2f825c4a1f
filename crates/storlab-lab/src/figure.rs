//! Figures: data first (every point is also written as CSV), then drawn
//! as SVG with plotters, one panel per access type or variant, side by
//! side, sharing their axes.

use std::path::Path;

use plotters::coord::ranged1d::ValueFormatter;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use serde::Serialize;

use crate::error::{LabError, Result};

/// What a series is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SeriesKind {
    /// Measured on the model.
    Model,
    /// A bound worked out from the configuration (an ideal link).
    Ideal,
    /// A published or reference figure.
    Reference,
}

/// One line of a panel.
#[derive(Clone, Debug, Serialize)]
pub struct Series {
    /// Legend text.
    pub label: String,
    /// Model, ideal bound or reference.
    pub kind: SeriesKind,
    /// (x, y) points in x order.
    pub points: Vec<(f64, f64)>,
}

/// One panel of a figure.
#[derive(Clone, Debug, Serialize)]
pub struct Panel {
    /// Panel caption.
    pub title: String,
    /// Its lines.
    pub series: Vec<Series>,
}

/// A figure: panels side by side sharing x and y axes.
#[derive(Clone, Debug, Serialize)]
pub struct Figure {
    /// File stem (`moneta-bandwidth`).
    pub id: String,
    /// Caption.
    pub title: String,
    /// X axis label.
    pub x_label: String,
    /// Y axis label.
    pub y_label: String,
    /// Logarithmic x axis (ticks on powers of two).
    pub x_log: bool,
    /// The x axis counts bytes (ticks in K and M of 1024).
    pub x_bytes: bool,
    /// Logarithmic y axis.
    pub y_log: bool,
    /// The panels.
    pub panels: Vec<Panel>,
}

impl Figure {
    /// Every point as CSV: `panel,series,kind,x,y`.
    pub fn to_csv(&self) -> String {
        let mut s = String::from("panel,series,kind,x,y\n");
        for p in &self.panels {
            for se in &p.series {
                let kind = match se.kind {
                    SeriesKind::Model => "model",
                    SeriesKind::Ideal => "ideal",
                    SeriesKind::Reference => "reference",
                };
                for (x, y) in &se.points {
                    s.push_str(&format!(
                        "{},{},{kind},{x},{y}\n",
                        csv_field(&p.title),
                        csv_field(&se.label)
                    ));
                }
            }
        }
        s
    }

    /// The series called `label` in the panel called `panel`.
    pub fn series(&self, panel: &str, label: &str) -> Option<&Series> {
        self.panels
            .iter()
            .find(|p| p.title == panel)?
            .series
            .iter()
            .find(|s| s.label == label)
    }

    /// Draw the figure as SVG at `path`.
    pub fn write_svg(&self, path: &Path) -> Result<()> {
        let svg = self.to_svg()?;
        std::fs::write(path, svg).map_err(|source| LabError::Io {
            path: path.to_path_buf(),
            source,
        })
    }

    /// The figure as an SVG document (what [`Figure::write_svg`] writes;
    /// the HTML report embeds it inline).
    pub fn to_svg(&self) -> Result<String> {
        let path = std::path::PathBuf::from(format!("{}.svg", self.id));
        let err = |e: &dyn std::fmt::Display| LabError::Plot {
            path: path.clone(),
            message: e.to_string(),
        };
        let mut out = String::new();
        self.draw(&mut out).map_err(|e| err(&e))?;
        Ok(out)
    }

    /// Why the point (`x`, `y`) cannot be drawn, if it cannot: not a
    /// number (a run that gave no figure), or at or below zero on a
    /// logarithmic axis.
    fn unplottable(&self, x: f64, y: f64) -> Option<&'static str> {
        if x.is_nan() || y.is_nan() {
            Some("not a number (no figure for this point)")
        } else if !x.is_finite() || !y.is_finite() {
            Some("infinite")
        } else if self.x_log && x <= 0.0 {
            Some("x at or below zero on a logarithmic axis")
        } else if self.y_log && y <= 0.0 {
            Some("y at or below zero on a logarithmic axis")
        } else {
            None
        }
    }

    /// Every point the drawing leaves out, and why, in panel and series
    /// order: the figure marks each (× on the x axis at its x, when that
    /// is drawable) and lists it under the panels, and the HTML report
    /// lists it in the figure's caption.
    pub fn left_out(&self) -> Vec<LeftOut> {
        let mut v = Vec::new();
        for p in &self.panels {
            for s in &p.series {
                for &(x, y) in &s.points {
                    if let Some(reason) = self.unplottable(x, y) {
                        v.push(LeftOut {
                            panel: p.title.clone(),
                            series: s.label.clone(),
                            x,
                            y,
                            x_bytes: self.x_bytes,
                            reason,
                        });
                    }
                }
            }
        }
        v
    }

    /// For each series of panel `panel`, the index of the first earlier
    /// series of the panel whose drawn points are all within a pixel of
    /// its own (same count, each pair at most 1 px apart in the drawing
    /// this figure makes): such a line hides the earlier one or is hidden
    /// by it, and its legend entry says "(same as ...)".
    pub fn same_as(&self, panel: &Panel) -> Vec<Option<usize>> {
        let lay = self.layout();
        let ((x0, x1), (y0, y1)) = self.bounds();
        let tx = |x: f64| if self.x_log { x.log2() } else { x };
        let ty = |y: f64| if self.y_log { y.ln() } else { y };
        let (ax, bx, ay, by) = (tx(x0), tx(x1), ty(y0), ty(y1));
        let px = |(x, y): (f64, f64)| {
            let u = if bx > ax {
                (tx(x) - ax) / (bx - ax)
            } else {
                0.5
            };
            let v = if by > ay {
                (ty(y) - ay) / (by - ay)
            } else {
                0.5
            };
            (u * lay.plot_w, v * lay.plot_h)
        };
        let drawn: Vec<Vec<(f64, f64)>> = panel
            .series
            .iter()
            .map(|s| {
                s.points
                    .iter()
                    .filter(|&&(x, y)| self.unplottable(x, y).is_none())
                    .map(|&p| px(p))
                    .collect()
            })
            .collect();
        let mut out: Vec<Option<usize>> = vec![None; drawn.len()];
        for i in 0..drawn.len() {
            if drawn[i].is_empty() {
                continue;
            }
            out[i] = (0..i).find(|&j| {
                out[j].is_none()
                    && drawn[j].len() == drawn[i].len()
                    && drawn[i]
                        .iter()
                        .zip(&drawn[j])
                        .all(|(a, b)| (a.0 - b.0).abs() <= 1.0 && (a.1 - b.1).abs() <= 1.0)
            });
        }
        out
    }

    /// The corner the model's lines leave freest for the legend: the one
    /// with the fewest of their points in its 40% x 40% of the panel (upper
    /// left first; ideal and reference lines may pass under it).
    fn legend_corner(&self, panel: &Panel) -> SeriesLabelPosition {
        let ((x0, x1), (y0, y1)) = self.bounds();
        let tx = |x: f64| if self.x_log { x.max(1e-300).log2() } else { x };
        let ty = |y: f64| if self.y_log { y.max(1e-300).ln() } else { y };
        let (ax, bx) = (tx(x0), tx(x1));
        let (ay, by) = (ty(y0), ty(y1));
        let norm = |v: f64, a: f64, b: f64| if b > a { (v - a) / (b - a) } else { 0.5 };
        let pts: Vec<(f64, f64)> = panel
            .series
            .iter()
            .filter(|s| s.kind == SeriesKind::Model)
            .flat_map(|s| s.points.iter())
            .filter(|&&(x, y)| self.unplottable(x, y).is_none())
            .map(|&(x, y)| (norm(tx(x), ax, bx), norm(ty(y), ay, by)))
            .collect();
        let count = |left: bool, top: bool| {
            pts.iter()
                .filter(|(x, y)| {
                    (if left { *x <= 0.4 } else { *x >= 0.6 })
                        && (if top { *y >= 0.6 } else { *y <= 0.4 })
                })
                .count()
        };
        [
            (SeriesLabelPosition::UpperLeft, count(true, true)),
            (SeriesLabelPosition::UpperRight, count(false, true)),
            (SeriesLabelPosition::LowerRight, count(false, false)),
            (SeriesLabelPosition::LowerLeft, count(true, false)),
        ]
        .into_iter()
        .min_by_key(|(_, n)| *n)
        .map(|(p, _)| p)
        .unwrap_or(SeriesLabelPosition::UpperLeft)
    }

    /// The axes' ranges over the points that can be drawn.
    fn bounds(&self) -> ((f64, f64), (f64, f64)) {
        let pts = || {
            self.panels
                .iter()
                .flat_map(|p| p.series.iter())
                .flat_map(|s| s.points.iter())
                .filter(|&&(x, y)| self.unplottable(x, y).is_none())
        };
        let (mut x0, mut x1, mut y0, mut y1) = (f64::MAX, f64::MIN, f64::MAX, f64::MIN);
        for &(x, y) in pts() {
            x0 = x0.min(x);
            x1 = x1.max(x);
            y0 = y0.min(y);
            y1 = y1.max(y);
        }
        if x0 > x1 {
            let one = if self.x_log { (1.0, 2.0) } else { (0.0, 1.0) };
            let y = if self.y_log { (1.0, 10.0) } else { (0.0, 1.0) };
            return (one, y);
        }
        let x = if x0 == x1 {
            if self.x_log {
                (x0 / 2.0, x1 * 2.0)
            } else {
                (x0 - 1.0, x1 + 1.0)
            }
        } else {
            (x0, x1)
        };
        let y = if self.y_log {
            (y0 / 1.5, y1 * 1.5)
        } else {
            (y0.min(0.0), if y1 > 0.0 { y1 * 1.1 } else { 1.0 })
        };
        (x, y)
    }

    /// The x axis range as drawn (log2 of the values on a logarithmic
    /// axis, so its ticks fall on powers of two).
    fn x_drawn(&self) -> (f64, f64) {
        let (xr, _) = self.bounds();
        if self.x_log {
            (xr.0.log2(), xr.1.log2())
        } else {
            xr
        }
    }

    /// How many x ticks the mesh asks for.
    fn x_ticks(&self) -> usize {
        if self.x_log {
            let (a, b) = self.x_drawn();
            ((b - a).round() as usize + 1).clamp(2, 12)
        } else {
            10
        }
    }

    fn x_tick_text(&self, v: f64) -> String {
        if self.x_log {
            x_label(2f64.powf(v), self.x_bytes)
        } else {
            x_label(v, self.x_bytes)
        }
    }

    fn y_tick_text(&self, v: f64) -> String {
        if self.y_log && v.abs() < 0.01 && v != 0.0 {
            format!("{v:.0e}")
        } else {
            trim(v)
        }
    }

    /// The tick labels plotters will draw on each axis (the same key
    /// points it asks its coordinates for).
    fn tick_labels(&self) -> (Vec<String>, Vec<String>) {
        let (a, b) = self.x_drawn();
        let xs = RangedCoordf64::from(a..b)
            .key_points(self.x_ticks())
            .into_iter()
            .map(|v| self.x_tick_text(v))
            .collect();
        let (_, (c, d)) = self.bounds();
        let ys = if self.y_log {
            LogCoord::<f64>::from((c..d).log_scale()).key_points(Y_TICKS)
        } else {
            RangedCoordf64::from(c..d).key_points(Y_TICKS)
        };
        (xs, ys.into_iter().map(|v| self.y_tick_text(v)).collect())
    }

    /// Sizes of the drawing, worked out from the text it holds so that no
    /// label is clipped or overlaps another.
    fn layout(&self) -> Layout {
        let n = self.panels.len().max(1) as u32;
        let (xs, ys) = self.tick_labels();
        let widest = |v: &[String]| v.iter().map(|s| text_px(s, TICK_FONT)).fold(0.0, f64::max);
        // y: the tick mark's gap (twice the 5 px tick), the widest tick
        // label, a gap, the rotated axis description, a gap
        let y_area = (10.0 + widest(&ys) + 6.0 + line_px(DESC_FONT) + 4.0).ceil() as u32;
        let x_area = (10.0 + line_px(TICK_FONT) + 6.0 + line_px(DESC_FONT) + 4.0).ceil() as u32;
        // the last x tick label is centred on the axis' end
        let last = xs.last().map(|s| text_px(s, TICK_FONT)).unwrap_or(0.0);
        let right = (last / 2.0 + 6.0).max(10.0).ceil() as u32;
        let desc_w = text_px(&self.x_label, DESC_FONT);
        let caption_w = self
            .panels
            .iter()
            .map(|p| text_px(&p.title, CAPTION_FONT))
            .fold(0.0, f64::max);
        let mut panel_w = 420u32
            .max((caption_w + 2.0 * MARGIN as f64 + 8.0).ceil() as u32)
            .max((desc_w + y_area as f64 + right as f64 + 2.0 * MARGIN as f64).ceil() as u32);
        let title_w = text_px(&self.title, TITLE_FONT) + 16.0;
        let width = (panel_w * n).max(640).max(title_w.ceil() as u32);
        panel_w = width / n;
        let notes = self.note_lines().len() as u32;
        let notes_h = if notes > 0 { notes * NOTE_LINE + 8 } else { 0 };
        // tall enough for the rotated y axis description beside the plot
        let above_below = line_px(TITLE_FONT).ceil() as u32
            + 2 * MARGIN
            + line_px(CAPTION_FONT).ceil() as u32
            + x_area;
        let height = 400u32.max(text_px(&self.y_label, DESC_FONT).ceil() as u32 + 16 + above_below);
        let chart_h = height - line_px(TITLE_FONT).ceil() as u32;
        let plot_w = (panel_w - MARGIN - right - y_area) as f64;
        let plot_h = (chart_h - 2 * MARGIN - line_px(CAPTION_FONT).ceil() as u32 - x_area) as f64;
        Layout {
            width,
            height: height + notes_h,
            notes_h,
            y_area,
            x_area,
            right,
            plot_w,
            plot_h,
        }
    }

    /// The lines under the panels that list the points left out.
    fn note_lines(&self) -> Vec<String> {
        let left = self.left_out();
        let mut v: Vec<String> = left
            .iter()
            .take(MAX_NOTES)
            .map(|l| format!("× left out: {l}"))
            .collect();
        if left.len() > MAX_NOTES {
            v.push(format!(
                "× and {} more points left out (see the CSV)",
                left.len() - MAX_NOTES
            ));
        }
        v
    }

    fn draw(
        &self,
        out: &mut String,
    ) -> std::result::Result<(), DrawingAreaErrorKind<std::io::Error>> {
        let lay = self.layout();
        let n = self.panels.len().max(1);
        let root = SVGBackend::with_string(out, (lay.width, lay.height)).into_drawing_area();
        root.fill(&WHITE)?;
        let (root, notes) = root.split_vertically(lay.height - lay.notes_h);
        let root = root.titled(&self.title, ("sans-serif", TITLE_FONT))?;
        let (xr, yr) = self.bounds();
        let xr = self.x_drawn_from(xr);
        for (panel, area) in self.panels.iter().zip(root.split_evenly((1, n))) {
            let mut b = ChartBuilder::on(&area);
            b.caption(&panel.title, ("sans-serif", CAPTION_FONT))
                .margin(MARGIN)
                .margin_right(lay.right)
                .x_label_area_size(lay.x_area)
                .y_label_area_size(lay.y_area);
            // plotters' coordinate types differ by scale: one arm each
            if self.y_log {
                let c = b.build_cartesian_2d(xr.0..xr.1, (yr.0..yr.1).log_scale())?;
                self.draw_panel(c, panel, yr.0)?
            } else {
                let c = b.build_cartesian_2d(xr.0..xr.1, yr.0..yr.1)?;
                self.draw_panel(c, panel, yr.0)?
            }
        }
        for (i, line) in self.note_lines().iter().enumerate() {
            notes.draw_text(
                line,
                &TextStyle::from(("sans-serif", NOTE_FONT).into_font())
                    .color(&RGBColor(122, 11, 11)),
                (MARGIN as i32 + 4, 4 + (i as u32 * NOTE_LINE) as i32),
            )?;
        }
        root.present()?;
        Ok(())
    }

    fn x_drawn_from(&self, xr: (f64, f64)) -> (f64, f64) {
        if self.x_log {
            (xr.0.log2(), xr.1.log2())
        } else {
            xr
        }
    }

    fn draw_panel<'a, Y>(
        &self,
        mut chart: ChartContext<'a, SVGBackend<'a>, Cartesian2d<RangedCoordf64, Y>>,
        panel: &Panel,
        y_bottom: f64,
    ) -> std::result::Result<(), DrawingAreaErrorKind<std::io::Error>>
    where
        Y: Ranged<ValueType = f64> + ValueFormatter<f64>,
    {
        let x_fmt = |v: &f64| self.x_tick_text(*v);
        let y_fmt = |v: &f64| self.y_tick_text(*v);
        chart
            .configure_mesh()
            .x_desc(self.x_label.as_str())
            .y_desc(self.y_label.as_str())
            .x_labels(self.x_ticks())
            .y_labels(Y_TICKS)
            .label_style(("sans-serif", TICK_FONT))
            .axis_desc_style(("sans-serif", DESC_FONT))
            .x_label_formatter(&x_fmt)
            .y_label_formatter(&y_fmt)
            .draw()?;
        let same = self.same_as(panel);
        let mut model = 0;
        let mut colors = Vec::new();
        for (i, s) in panel.series.iter().enumerate() {
            let color = match s.kind {
                SeriesKind::Model => {
                    model += 1;
                    model_color(model - 1).to_rgba()
                }
                SeriesKind::Ideal => BLACK.to_rgba(),
                SeriesKind::Reference => REFERENCE_GRAY.to_rgba(),
            };
            colors.push(color);
            let style = ShapeStyle::from(color).stroke_width(2);
            let tx = |x: f64| if self.x_log { x.log2() } else { x };
            // the line breaks where a point is left out
            let mut runs: Vec<Vec<(f64, f64)>> = vec![Vec::new()];
            for &(x, y) in &s.points {
                if self.unplottable(x, y).is_none() {
                    runs.last_mut().expect("one run at least").push((tx(x), y));
                } else if !runs.last().expect("one run at least").is_empty() {
                    runs.push(Vec::new());
                }
            }
            let label = match same[i] {
                Some(j) => format!("{} (same as {})", s.label, panel.series[j].label),
                None => s.label.clone(),
            };
            // a line drawn on an earlier one is dashed, its points rings,
            // so both stay visible
            let on_top = same[i].is_some();
            let mut drawn = None;
            for pts in runs.into_iter().filter(|r| !r.is_empty()) {
                let d = if s.kind == SeriesKind::Model && !on_top {
                    chart.draw_series(LineSeries::new(pts.clone(), style))?;
                    chart.draw_series(pts.into_iter().map(|p| Circle::new(p, 3, style.filled())))?
                } else if s.kind == SeriesKind::Model {
                    chart.draw_series(DashedLineSeries::new(pts.clone(), 6, 4, style))?;
                    chart.draw_series(pts.into_iter().map(|p| Circle::new(p, 6, style)))?
                } else {
                    chart.draw_series(DashedLineSeries::new(pts, 8, 5, style))?
                };
                drawn = Some(d);
            }
            if let Some(d) = drawn {
                let dashed = on_top || s.kind != SeriesKind::Model;
                d.label(label).legend(move |(x, y)| {
                    if dashed {
                        PathElement::new(vec![(x, y), (x + 7, y)], style)
                    } else {
                        PathElement::new(vec![(x, y), (x + 18, y)], style)
                    }
                });
            }
        }
        // a point left out: × on the x axis at its x, in its line's colour
        for (s, color) in panel.series.iter().zip(&colors) {
            let style = ShapeStyle::from(*color).stroke_width(2);
            for &(x, y) in &s.points {
                let x_ok = x.is_finite() && (!self.x_log || x > 0.0);
                if self.unplottable(x, y).is_some() && x_ok {
                    let x = if self.x_log { x.log2() } else { x };
                    chart.draw_series(std::iter::once(Cross::new((x, y_bottom), 5, style)))?;
                }
            }
        }
        chart
            .configure_series_labels()
            .position(self.legend_corner(panel))
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .label_font(("sans-serif", LEGEND_FONT))
            .draw()?;
        Ok(())
    }
}

/// Sizes of a figure's drawing (see `Figure::layout`).
struct Layout {
    width: u32,
    height: u32,
    notes_h: u32,
    y_area: u32,
    x_area: u32,
    right: u32,
    plot_w: f64,
    plot_h: f64,
}

const TITLE_FONT: u32 = 18;
const CAPTION_FONT: u32 = 15;
const TICK_FONT: u32 = 12;
const DESC_FONT: u32 = 13;
const LEGEND_FONT: u32 = 11;
const NOTE_FONT: u32 = 12;
const NOTE_LINE: u32 = 16;
const MAX_NOTES: usize = 6;
const MARGIN: u32 = 8;
const Y_TICKS: usize = 10;

/// The estimated width in pixels of `s` drawn at plotters font size
/// `size`, generously: plotters writes `font-size` as `size / 1.24`, and
/// 0.7 em a character is wider than the common sans-serif fonts' digits
/// and lower-case letters (DejaVu Sans, the widest usual default: 0.64
/// em digits). An SVG has no font metrics of its own, so this is an
/// estimate by design (plotters' own is 0.56 em, too narrow to rely on).
pub fn text_px(s: &str, size: u32) -> f64 {
    s.chars().count() as f64 * size as f64 / 1.24 * 0.7
}

/// The height of a line of text at plotters font size `size`, pixels.
fn line_px(size: u32) -> f64 {
    size as f64 / 1.24 * 1.25
}

/// The model lines' colours, in order (then again): distinct hues, each
/// with a contrast ratio of at least 3:1 against white (WCAG 2's bar for
/// graphics), which plotters' `Palette99` does not meet (its yellow is
/// 1.3:1). Okabe-Ito's blue and vermillion, then darker hues.
pub const PALETTE: [(u8, u8, u8); 9] = [
    (0x00, 0x72, 0xb2), // blue 5.2:1
    (0xd5, 0x5e, 0x00), // vermillion 3.9:1
    (0x1b, 0x78, 0x37), // green 5.5:1
    (0xc5, 0x1b, 0x7d), // magenta 5.5:1
    (0x5e, 0x3c, 0x99), // purple 8.1:1
    (0x8c, 0x56, 0x4b), // brown 5.9:1
    (0x00, 0x79, 0x6b), // teal 5.3:1
    (0x6b, 0x6b, 0x00), // olive 5.6:1
    (0xd6, 0x27, 0x28), // red 5.0:1
];

/// The reference lines' grey (4.4:1 against white).
const REFERENCE_GRAY: RGBColor = RGBColor(120, 120, 120);

/// The colour of the `i`-th model line of a panel.
fn model_color(i: usize) -> RGBColor {
    let (r, g, b) = PALETTE[i % PALETTE.len()];
    RGBColor(r, g, b)
}

/// WCAG 2 contrast ratio of an sRGB colour against white (1 to 21).
pub fn contrast_on_white((r, g, b): (u8, u8, u8)) -> f64 {
    let lin = |c: u8| {
        let c = c as f64 / 255.0;
        if c <= 0.03928 {
            c / 12.92
        } else {
            ((c + 0.055) / 1.055).powf(2.4)
        }
    };
    let l = 0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b);
    1.05 / (l + 0.05)
}

/// A point a figure leaves out of its drawing, and why.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LeftOut {
    /// The panel's title.
    pub panel: String,
    /// The series' label.
    pub series: String,
    /// The point.
    pub x: f64,
    /// The point.
    pub y: f64,
    /// The x axis counts bytes (how `x` is written).
    #[serde(skip)]
    pub x_bytes: bool,
    /// Why it is not drawn.
    pub reason: &'static str,
}

impl std::fmt::Display for LeftOut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let x = if self.x.is_finite() {
            x_label(self.x, self.x_bytes)
        } else {
            self.x.to_string()
        };
        write!(
            f,
            "{}, {}, at x = {x} (y = {}): {}",
            self.panel,
            self.series,
            if self.y.is_finite() {
                trim(self.y)
            } else {
                self.y.to_string()
            },
            self.reason
        )
    }
}

/// An x tick label: bytes in K and M of 1024 when they divide evenly,
/// other quantities as numbers with k and M of 1000.
fn x_label(v: f64, bytes: bool) -> String {
    let (k, m) = if bytes {
        (1024.0, 1048576.0)
    } else {
        (1000.0, 1e6)
    };
    let whole = |x: f64| (x - x.round()).abs() < 1e-6 * x.abs().max(1.0);
    if v.abs() >= m && whole(v / m) {
        format!("{}M", (v / m).round())
    } else if v.abs() >= k && whole(v / k) {
        format!("{}k", (v / k).round()).replace('k', if bytes { "K" } else { "k" })
    } else {
        trim(v)
    }
}

/// A number with at most three decimals and no trailing zeros.
fn trim(v: f64) -> String {
    let s = format!("{:.3}", v);
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" {
        "0".into()
    } else {
        s.to_string()
    }
}

/// Quote a CSV field that needs it.
pub fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}
