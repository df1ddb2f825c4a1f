//! The HTML report: what the pages hold (tables, verdicts, figures
//! inline, devices, runs, escaping, nothing external), and that a browser
//! renders them: headless Chromium (Debian's `chromium`, which
//! `scripts/test` installs) takes a screenshot of a study's page, and the
//! table and the figure must be there in it, not a blank page.

use std::path::{Path, PathBuf};
use std::process::Command;

use storlab_lab::figure::{Figure, Panel, Series, SeriesKind, PALETTE};
use storlab_lab::html::{write_site, SiteMeta};
use storlab_lab::{studies, Reproduction, Row};

fn nvmm() -> Reproduction {
    studies::prepare("nvmm").unwrap().run(&|| {}).unwrap()
}

/// A reproduction that is not a study, with every verdict, text that
/// needs escaping and a point left out of its figure.
fn made_up() -> Reproduction {
    Reproduction {
        study: "made-up".into(),
        title: "A <made-up> study & \"its\" figures".into(),
        setting: "<script>alert('x')</script>".into(),
        class: storlab_lab::Class::Device,
        state_rule: "as <published>".into(),
        notes: vec![],
        rows: vec![
            Row::within("latency <4 KB>", 10.0, 10.0, 0.1, "µs"),
            Row::within("given", 3.0, 3.0, 0.2, "µs").input("host.syscall_entry_ns"),
            Row::within("far", 25.0, 10.0, 0.2, "µs").miss_because("no <swap> path yet"),
            Row::holds("order", "a > b", "a 1, b 2".into(), false),
        ],
        figures: vec![Figure {
            id: "made-up-fig".into(),
            title: "y against x & more".into(),
            x_label: "x".into(),
            y_label: "y".into(),
            x_log: false,
            x_bytes: false,
            y_log: false,
            panels: vec![Panel {
                title: "p".into(),
                series: vec![Series {
                    label: "m <1>".into(),
                    kind: SeriesKind::Model,
                    points: vec![(1.0, 1.0), (2.0, f64::NAN), (3.0, 3.0)],
                }],
            }],
        }],
    }
}

fn meta() -> SiteMeta {
    SiteMeta {
        command: "storlab lab reproduce nvmm --html 'out dir'".into(),
        seed: None,
        version: "0.1.0".into(),
        git: Some("v0-test".into()),
    }
}

fn count(hay: &str, needle: &str) -> usize {
    hay.matches(needle).count()
}

/// Nothing a page holds is fetched from anywhere: no script, no
/// stylesheet or image by reference, no URL but the SVG namespace.
fn assert_self_contained(page: &str, name: &str) {
    for bad in [
        "<script", "<link", "<img", "<iframe", " src=", "url(", "@import",
    ] {
        assert!(!page.contains(bad), "{name} holds {bad}");
    }
    let urls = count(page, "http://") + count(page, "https://");
    let ns = count(page, "xmlns=\"http://www.w3.org/2000/svg\"");
    assert_eq!(urls, ns, "{name}: a URL other than the SVG namespace");
}

#[test]
fn pages_hold_tables_figures_devices_and_runs() {
    let dir = tempfile::tempdir().unwrap();
    let reps = [nvmm(), made_up()];
    let written = write_site(dir.path(), &reps, &meta()).unwrap();
    let names: Vec<String> = written
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["index.html", "nvmm.html", "made-up.html"]);

    let index = std::fs::read_to_string(dir.path().join("index.html")).unwrap();
    assert_self_contained(&index, "index.html");
    assert!(index.contains("<a href=\"nvmm.html\">nvmm</a>"));
    assert!(index.contains("<a href=\"made-up.html\">made-up</a>"));
    // one line per study under the header
    let studies = &index[index.find("<table class=\"studies\">").unwrap()..];
    assert_eq!(count(studies, "<tr>"), 1 + reps.len());
    assert!(index.contains("v0-test") && index.contains("storlab lab reproduce nvmm"));

    let page = std::fs::read_to_string(dir.path().join("nvmm.html")).unwrap();
    assert_self_contained(&page, "nvmm.html");
    let rep = &reps[0];
    let table = &page[page.find("<table class=\"rows\">").unwrap()..];
    let table = &table[..table.find("</table>").unwrap()];
    assert_eq!(count(table, "<tr>"), rep.rows.len() + 1, "a row per result");
    for r in &rep.rows {
        assert!(
            table.contains(&*html_escape::encode_text(&r.what)),
            "{}",
            r.what
        );
    }
    assert_eq!(count(table, "class=\"v-ok\""), 6);
    assert_eq!(count(table, "class=\"v-input\""), 2);
    // each figure inline, as the SVG file is drawn
    assert_eq!(count(&page, "<svg "), rep.figures.len());
    assert_eq!(count(&page, "</svg>"), rep.figures.len());
    assert!(page.contains("<figure id=\"nvmm-msync\">"));
    // the devices the runs use, resolved, with sources
    for d in ["nvmm-raw", "nvmm-wof", "nvmm-opt", "hdd-7200"] {
        assert!(
            page.contains(&format!("<summary><b>{d}</b> (resolved from")),
            "{d}"
        );
    }
    assert!(page.contains("<code>media.read_ns</code>") || page.contains("<code>nvmm."));
    // how the figures were made: the command, every run as a command
    assert!(
        page.contains("storlab lab reproduce nvmm --html &#x27;out dir&#x27;")
            || page.contains("storlab lab reproduce nvmm --html 'out dir'")
    );
    let plan = studies::prepare("nvmm").unwrap().plan;
    assert_eq!(
        count(&page, "storlab sim --device "),
        plan.len(),
        "one command per run"
    );

    let page = std::fs::read_to_string(dir.path().join("made-up.html")).unwrap();
    assert_self_contained(&page, "made-up.html");
    assert!(page.contains("&lt;script&gt;alert('x')&lt;/script&gt;"));
    assert!(page.contains("A &lt;made-up&gt; study &amp; \"its\" figures"));
    assert!(page.contains("<td class=\"v-fail\">FAIL</td>"));
    assert!(page.contains("<td class=\"v-known\">MISS (known: no &lt;swap&gt; path yet)</td>"));
    assert!(page.contains("class=\"v-input\">input<br><small>input: host.syscall_entry_ns</small>"));
    assert!(
        page.contains("not one of the lab's studies")
            || page.contains("Not one of the lab's studies")
    );
    // the point left out is in the caption
    let cap = &page[page.find("<figcaption>").unwrap()..];
    assert!(
        cap.contains("left out") && cap.contains("m &lt;1&gt;") && cap.contains("x = 2"),
        "{cap}"
    );
}

/// Debian's chromium, or the browser `STORLAB_CHROMIUM` names.
fn chromium() -> PathBuf {
    if let Some(p) = std::env::var_os("STORLAB_CHROMIUM") {
        return PathBuf::from(p);
    }
    for name in ["chromium", "chromium-browser"] {
        if let Ok(out) = Command::new("sh")
            .args(["-c", &format!("command -v {name}")])
            .output()
        {
            let p = String::from_utf8_lossy(&out.stdout).trim().to_string();
            if out.status.success() && !p.is_empty() {
                return PathBuf::from(p);
            }
        }
    }
    panic!(
        "this test needs headless Chromium and found none on PATH: install Debian's package \
         (`apt-get install chromium`; ./scripts/test does), or set STORLAB_CHROMIUM to the browser"
    );
}

fn screenshot(page: &Path, out: &Path, profile: &Path) {
    let browser = chromium();
    let url = format!("file://{}", page.display());
    let mut child = Command::new(&browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--no-first-run",
            "--force-device-scale-factor=1",
            &format!("--user-data-dir={}", profile.display()),
            &format!("--screenshot={}", out.display()),
            "--window-size=1200,2000",
            &url,
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("running {}: {e}", browser.display()));
    // a browser that hangs fails this test rather than hanging the suite
    let start = std::time::Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > std::time::Duration::from_secs(120) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{} took over 120 s for one screenshot", browser.display());
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    assert!(
        status.success(),
        "{} exited with {status}",
        browser.display()
    );
    assert!(out.exists(), "no screenshot at {}", out.display());
}

/// The screenshot as rows of RGB pixels.
fn decode(path: &Path) -> (usize, usize, Vec<[u8; 3]>) {
    let dec = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(path).unwrap()));
    let mut reader = dec.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    let channels = info.color_type.samples();
    assert_eq!(info.bit_depth, png::BitDepth::Eight);
    let px = buf[..info.buffer_size()]
        .chunks(channels)
        .map(|c| {
            if channels >= 3 {
                [c[0], c[1], c[2]]
            } else {
                [c[0], c[0], c[0]]
            }
        })
        .collect();
    (info.width as usize, info.height as usize, px)
}

fn near(a: [u8; 3], b: (u8, u8, u8), tol: i32) -> bool {
    (a[0] as i32 - b.0 as i32).abs() <= tol
        && (a[1] as i32 - b.1 as i32).abs() <= tol
        && (a[2] as i32 - b.2 as i32).abs() <= tol
}

/// The first and last row holding at least `min` pixels that `is` picks.
fn band(
    w: usize,
    h: usize,
    px: &[[u8; 3]],
    min: usize,
    is: impl Fn([u8; 3]) -> bool,
) -> Option<(usize, usize)> {
    let rows: Vec<usize> = (0..h)
        .filter(|&y| px[y * w..(y + 1) * w].iter().filter(|&&p| is(p)).count() >= min)
        .collect();
    Some((*rows.first()?, *rows.last()?))
}

fn non_white(w: usize, px: &[[u8; 3]], (top, bottom): (usize, usize)) -> usize {
    px[top * w..(bottom + 1) * w]
        .iter()
        .filter(|p| p.iter().any(|&c| c < 235))
        .count()
}

#[test]
fn chromium_renders_the_tables_and_figures() {
    let dir = tempfile::tempdir().unwrap();
    let reps = [nvmm()];
    write_site(dir.path(), &reps, &meta()).unwrap();
    let shot = dir.path().join("nvmm.png");
    let profile = dir.path().join("profile");
    screenshot(&dir.path().join("nvmm.html"), &shot, &profile);
    let (w, h, px) = decode(&shot);
    assert_eq!((w, h), (1200, 2000), "the window's size");
    // the table: rows of the verdict cells' colours (ok, input, MISS
    // (known), FAIL: the page's style)
    let verdicts = [
        (0xcd, 0xec, 0xcd),
        (0xd9, 0xe2, 0xf5),
        (0xfd, 0xe9, 0xb0),
        (0xf5, 0xb8, 0xb8),
    ];
    let table = band(w, h, &px, 40, |p| verdicts.iter().any(|&c| near(p, c, 2)))
        .expect("no table in the screenshot: no row of the verdict colour (a blank page?)");
    assert!(
        table.1 - table.0 >= 6 * 16,
        "the table's verdict cells span only rows {table:?}"
    );
    let ink = non_white(w, &px, table);
    assert!(
        ink >= (table.1 - table.0) * w / 10,
        "the table region {table:?} is nearly blank: {ink} pixels not white"
    );
    // the figure: its lines in the palette's colours
    let figure = band(w, h, &px, 2, |p| PALETTE.iter().any(|&c| near(p, c, 12)))
        .expect("no figure in the screenshot: no pixel of a line colour");
    assert!(
        figure.0 > table.1,
        "the figure {figure:?} is not below the table {table:?}"
    );
    assert!(
        figure.1 - figure.0 >= 150,
        "the figure's lines span only rows {figure:?}"
    );
    let ink = non_white(w, &px, figure);
    assert!(
        ink >= (figure.1 - figure.0) * w / 20,
        "the figure region {figure:?} is nearly blank: {ink} pixels not white"
    );
    // and below the page's content, the window is white
    let last_rows = non_white(w, &px, (h - 50, h - 1));
    assert!(last_rows < w, "{last_rows} pixels not white at the bottom");
}
