//! The rows as hand-written SVG bar charts, one file per scenario.
//!
//! A scenario is a row whose name does not start with "…" and the "…"
//! rows after it; its chart stacks one panel per row (small multiples),
//! each a horizontal bar per library on a scale from zero to the row's
//! largest median. lockgate's drivers, the peers and the floor column
//! have a colour each; a library without a number is a labelled gap,
//! never a zero bar. The text is escaped and the numbers printed with a
//! fixed precision, so the same rows give the same bytes.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::{Better, Lib, Row, num};

/// The drawing's width, in viewBox units.
const WIDTH: f64 = 820.0;
/// Where the bars start: the library names sit left of it.
const BAR_X: f64 = 150.0;
/// The longest bar: room is left right of it for the value label.
const BAR_MAX: f64 = 440.0;
/// A bar's height and the distance from one bar to the next.
const BAR_H: f64 = 16.0;
const BAR_STEP: f64 = 21.0;
/// Above a panel's bars: its title and its subtitle line.
const PANEL_HEAD: f64 = 44.0;
/// Below a panel's bars.
const PANEL_GAP: f64 = 18.0;
/// Above the first panel: the legend.
const TOP: f64 = 30.0;

const FONT: &str = "DejaVu Sans, Helvetica, Arial, sans-serif";
const INK: &str = "#212529";
const MUTED: &str = "#6c757d";

/// Who a bar belongs to, which sets its colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    /// lockgate or tokio-lockgate.
    Ours,
    /// Another library.
    Peer,
    /// The raw-TCP / floor column: a reference, not a contender.
    Floor,
}

impl Side {
    fn of(lib: Lib) -> Side {
        match lib {
            Lib::Raw => Side::Floor,
            lib if lib.is_peer() => Side::Peer,
            _ => Side::Ours,
        }
    }

    fn fill(self) -> &'static str {
        match self {
            Side::Ours => "#e8590c",
            Side::Peer => "#4263eb",
            Side::Floor => "#adb5bd",
        }
    }
}

/// One library's bar in a panel.
#[derive(Debug, Clone, PartialEq)]
struct Bar {
    lib: Lib,
    /// The median, or `None` when the library has no number here.
    value: Option<f64>,
    /// Length in viewBox units: proportional to `value`, 0 without one.
    width: f64,
    /// Among the best libraries of the row (the floor never is).
    best: bool,
}

/// The bars of `row` over the columns `cols`, in column order.
fn bars(row: &Row, cols: &[Lib]) -> Vec<Bar> {
    let values: Vec<(Lib, Option<f64>)> = cols.iter().map(|&l| (l, row.median(l))).collect();
    let max = values
        .iter()
        .filter_map(|&(_, v)| v)
        .fold(0.0_f64, f64::max);
    let best = best(row, cols);
    values
        .into_iter()
        .map(|(lib, value)| {
            // Equal as printed: two labels that read the same are both
            // marked, whatever digits the medians differ in.
            let is_best = Side::of(lib) != Side::Floor
                && matches!((value, best), (Some(v), Some(b)) if num(v) == num(b));
            let width = match value {
                Some(v) if max > 0.0 && v > 0.0 => v / max * BAR_MAX,
                _ => 0.0,
            };
            Bar {
                lib,
                value,
                width,
                best: is_best,
            }
        })
        .collect()
}

/// The best median among the libraries of `cols`, by the row's
/// direction; the floor column is a reference, not a contender. Every
/// library whose median prints the same is the best: a tie has no winner
/// by column order.
fn best(row: &Row, cols: &[Lib]) -> Option<f64> {
    cols.iter()
        .filter(|&&l| Side::of(l) != Side::Floor)
        .filter_map(|&l| row.median(l))
        .reduce(|a, b| match row.better {
            Better::Lower => a.min(b),
            Better::Higher => a.max(b),
        })
}

/// One chart: an SVG document and where it goes.
#[derive(Debug)]
pub(crate) struct Chart {
    /// File name, from the scenario's name without its counts, so that
    /// quick and full runs name a scenario alike.
    pub(crate) file: String,
    /// The scenario's name, for the image's alt text.
    pub(crate) title: String,
    /// The SVG document.
    pub(crate) svg: String,
}

/// One chart per scenario of `rows` over the columns `cols`. `taken`
/// holds the file names already given out (by another table's charts);
/// a clash gets a numbered suffix.
pub(crate) fn charts(rows: &[Row], cols: &[Lib], taken: &mut BTreeSet<String>) -> Vec<Chart> {
    let mut groups: Vec<&[Row]> = Vec::new();
    let mut start = 0;
    for i in 1..=rows.len() {
        if i == rows.len() || !rows[i].name.starts_with('…') {
            if start < i {
                groups.push(&rows[start..i]);
            }
            start = i;
        }
    }
    groups
        .into_iter()
        .map(|g| {
            let base = slug(&g[0].name);
            let mut file = format!("{base}.svg");
            let mut n = 2;
            while taken.contains(&file) {
                file = format!("{base}-{n}.svg");
                n += 1;
            }
            taken.insert(file.clone());
            Chart {
                file,
                title: g[0].name.clone(),
                svg: svg(g, cols),
            }
        })
        .collect()
}

/// The charts' directory as the report links it: relative to the
/// report's own directory (`out`'s parent) when it lies inside it, as
/// given otherwise.
pub(crate) fn link_dir(svg: &Path, out: Option<&Path>) -> PathBuf {
    out.and_then(Path::parent)
        .and_then(|base| svg.strip_prefix(base).ok())
        .unwrap_or(svg)
        .to_path_buf()
}

/// The markdown paragraph that shows `chart`, stored in `dir`.
pub(crate) fn image_link(chart: &Chart, dir: &Path) -> String {
    // Markdown ends the alt text at `]` and the link at a space.
    let alt = chart.title.replace('[', "(").replace(']', ")");
    let href = dir.join(&chart.file).to_string_lossy().replace(' ', "%20");
    format!("![{alt}]({href})\n\n")
}

/// A file name stem from a row name: lower-case words joined by `-`,
/// sizes kept (`64 B` → `64b`), counts dropped (`100k`, `1 flush`), since
/// the counts differ between quick and full runs.
fn slug(name: &str) -> String {
    const UNITS: [&str; 4] = ["b", "kib", "mib", "gib"];
    let words: Vec<String> = name
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_ascii_lowercase)
        .collect();
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < words.len() {
        let w = &words[i];
        if w.starts_with(|c: char| c.is_ascii_digit()) {
            match words.get(i + 1) {
                Some(u) if UNITS.contains(&u.as_str()) => {
                    out.push(format!("{w}{u}"));
                    i += 1;
                }
                _ => {}
            }
        } else {
            out.push(w.clone());
        }
        i += 1;
    }
    if out.is_empty() {
        "row".into()
    } else {
        out.join("-")
    }
}

/// Escapes text for an XML text node or a double-quoted attribute.
fn escape(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&apos;"),
            c => o.push(c),
        }
    }
    o
}

/// The SVG document of one scenario: a legend, then a panel per row.
fn svg(rows: &[Row], cols: &[Lib]) -> String {
    let panel_h = PANEL_HEAD + BAR_STEP * cols.len() as f64 + PANEL_GAP;
    let height = TOP + panel_h * rows.len() as f64;
    let mut s = String::new();
    let title = escape(&rows[0].name);
    let _ = writeln!(
        s,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {WIDTH:.0} {height:.0}\" \
         width=\"{WIDTH:.0}\" height=\"{height:.0}\" role=\"img\" aria-label=\"{title}\" \
         font-family=\"{FONT}\" font-size=\"12\" fill=\"{INK}\">"
    );
    let _ = writeln!(s, "<title>{title}</title>");
    let _ = writeln!(
        s,
        "<rect x=\"0\" y=\"0\" width=\"{WIDTH:.0}\" height=\"{height:.0}\" fill=\"#ffffff\"/>"
    );
    legend(&mut s, cols);
    for (i, row) in rows.iter().enumerate() {
        panel(&mut s, row, cols, TOP + panel_h * i as f64);
    }
    s.push_str("</svg>\n");
    s
}

/// The colour key, on one line at the top; only the sides `cols` has.
fn legend(s: &mut String, cols: &[Lib]) {
    let mut x = 10.0;
    for (side, label) in [
        (Side::Ours, "lockgate's drivers"),
        (Side::Peer, "other libraries"),
        (Side::Floor, "raw TCP / floor (reference)"),
    ] {
        if !cols.iter().any(|&l| Side::of(l) == side) {
            continue;
        }
        let _ = writeln!(
            s,
            "<rect x=\"{x:.1}\" y=\"10\" width=\"12\" height=\"12\" fill=\"{}\"/>\
             <text x=\"{:.1}\" y=\"20\">{}</text>",
            side.fill(),
            x + 16.0,
            escape(label)
        );
        // About 7 units per character at this font size.
        x += 16.0 + 7.0 * label.chars().count() as f64 + 20.0;
    }
}

/// One row's panel, its top at `y0`: the row's name, its unit and
/// direction and lockgate's ratios to the best peer, then the bars.
fn panel(s: &mut String, row: &Row, cols: &[Lib], y0: f64) {
    let _ = writeln!(
        s,
        "<text x=\"10\" y=\"{:.1}\" font-size=\"13\" font-weight=\"bold\">{}</text>",
        y0 + 16.0,
        escape(&row.name)
    );
    let direction = match row.better {
        Better::Lower => "lower is better",
        Better::Higher => "higher is better",
    };
    let mut sub = format!("{}, {direction}", row.unit);
    if let Some((peer, _)) = row.best_peer() {
        let _ = write!(sub, "; best peer {}", peer.name());
        for &ours in cols.iter().filter(|&&l| Side::of(l) == Side::Ours) {
            if row.median(ours).is_some() {
                let _ = write!(sub, "; {} ÷ best peer {}", ours.name(), row.ratio(ours));
            }
        }
    }
    let _ = writeln!(
        s,
        "<text x=\"10\" y=\"{:.1}\" fill=\"{MUTED}\">{}</text>",
        y0 + 34.0,
        escape(&sub)
    );
    for (i, bar) in bars(row, cols).iter().enumerate() {
        let y = y0 + PANEL_HEAD + BAR_STEP * i as f64;
        let mid = y + BAR_H / 2.0 + 4.0;
        let _ = writeln!(
            s,
            "<text x=\"{:.1}\" y=\"{mid:.1}\" text-anchor=\"end\">{}</text>",
            BAR_X - 8.0,
            escape(bar.lib.name())
        );
        match bar.value {
            Some(v) => {
                let _ = writeln!(
                    s,
                    "<rect x=\"{BAR_X:.1}\" y=\"{y:.1}\" width=\"{:.1}\" height=\"{BAR_H:.1}\" \
                     fill=\"{}\"/>",
                    bar.width,
                    Side::of(bar.lib).fill()
                );
                let label = format!(
                    "{} {}{}",
                    num(v),
                    row.unit,
                    if bar.best { " (best)" } else { "" }
                );
                let weight = if bar.best {
                    " font-weight=\"bold\""
                } else {
                    ""
                };
                let _ = writeln!(
                    s,
                    "<text x=\"{:.1}\" y=\"{mid:.1}\"{weight}>{}</text>",
                    BAR_X + bar.width + 6.0,
                    escape(&label)
                );
            }
            None => {
                let why = format!(
                    "no number: {}",
                    row.notes.get(&bar.lib).copied().unwrap_or("not run")
                );
                // A dashed outline around the label only: a full-length
                // one would read as a large value.
                let w = 12.0 + 6.6 * why.chars().count() as f64;
                let _ = writeln!(
                    s,
                    "<rect x=\"{BAR_X:.1}\" y=\"{y:.1}\" width=\"{w:.1}\" \
                     height=\"{BAR_H:.1}\" fill=\"none\" stroke=\"{MUTED}\" \
                     stroke-dasharray=\"3 3\"/>\
                     <text x=\"{:.1}\" y=\"{mid:.1}\" fill=\"{MUTED}\" \
                     font-style=\"italic\">{}</text>",
                    BAR_X + 6.0,
                    escape(&why)
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A row with one sample per (library, value).
    fn row(name: &str, better: Better, values: &[(Lib, f64)]) -> Row {
        let mut r = Row::new(name, "ns/msg", better);
        for &(l, v) in values {
            r.push(l, v);
        }
        r
    }

    /// Checks that `doc` is well-formed XML as far as an SVG writer can
    /// get it wrong: tags nest and close, attribute values are quoted, and
    /// every `&` starts one of the five predefined entities.
    fn assert_well_formed(doc: &str) {
        let mut open: Vec<&str> = Vec::new();
        let mut rest = doc;
        while let Some(lt) = rest.find('<') {
            check_text(&rest[..lt]);
            let gt = rest[lt..].find('>').expect("an unclosed tag") + lt;
            let tag = &rest[lt + 1..gt];
            rest = &rest[gt + 1..];
            if let Some(name) = tag.strip_prefix('/') {
                assert_eq!(open.pop(), Some(name.trim()), "mismatched </{name}>");
                continue;
            }
            let self_closing = tag.ends_with('/');
            let body = tag.trim_end_matches('/');
            let name = body.split_whitespace().next().expect("a tag name");
            check_attributes(&body[name.len()..]);
            if !self_closing {
                open.push(name);
            }
        }
        check_text(rest);
        assert!(open.is_empty(), "unclosed elements {open:?}");
        assert!(doc.starts_with("<svg "), "one root element");
    }

    fn check_text(t: &str) {
        assert!(!t.contains('>'), "raw > in text {t:?}");
        let mut parts = t.split('&');
        parts.next();
        for p in parts {
            assert!(
                ["amp;", "lt;", "gt;", "quot;", "apos;"]
                    .iter()
                    .any(|e| p.starts_with(e)),
                "a bare & in {t:?}"
            );
        }
    }

    fn check_attributes(mut a: &str) {
        loop {
            a = a.trim_start();
            if a.is_empty() {
                return;
            }
            let eq = a.find('=').expect("an attribute without a value");
            let name = &a[..eq];
            assert!(
                !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'),
                "attribute name {name:?}"
            );
            let v = a[eq + 1..].strip_prefix('"').expect("an unquoted value");
            let end = v.find('"').expect("an unterminated value");
            check_text(&v[..end]);
            a = &v[end + 1..];
        }
    }

    #[test]
    fn a_missing_value_is_a_labelled_gap_in_a_well_formed_document() {
        let mut r = row(
            "read 100k masked small texts, server",
            Better::Lower,
            &[
                (Lib::Lockgate, 50.0),
                (Lib::Tungstenite, 80.0),
                (Lib::Raw, 5.0),
            ],
        );
        r.not_run(Lib::Yawc, "n/a (no UTF-8 check)");
        let cols = [Lib::Lockgate, Lib::Tungstenite, Lib::Yawc, Lib::Raw];
        let b = bars(&r, &cols);
        assert_eq!((b[2].value, b[2].width), (None, 0.0));
        let chart = &charts(&[r], &cols, &mut BTreeSet::new())[0];
        assert_well_formed(&chart.svg);
        assert!(chart.svg.contains("no number: n/a (no UTF-8 check)"));
        // Three bars and the gap's dashed outline, not a fourth bar.
        assert_eq!(chart.svg.matches("stroke-dasharray").count(), 1);
        // A library with neither a number nor a note is a gap too.
        let r = row("x", Better::Lower, &[(Lib::Lockgate, 1.0)]);
        let svg = svg(&[r], &[Lib::Lockgate, Lib::Yawc]);
        assert_well_formed(&svg);
        assert!(svg.contains("no number: not run"));
    }

    #[test]
    fn names_with_markup_characters_are_escaped() {
        let mut r = row(
            "a <b> & \"c\"",
            Better::Higher,
            &[(Lib::Lockgate, 1.0), (Lib::Yawc, 2.0)],
        );
        r.not_run(Lib::Fastwebsockets, "can't <do> & won't");
        let rows = [r, row("… <&>", Better::Lower, &[(Lib::Lockgate, 3.0)])];
        let cols = [Lib::Lockgate, Lib::Fastwebsockets, Lib::Yawc];
        let chart = &charts(&rows, &cols, &mut BTreeSet::new())[0];
        assert_well_formed(&chart.svg);
        assert!(chart.svg.contains("a &lt;b&gt; &amp; &quot;c&quot;"));
        assert!(chart.svg.contains("can&apos;t &lt;do&gt; &amp; won&apos;t"));
        assert!(chart.svg.contains(">… &lt;&amp;&gt;</text>"));
        assert_eq!(chart.file, "a-b-c.svg");
    }

    #[test]
    fn bars_are_proportional_to_the_values() {
        let r = row(
            "x",
            Better::Higher,
            &[
                (Lib::Lockgate, 10.0),
                (Lib::Tungstenite, 40.0),
                (Lib::Yawc, 20.0),
                (Lib::Raw, 0.0),
            ],
        );
        let b = bars(&r, &[Lib::Lockgate, Lib::Tungstenite, Lib::Yawc, Lib::Raw]);
        let widths: Vec<f64> = b.iter().map(|b| b.width).collect();
        assert_eq!(widths, [BAR_MAX / 4.0, BAR_MAX, BAR_MAX / 2.0, 0.0]);
        // A real zero is a bar of no length, with its value printed.
        assert_eq!(b[3].value, Some(0.0));
        let svg = svg(&[r], &[Lib::Lockgate, Lib::Tungstenite]);
        assert!(svg.contains(&format!("width=\"{:.1}\"", BAR_MAX / 4.0)));
    }

    #[test]
    fn the_best_library_follows_the_row_direction() {
        let values = [
            (Lib::Lockgate, 30.0),
            (Lib::Tungstenite, 10.0),
            (Lib::Yawc, 20.0),
            (Lib::Raw, 1.0),
        ];
        let cols = [Lib::Lockgate, Lib::Tungstenite, Lib::Yawc, Lib::Raw];
        let best_of = |better| {
            bars(&row("x", better, &values), &cols)
                .into_iter()
                .filter(|b| b.best)
                .map(|b| b.lib)
                .collect::<Vec<_>>()
        };
        // The floor is smaller still but is a reference, not a library.
        assert_eq!(best_of(Better::Lower), [Lib::Tungstenite]);
        assert_eq!(best_of(Better::Higher), [Lib::Lockgate]);
        // Equal medians are all the best, whatever their column order.
        let tied = row(
            "x",
            Better::Lower,
            &[
                (Lib::Lockgate, 2.0),
                (Lib::Tungstenite, 1.0),
                (Lib::Yawc, 1.0),
            ],
        );
        let b = bars(&tied, &cols);
        let best: Vec<Lib> = b.iter().filter(|b| b.best).map(|b| b.lib).collect();
        assert_eq!(best, [Lib::Tungstenite, Lib::Yawc]);
        // So are medians that print alike (0.302 B/B and 0.3021 B/B).
        let close = row(
            "x",
            Better::Lower,
            &[
                (Lib::Lockgate, 0.3021),
                (Lib::Tungstenite, 0.302),
                (Lib::Yawc, 0.31),
            ],
        );
        let b = bars(&close, &cols);
        let best: Vec<Lib> = b.iter().filter(|b| b.best).map(|b| b.lib).collect();
        assert_eq!(best, [Lib::Lockgate, Lib::Tungstenite]);
        let svg = svg(&[row("x", Better::Lower, &values)], &cols);
        assert!(svg.contains("10.0 ns/msg (best)"));
        assert!(svg.contains("lower is better"));
    }

    #[test]
    fn file_names_drop_counts_keep_sizes_and_never_clash() {
        assert_eq!(
            slug("TCP one-way 1000k × 64 B, write all + 1 flush"),
            "tcp-one-way-64b-write-all-flush"
        );
        assert_eq!(
            slug("TCP one-way 20k × 64 B, write all + 1 flush"),
            "tcp-one-way-64b-write-all-flush"
        );
        assert_eq!(
            slug("read 64 × 1 MiB masked binary, server"),
            "read-1mib-masked-binary-server"
        );
        let rows = [
            row("same 1k", Better::Lower, &[]),
            row("… sub", Better::Lower, &[]),
            row("same 2k", Better::Lower, &[]),
        ];
        let mut taken = BTreeSet::from(["same-2.svg".to_string()]);
        let files: Vec<String> = charts(&rows, &[Lib::Lockgate], &mut taken)
            .into_iter()
            .map(|c| c.file)
            .collect();
        assert_eq!(files, ["same.svg", "same-3.svg"]);
    }

    #[test]
    fn the_report_links_charts_relative_to_its_own_directory() {
        let link = |svg: &str, out: Option<&str>| {
            link_dir(Path::new(svg), out.map(Path::new))
                .to_string_lossy()
                .into_owned()
        };
        assert_eq!(link("/tmp/peers-svg", Some("/tmp/peers.md")), "peers-svg");
        assert_eq!(link("charts", Some("BENCHMARKS.md")), "charts");
        assert_eq!(link("/elsewhere/c", Some("/tmp/peers.md")), "/elsewhere/c");
        assert_eq!(link("/tmp/c", None), "/tmp/c");
        let chart = Chart {
            file: "x.svg".into(),
            title: "a [b] c".into(),
            svg: String::new(),
        };
        assert_eq!(
            image_link(&chart, Path::new("my charts")),
            "![a (b) c](my%20charts/x.svg)\n\n"
        );
    }

    #[test]
    fn the_same_rows_give_the_same_bytes() {
        let make = || {
            let mut r = row(
                "x",
                Better::Lower,
                &[(Lib::Lockgate, 1.5), (Lib::Yawc, 2.5)],
            );
            r.push(Lib::Lockgate, 1.25);
            r
        };
        let cols = [Lib::Lockgate, Lib::Yawc];
        assert_eq!(svg(&[make()], &cols), svg(&[make()], &cols));
    }
}
