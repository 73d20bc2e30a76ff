//! `doca_bench --against OTHER`: this build and another `doca_bench` run alternately, `runs`
//! times each, with the same flags; per row each build's median and spread, and the ratio of
//! the medians — how a regression is told from noise on a shared machine (both builds meet
//! the same noise, in turn).
//!
//! A row is a `(section, name)` both builds report. Its spread is half the range of its
//! values over the median (`±x %`); a row whose spread exceeds [`NOISY`] on either side says
//! so. The ratio is "this build against the other", oriented so that above 1 is worse: for
//! times (`ns`, `us`) this / other, for rates other / this.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

/// A spread beyond this fraction of the median marks a row as noisy.
pub const NOISY: f64 = 0.20;

/// One row of one run (as `doca_bench --json` writes it).
#[derive(Clone, Debug, PartialEq)]
pub struct Sample {
    /// `section` and `name`.
    pub key: (String, String),
    /// The unit (decides which way is better).
    pub unit: String,
    /// The value.
    pub value: f64,
}

/// Reads the rows of a `--json` file.
pub fn parse(text: &str) -> Result<Vec<Sample>, String> {
    let v: serde_json::Value =
        serde_json::from_str(text).map_err(|e| format!("not the bench's JSON: {e}"))?;
    let rows = v.as_array().ok_or("not a list of rows")?;
    rows.iter()
        .map(|r| {
            let s = |k: &str| r[k].as_str().map(str::to_string).ok_or(format!("a row without {k}"));
            Ok(Sample {
                key: (s("section")?, s("name")?),
                unit: s("unit")?,
                value: r["value"].as_f64().ok_or("a row without a value")?,
            })
        })
        .collect()
}

/// The median and the spread (half the range over the median) of `values` (not empty).
pub fn median_spread(values: &[f64]) -> (f64, f64) {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    let median = if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 };
    let spread = if median != 0.0 { (v[n - 1] - v[0]) / 2.0 / median.abs() } else { 0.0 };
    (median, spread)
}

/// Whether smaller values of `unit` are better.
pub fn lower_is_better(unit: &str) -> bool {
    matches!(unit, "ns" | "us" | "ms" | "s" | "KiB" | "MiB")
}

/// One compared row.
#[derive(Debug, PartialEq)]
pub struct Compared {
    /// `section`, `name`.
    pub key: (String, String),
    /// The unit.
    pub unit: String,
    /// This build's median and spread.
    pub this: (f64, f64),
    /// The other build's.
    pub other: (f64, f64),
    /// This against the other, above 1 worse.
    pub ratio: f64,
}

impl Compared {
    /// Whether either side's spread exceeds [`NOISY`].
    pub fn noisy(&self) -> bool {
        self.this.1 > NOISY || self.other.1 > NOISY
    }
}

/// Compares the runs of this build with the other's, row by row, in this build's order.
pub fn compare(this: &[Vec<Sample>], other: &[Vec<Sample>]) -> Vec<Compared> {
    let gather = |runs: &[Vec<Sample>]| {
        let mut m: BTreeMap<(String, String), (String, Vec<f64>)> = BTreeMap::new();
        for run in runs {
            for s in run {
                m.entry(s.key.clone()).or_insert_with(|| (s.unit.clone(), Vec::new())).1.push(s.value);
            }
        }
        m
    };
    let (a, b) = (gather(this), gather(other));
    let mut order: Vec<(String, String)> = Vec::new();
    for s in this.first().into_iter().flatten() {
        if !order.contains(&s.key) {
            order.push(s.key.clone());
        }
    }
    order
        .into_iter()
        .filter_map(|key| {
            let (unit, av) = a.get(&key)?;
            let (_, bv) = b.get(&key)?;
            let (this, other) = (median_spread(av), median_spread(bv));
            let ratio = if other.0 == 0.0 || (!lower_is_better(unit) && this.0 == 0.0) {
                f64::NAN
            } else if lower_is_better(unit) {
                this.0 / other.0
            } else {
                other.0 / this.0
            };
            Some(Compared { key, unit: unit.clone(), this, other, ratio })
        })
        .collect()
}

/// Runs `program` with `args` and `--json` into a file of `dir`; its rows.
pub fn run_once(program: &Path, args: &[String], dir: &Path, tag: &str) -> Result<Vec<Sample>, String> {
    let json = dir.join(format!("{tag}.json"));
    let status = Command::new(program)
        .args(args)
        .arg("--json")
        .arg(&json)
        .stdout(std::process::Stdio::null())
        .status()
        .map_err(|e| format!("cannot run {}: {e}", program.display()))?;
    if !status.success() {
        return Err(format!("{} failed ({status})", program.display()));
    }
    let text = std::fs::read_to_string(&json).map_err(|e| format!("{}: {e}", json.display()))?;
    parse(&text)
}

/// The comparison as lines of text.
pub fn table(rows: &[Compared], runs: usize, other: &Path) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "this build against {} ({runs} alternated runs each; ratio above 1: this build is worse)",
        other.display()
    );
    let _ = writeln!(
        out,
        "{:<14} {:<48} {:>12} {:>7} {:>12} {:>7} {:<7} {:>7}",
        "section", "measurement", "this", "±", "other", "±", "unit", "ratio"
    );
    for r in rows {
        let _ = writeln!(
            out,
            "{:<14} {:<48} {:>12.2} {:>6.0}% {:>12.2} {:>6.0}% {:<7} {:>6.2}x{}",
            r.key.0,
            r.key.1,
            r.this.0,
            r.this.1 * 100.0,
            r.other.0,
            r.other.1 * 100.0,
            r.unit,
            r.ratio,
            if r.noisy() { "  noisy: spread above ±20 %, tell nothing from this row" } else { "" }
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(name: &str, unit: &str, value: f64) -> Sample {
        Sample { key: ("x".into(), name.into()), unit: unit.into(), value }
    }

    #[test]
    fn medians_spreads_and_ratios_point_the_right_way() {
        assert_eq!(median_spread(&[3.0, 1.0, 2.0]), (2.0, 0.5));
        assert_eq!(median_spread(&[1.0, 2.0, 3.0, 4.0]).0, 2.5);
        let this = vec![vec![s("lat", "ns", 110.0), s("rate", "Mmsg/s", 5.0)]; 3];
        let other = vec![vec![s("lat", "ns", 100.0), s("rate", "Mmsg/s", 10.0)]; 3];
        let c = compare(&this, &other);
        assert_eq!(c.len(), 2);
        assert!((c[0].ratio - 1.1).abs() < 1e-9, "slower latency: worse");
        assert!((c[1].ratio - 2.0).abs() < 1e-9, "half the rate: worse");
        assert!(!c[0].noisy());
        let noisy = compare(&[vec![s("lat", "ns", 100.0)], vec![s("lat", "ns", 200.0)]], &other);
        assert!(noisy[0].noisy());
    }

    #[test]
    fn the_bench_json_is_read_back() {
        let text = r#"[
  {"section": "engine", "name": "empty progress", "unit": "ns", "value": 3.500, "p99": null, "baseline": "-", "baseline_value": 1.000, "ratio": 3.500}
]"#;
        assert_eq!(
            parse(text).unwrap(),
            vec![Sample { key: ("engine".into(), "empty progress".into()), unit: "ns".into(), value: 3.5 }]
        );
        assert!(parse("nope").is_err());
    }
}
