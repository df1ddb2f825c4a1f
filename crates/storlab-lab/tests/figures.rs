//! The figures' drawing: coinciding lines named in the legend, points
//! left out marked and explained, axis labels inside the drawing and
//! apart, every colour readable on white. Each test reads the SVG the
//! figure writes (`write_svg`, the file `storlab lab reproduce` writes).

use storlab_lab::figure::{Figure, Panel, Series, SeriesKind};

fn series(label: &str, kind: SeriesKind, points: &[(f64, f64)]) -> Series {
    Series {
        label: label.into(),
        kind,
        points: points.to_vec(),
    }
}

fn figure(x_log: bool, y_log: bool, y_label: &str, series: Vec<Series>) -> Figure {
    Figure {
        id: "t".into(),
        title: "a test figure".into(),
        x_label: "region (bytes)".into(),
        y_label: y_label.into(),
        x_log,
        x_bytes: true,
        y_log,
        panels: vec![Panel {
            title: "panel".into(),
            series,
        }],
    }
}

fn svg(f: &Figure) -> String {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("f.svg");
    f.write_svg(&p).unwrap();
    std::fs::read_to_string(&p).unwrap()
}

/// A `<text>` element of the SVG: its attributes and its text.
#[derive(Debug)]
struct Text {
    attrs: Vec<(String, String)>,
    text: String,
}

impl Text {
    fn attr(&self, name: &str) -> Option<&str> {
        self.attrs
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
    fn num(&self, name: &str) -> f64 {
        self.attr(name)
            .unwrap_or_else(|| panic!("{name} in {self:?}"))
            .parse()
            .unwrap()
    }
    /// Its box, estimated: 0.62 em a character (sans-serif digits and
    /// lower-case letters are 0.5-0.64 em), one em high, placed by its
    /// anchor, dy and rotation as a browser places it.
    fn bbox(&self) -> (f64, f64, f64, f64) {
        let (x, y, fs) = (self.num("x"), self.num("y"), self.num("font-size"));
        let w = self.text.chars().count() as f64 * fs * 0.62;
        let (l, r) = match self.attr("text-anchor") {
            Some("end") => (-w, 0.0),
            Some("middle") => (-w / 2.0, w / 2.0),
            _ => (0.0, w),
        };
        let (t, b) = match self.attr("dy") {
            Some("0.76em") => (0.0, fs),
            Some("-0.5ex") => (-fs, 0.0),
            _ => (-fs / 2.0, fs / 2.0),
        };
        match self.attr("transform") {
            Some(tr) if tr.starts_with("rotate(270") => (x + t, y - r, x + b, y - l),
            Some(tr) if tr.starts_with("rotate(90") => (x - b, y + l, x - t, y + r),
            _ => (x + l, y + t, x + r, y + b),
        }
    }
}

fn attrs(tag: &str) -> Vec<(String, String)> {
    let mut v = Vec::new();
    let mut rest = tag;
    while let Some(eq) = rest.find("=\"") {
        let key = rest[..eq].rsplit(' ').next().unwrap().trim().to_string();
        let after = &rest[eq + 2..];
        let end = after.find('"').unwrap();
        v.push((key, after[..end].to_string()));
        rest = &after[end + 1..];
    }
    v
}

fn unescape(s: &str) -> String {
    s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&apos;", "'")
        .replace("&amp;", "&")
}

fn texts(svg: &str) -> Vec<Text> {
    let mut v = Vec::new();
    let mut rest = svg;
    while let Some(i) = rest.find("<text ") {
        let open_end = i + rest[i..].find('>').unwrap();
        let close = open_end + rest[open_end..].find("</text>").unwrap();
        v.push(Text {
            attrs: attrs(&rest[i + 6..open_end]),
            text: unescape(rest[open_end + 1..close].trim()),
        });
        rest = &rest[close..];
    }
    v
}

fn size(svg: &str) -> (f64, f64) {
    let head = &svg[svg.find("<svg").unwrap()..];
    let a = attrs(&head[..head.find('>').unwrap()]);
    let get = |k: &str| {
        a.iter()
            .find(|(n, _)| n == k)
            .unwrap()
            .1
            .parse::<f64>()
            .unwrap()
    };
    (get("width"), get("height"))
}

/// Five entries as the NVMM figure has them: two of them drawn exactly on
/// another's line (as clflushopt on clflush, wof on clwb there).
fn msync_like() -> Figure {
    let xs: Vec<f64> = (0..8).map(|i| 16384.0 * 4f64.powi(i)).collect();
    let line = |k: f64| -> Vec<(f64, f64)> { xs.iter().map(|&x| (x, k * x / 1000.0)).collect() };
    figure(
        true,
        true,
        "µs per msync",
        vec![
            series("clflush", SeriesKind::Model, &line(1.0)),
            series("clflushopt", SeriesKind::Model, &line(1.0)),
            series("clwb", SeriesKind::Model, &line(0.5)),
            series("wof", SeriesKind::Model, &line(0.5 * 1.0005)),
            series("SPF", SeriesKind::Model, &line(0.001)),
        ],
    )
}

#[test]
fn coinciding_lines_say_so_in_the_legend() {
    let labels: Vec<String> = texts(&svg(&msync_like()))
        .into_iter()
        .map(|t| t.text)
        .collect();
    for want in [
        "clflush",
        "clflushopt (same as clflush)",
        "clwb",
        "wof (same as clwb)",
        "SPF",
    ] {
        assert!(labels.iter().any(|l| l == want), "{want} in {labels:?}");
    }
    // lines apart by more than a pixel keep their own labels
    assert_eq!(
        labels.iter().filter(|l| l.contains("(same as")).count(),
        2,
        "{labels:?}"
    );
    let f = msync_like();
    assert_eq!(
        f.same_as(&f.panels[0]),
        [None, Some(0), None, Some(2), None]
    );
    // a line 30% above another is its own
    let mut g = msync_like();
    for p in &mut g.panels[0].series[1].points {
        p.1 *= 1.3;
    }
    assert_eq!(g.same_as(&g.panels[0]), [None, None, None, Some(2), None]);
}

#[test]
fn left_out_points_are_marked_and_explained() {
    let f = figure(
        false,
        true,
        "µs",
        vec![
            series(
                "model",
                SeriesKind::Model,
                &[
                    (1.0, 10.0),
                    (2.0, f64::NAN),
                    (3.0, 30.0),
                    (4.0, 0.0),
                    (5.0, 50.0),
                ],
            ),
            series(
                "other",
                SeriesKind::Model,
                &[(1.0, 5.0), (2.0, 6.0), (3.0, 7.0)],
            ),
        ],
    );
    let left = f.left_out();
    assert_eq!(left.len(), 2, "{left:?}");
    assert_eq!((left[0].x, left[1].x), (2.0, 4.0));
    let s = svg(&f);
    let notes: Vec<String> = texts(&s)
        .into_iter()
        .map(|t| t.text)
        .filter(|t| t.contains("left out"))
        .collect();
    assert_eq!(notes.len(), 2, "{notes:?}");
    assert!(
        notes[0].contains("model")
            && notes[0].contains("x = 2")
            && notes[0].contains("not a number"),
        "{notes:?}"
    );
    assert!(
        notes[1].contains("x = 4") && notes[1].contains("logarithmic"),
        "{notes:?}"
    );
    // the y axis is not stretched down to reach the zero
    let ticks: Vec<f64> = texts(&s)
        .iter()
        .filter(|t| t.attr("text-anchor") == Some("end"))
        .filter_map(|t| t.text.parse().ok())
        .collect();
    assert!(
        ticks.iter().all(|&v| v >= 1.0),
        "y ticks reach below the data: {ticks:?}"
    );
    // and each is marked on the axis: a cross is two short strokes in
    // the line's colour
    let first_line = s.lines().find(|l| l.contains("<polyline")).expect("a line");
    let model_colour = stroke_colours(first_line)[0].clone();
    let crosses = s
        .lines()
        .filter(|l| l.contains("<line") || l.contains("<polyline") || l.contains("<path"))
        .filter(|l| l.contains(&model_colour))
        .count();
    assert!(crosses >= 3, "the line and two crosses' strokes: {crosses}");
}

#[test]
fn axis_labels_are_inside_the_drawing_and_apart() {
    let long = "completion latency per request, mean over every thread and both directions (µs)";
    for (y_log, big, y_label) in [
        (false, 1_234_567.0, "completion latency per request (µs)"),
        (true, 98_765.0, "completion latency per request (µs)"),
        (false, 0.000123, long),
    ] {
        let f = figure(
            true,
            y_log,
            y_label,
            vec![series(
                "a fairly long legend entry for a model line",
                SeriesKind::Model,
                &[(512.0, big / 3.0), (4096.0, big / 2.0), (524288.0, big)],
            )],
        );
        let s = svg(&f);
        let (w, h) = size(&s);
        let ts = texts(&s);
        let boxes: Vec<(f64, f64, f64, f64)> = ts.iter().map(Text::bbox).collect();
        for (t, b) in ts.iter().zip(&boxes) {
            assert!(
                b.0 >= -0.5 && b.1 >= -0.5 && b.2 <= w + 0.5 && b.3 <= h + 0.5,
                "{:?} clipped: {b:?} outside {w}x{h}",
                t.text
            );
        }
        // the axis descriptions clear every tick label
        for desc in [&f.x_label, &f.y_label] {
            let i = ts.iter().position(|t| &t.text == desc).expect("axis label");
            for (j, t) in ts.iter().enumerate() {
                if j == i {
                    continue;
                }
                let (a, b) = (boxes[i], boxes[j]);
                let overlap = a.0 < b.2 && b.0 < a.2 && a.1 < b.3 && b.1 < a.3;
                assert!(
                    !overlap,
                    "{desc:?} {a:?} overlaps {:?} {b:?} (y_log {y_log}, {big})",
                    t.text
                );
            }
        }
    }
}

fn stroke_colours(svg: &str) -> Vec<String> {
    let mut v: Vec<String> = Vec::new();
    let mut rest = svg;
    while let Some(i) = rest.find("stroke=\"#") {
        let c = rest[i + 8..i + 15].to_string();
        if !v.contains(&c) {
            v.push(c);
        }
        rest = &rest[i + 15..];
    }
    v
}

fn contrast(hex: &str) -> f64 {
    let c = |i: usize| u8::from_str_radix(&hex[i..i + 2], 16).unwrap();
    storlab_lab::figure::contrast_on_white((c(1), c(3), c(5)))
}

#[test]
fn every_line_colour_is_readable_on_white() {
    let lines: Vec<Series> = (0..12)
        .map(|i| {
            series(
                &format!("m{i}"),
                SeriesKind::Model,
                &[(1.0, i as f64), (2.0, 2.0 * i as f64 + 1.0)],
            )
        })
        .chain([
            series("ideal", SeriesKind::Ideal, &[(1.0, 3.0), (2.0, 40.0)]),
            series(
                "published",
                SeriesKind::Reference,
                &[(1.0, 5.0), (2.0, 30.0)],
            ),
        ])
        .collect();
    let s = svg(&figure(false, false, "y", lines));
    // every colour anything is stroked with (the mesh's grid is black at
    // a low opacity, the series their own colours)
    let colours = stroke_colours(&s);
    assert!(colours.len() >= 9, "distinct line colours: {colours:?}");
    for c in &colours {
        assert!(
            contrast(c) >= 3.0,
            "{c} has contrast {:.2} on white",
            contrast(c)
        );
    }
    for &rgb in storlab_lab::figure::PALETTE.iter() {
        assert!(
            storlab_lab::figure::contrast_on_white(rgb) >= 3.0,
            "{rgb:?}"
        );
    }
    // the ratio itself: black 21, white 1, mid grey 4.5
    assert!((storlab_lab::figure::contrast_on_white((0, 0, 0)) - 21.0).abs() < 1e-9);
    assert!((storlab_lab::figure::contrast_on_white((255, 255, 255)) - 1.0).abs() < 1e-9);
    assert!((storlab_lab::figure::contrast_on_white((118, 118, 118)) - 4.54).abs() < 0.01);
}
