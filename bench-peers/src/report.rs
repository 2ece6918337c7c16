//! Collected samples and the markdown table.

use std::collections::BTreeMap;
use std::fmt::Write as _;

/// A column of the report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Lib {
    /// lockgate's blocking `WebSocket<S>`.
    Lockgate,
    /// tokio-lockgate's `WebSocketStream<S>`.
    TokioLockgate,
    /// uring-lockgate's `WebSocketStream` (io_uring; the scale scenario
    /// only).
    UringLockgate,
    /// tungstenite's blocking `WebSocket<S>`.
    Tungstenite,
    /// tokio-tungstenite.
    TokioTungstenite,
    /// fastwebsockets.
    Fastwebsockets,
    /// tokio-websockets.
    TokioWebsockets,
    /// sockudo-ws.
    SockudoWs,
    /// yawc.
    Yawc,
    /// Raw TCP (TCP rows), the mock's copy alone (read rows) or the
    /// bare-socket floor (memory rows).
    Raw,
}

impl Lib {
    /// The libraries, in column order.
    pub(crate) const LIBS: [Lib; 8] = [
        Lib::Lockgate,
        Lib::TokioLockgate,
        Lib::Tungstenite,
        Lib::TokioTungstenite,
        Lib::Fastwebsockets,
        Lib::TokioWebsockets,
        Lib::SockudoWs,
        Lib::Yawc,
    ];

    /// The libraries and then the raw-TCP / floor column: what a row with
    /// a floor runs.
    pub(crate) const WITH_FLOOR: [Lib; 9] = [
        Lib::Lockgate,
        Lib::TokioLockgate,
        Lib::Tungstenite,
        Lib::TokioTungstenite,
        Lib::Fastwebsockets,
        Lib::TokioWebsockets,
        Lib::SockudoWs,
        Lib::Yawc,
        Lib::Raw,
    ];

    /// Column heading / name in messages.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Lib::Lockgate => "lockgate",
            Lib::TokioLockgate => "tokio-lockgate",
            Lib::UringLockgate => "uring-lockgate",
            Lib::Tungstenite => "tungstenite",
            Lib::TokioTungstenite => "tokio-tungstenite",
            Lib::Fastwebsockets => "fastwebsockets",
            Lib::TokioWebsockets => "tokio-websockets",
            Lib::SockudoWs => "sockudo-ws",
            Lib::Yawc => "yawc",
            Lib::Raw => "raw TCP / floor",
        }
    }

    /// The column of a library named as the memory children are (`floor`
    /// is the bare-socket floor, in the raw column).
    pub(crate) fn column(name: &str) -> Lib {
        if name == "floor" {
            return Lib::Raw;
        }
        Lib::LIBS
            .into_iter()
            .find(|l| l.name() == name)
            .unwrap_or_else(|| unreachable!("no column for library {name}"))
    }

    pub(crate) fn is_peer(self) -> bool {
        matches!(
            self,
            Lib::Tungstenite
                | Lib::TokioTungstenite
                | Lib::Fastwebsockets
                | Lib::TokioWebsockets
                | Lib::SockudoWs
                | Lib::Yawc
        )
    }
}

/// Which way is better for a row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Better {
    /// Smaller numbers win (time, memory, syscalls).
    Lower,
    /// Larger numbers win (throughput).
    Higher,
}

/// One row: a scenario and its samples per library.
#[derive(Debug)]
pub(crate) struct Row {
    /// Scenario description.
    pub(crate) name: String,
    /// Unit of the numbers.
    pub(crate) unit: &'static str,
    /// Direction.
    pub(crate) better: Better,
    samples: BTreeMap<Lib, Vec<f64>>,
    /// Why a library has no number in this row, printed in its cell.
    notes: BTreeMap<Lib, &'static str>,
}

impl Row {
    /// An empty row.
    pub(crate) fn new(name: impl Into<String>, unit: &'static str, better: Better) -> Self {
        Self {
            name: name.into(),
            unit,
            better,
            samples: BTreeMap::new(),
            notes: BTreeMap::new(),
        }
    }

    /// Marks `lib` as not run in this row, with `why` in its cell.
    pub(crate) fn not_run(&mut self, lib: Lib, why: &'static str) {
        self.notes.insert(lib, why);
    }

    fn cell(&self, lib: Lib) -> String {
        match (self.median(lib), self.notes.get(&lib)) {
            (Some(v), _) => num(v),
            (None, Some(why)) => (*why).to_string(),
            (None, None) => "—".into(),
        }
    }

    /// Records one sample.
    pub(crate) fn push(&mut self, lib: Lib, v: f64) {
        self.samples.entry(lib).or_default().push(v);
    }

    fn median(&self, lib: Lib) -> Option<f64> {
        let mut v = self.samples.get(&lib)?.clone();
        if v.is_empty() {
            return None;
        }
        v.sort_by(f64::total_cmp);
        let m = v.len() / 2;
        Some(if v.len() % 2 == 1 {
            v[m]
        } else {
            (v[m - 1] + v[m]) / 2.0
        })
    }

    fn spread(&self, lib: Lib) -> Option<f64> {
        let v = self.samples.get(&lib)?;
        let med = self.median(lib)?;
        let (lo, hi) = v
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &x| {
                (a.min(x), b.max(x))
            });
        (med != 0.0).then(|| (hi - lo) / med.abs())
    }

    fn best_peer(&self) -> Option<(Lib, f64)> {
        let peers = self.samples.keys().filter(|l| l.is_peer());
        peers
            .filter_map(|&l| self.median(l).map(|m| (l, m)))
            .reduce(|a, b| match self.better {
                Better::Lower if b.1 < a.1 => b,
                Better::Higher if b.1 > a.1 => b,
                _ => a,
            })
    }

    fn ratio(&self, lib: Lib) -> String {
        match (self.median(lib), self.best_peer()) {
            (Some(v), Some((_, b))) if b != 0.0 => format!("{:.2}×", v / b),
            (Some(_), Some(_)) => "—".into(),
            _ => "n/a".into(),
        }
    }
}

/// Formats a number with about three significant digits.
pub(crate) fn num(v: f64) -> String {
    let a = v.abs();
    if a >= 100.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else if a >= 1.0 {
        format!("{v:.2}")
    } else if a >= 0.01 {
        format!("{v:.3}")
    } else if a == 0.0 {
        "0".into()
    } else {
        // Two significant digits for tiny values (write calls per message).
        let decimals = (-a.log10()).ceil() as usize + 1;
        format!("{v:.decimals$}")
    }
}

/// The columns of the main table.
pub(crate) const COLS: [Lib; 9] = [
    Lib::Lockgate,
    Lib::TokioLockgate,
    Lib::Tungstenite,
    Lib::TokioTungstenite,
    Lib::Fastwebsockets,
    Lib::TokioWebsockets,
    Lib::SockudoWs,
    Lib::Yawc,
    Lib::Raw,
];

/// The columns of the compression table.
pub(crate) const DEFLATE_COLS: [Lib; 4] =
    [Lib::Lockgate, Lib::TokioLockgate, Lib::SockudoWs, Lib::Yawc];

/// The medians table over columns `cols`, with the best peer and
/// lockgate's ratios to it.
pub(crate) fn table(rows: &[Row], cols: &[Lib]) -> String {
    let mut s = String::new();
    s.push_str("| scenario | unit | better |");
    for l in cols {
        let _ = write!(s, " {} |", l.name());
    }
    s.push_str(" best peer | lockgate ÷ best | tokio-lockgate ÷ best |\n|---|---|---|");
    for _ in cols {
        s.push_str("---:|");
    }
    s.push_str("---|---:|---:|\n");
    for r in rows {
        let arrow = match r.better {
            Better::Lower => "↓ lower",
            Better::Higher => "↑ higher",
        };
        let _ = write!(s, "| {} | {} | {} |", r.name, r.unit, arrow);
        for &l in cols {
            let _ = write!(s, " {} |", r.cell(l));
        }
        let best = r
            .best_peer()
            .map_or_else(|| "—".into(), |(l, _)| l.name().to_string());
        let _ = writeln!(
            s,
            " {best} | {} | {} |",
            r.ratio(Lib::Lockgate),
            r.ratio(Lib::TokioLockgate)
        );
    }
    s
}

/// The spread table over columns `cols`: (max − min) / median per cell,
/// and the sample count.
pub(crate) fn spread_table(rows: &[Row], cols: &[Lib]) -> String {
    let mut s = String::from("| scenario | n |");
    for l in cols {
        let _ = write!(s, " {} |", l.name());
    }
    s.push_str("\n|---|---:|");
    for _ in cols {
        s.push_str("---:|");
    }
    s.push('\n');
    for r in rows {
        let n = r.samples.values().map(Vec::len).max().unwrap_or(0);
        let _ = write!(s, "| {} | {n} |", r.name);
        for &l in cols {
            let cell = match (r.spread(l), r.notes.get(&l)) {
                (Some(x), _) => format!("{:.0}%", x * 100.0),
                (None, Some(_)) => "n/a".into(),
                (None, None) => "—".into(),
            };
            let _ = write!(s, " {cell} |");
        }
        s.push('\n');
    }
    s
}

mod chart;
pub(crate) use chart::{charts, image_link, link_dir};
