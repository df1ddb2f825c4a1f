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

    fn bounds(&self) -> ((f64, f64), (f64, f64)) {
        let pts = || {
            self.panels
                .iter()
                .flat_map(|p| p.series.iter())
                .flat_map(|s| s.points.iter())
                .filter(|(x, y)| x.is_finite() && y.is_finite())
        };
        let (mut x0, mut x1, mut y0, mut y1) = (f64::MAX, f64::MIN, f64::MAX, f64::MIN);
        for &(x, y) in pts() {
            x0 = x0.min(x);
            x1 = x1.max(x);
            y0 = y0.min(y);
            y1 = y1.max(y);
        }
        if x0 > x1 {
            return ((0.0, 1.0), (0.0, 1.0));
        }
        let x = if x0 == x1 {
            (x0 - 1.0, x1 + 1.0)
        } else {
            (x0, x1)
        };
        let y = if self.y_log {
            (y0.max(1e-12) / 1.5, y1 * 1.5)
        } else {
            (y0.min(0.0), if y1 > 0.0 { y1 * 1.1 } else { 1.0 })
        };
        (x, y)
    }

    /// Draw the figure as SVG at `path`.
    pub fn write_svg(&self, path: &Path) -> Result<()> {
        let err = |e: &dyn std::fmt::Display| LabError::Plot {
            path: path.to_path_buf(),
            message: e.to_string(),
        };
        let n = self.panels.len().max(1) as u32;
        let root = SVGBackend::new(path, ((420 * n).max(640), 400)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| err(&e))?;
        let root = root
            .titled(&self.title, ("sans-serif", 18))
            .map_err(|e| err(&e))?;
        let (xr, yr) = self.bounds();
        for (panel, area) in self.panels.iter().zip(root.split_evenly((1, n as usize))) {
            let mut b = ChartBuilder::on(&area);
            b.caption(&panel.title, ("sans-serif", 15))
                .margin(8)
                .x_label_area_size(38)
                .y_label_area_size(52);
            // a logarithmic x axis is drawn as log2(x) on a linear one, so
            // its ticks fall on powers of two (512, 4K, 64K) rather than ten
            let xr = if self.x_log {
                (xr.0.log2(), xr.1.log2())
            } else {
                xr
            };
            // plotters' coordinate types differ by scale: one arm each
            if self.y_log {
                let c = b
                    .build_cartesian_2d(xr.0..xr.1, (yr.0..yr.1).log_scale())
                    .map_err(|e| err(&e))?;
                self.draw_panel(c, panel).map_err(|e| err(&e))?
            } else {
                let c = b
                    .build_cartesian_2d(xr.0..xr.1, yr.0..yr.1)
                    .map_err(|e| err(&e))?;
                self.draw_panel(c, panel).map_err(|e| err(&e))?
            }
        }
        root.present().map_err(|e| err(&e))?;
        Ok(())
    }

    fn draw_panel<'a, Y>(
        &self,
        mut chart: ChartContext<'a, SVGBackend<'a>, Cartesian2d<RangedCoordf64, Y>>,
        panel: &Panel,
    ) -> std::result::Result<(), DrawingAreaErrorKind<std::io::Error>>
    where
        Y: Ranged<ValueType = f64> + ValueFormatter<f64>,
    {
        let x_fmt = |v: &f64| {
            if self.x_log {
                x_label(2f64.powf(*v), self.x_bytes)
            } else {
                x_label(*v, self.x_bytes)
            }
        };
        let y_fmt = |v: &f64| {
            if self.y_log && v.abs() < 0.01 && *v != 0.0 {
                format!("{v:.0e}")
            } else {
                trim(*v)
            }
        };
        // a log2 x axis: one tick per power of two when they fit
        let x_ticks = if self.x_log {
            let r = chart.x_range();
            let (a, b) = (r.start, r.end);
            ((b - a).round() as usize + 1).clamp(2, 12)
        } else {
            10
        };
        chart
            .configure_mesh()
            .x_desc(self.x_label.as_str())
            .y_desc(self.y_label.as_str())
            .x_labels(x_ticks)
            .x_label_formatter(&x_fmt)
            .y_label_formatter(&y_fmt)
            .draw()?;
        let mut model = 0;
        for s in &panel.series {
            let color = match s.kind {
                SeriesKind::Model => {
                    model += 1;
                    Palette99::pick(model - 1).to_rgba()
                }
                SeriesKind::Ideal => BLACK.to_rgba(),
                SeriesKind::Reference => RGBColor(120, 120, 120).to_rgba(),
            };
            let style = ShapeStyle::from(color).stroke_width(2);
            let pts: Vec<(f64, f64)> = if self.x_log {
                s.points.iter().map(|&(x, y)| (x.log2(), y)).collect()
            } else {
                s.points.clone()
            };
            let drawn = if s.kind == SeriesKind::Model {
                chart.draw_series(LineSeries::new(pts.clone(), style))?;
                chart.draw_series(pts.into_iter().map(|p| Circle::new(p, 3, style.filled())))?
            } else {
                chart.draw_series(DashedLineSeries::new(pts, 8, 5, style))?
            };
            drawn
                .label(s.label.as_str())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], style));
        }
        chart
            .configure_series_labels()
            .position(self.legend_corner(panel))
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .label_font(("sans-serif", 11))
            .draw()?;
        Ok(())
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
