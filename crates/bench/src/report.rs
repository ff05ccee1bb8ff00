//! What a run produced: the table on stdout (Markdown, ready for docs/benchmarks.md), the
//! results file (JSON) and the plot (a hand-written SVG, one panel per figure).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde_json::{json, Value};

use crate::reverse::{Details, Distance, Mode, Program};
use crate::scenarios::{metrics, Better, Metric, Scenario, Tool};
use crate::stats;

/// Every value measured, by metric and debugger, in the order of the repetitions.
#[derive(Debug, Default)]
pub struct Results {
    pub values: BTreeMap<&'static str, BTreeMap<Tool, Vec<f64>>>,
    pub failures: Vec<(Scenario, Tool, String)>,
}

impl Results {
    pub fn record(&mut self, tool: Tool, figures: &[(&'static str, f64)]) {
        for &(id, value) in figures {
            self.values
                .entry(id)
                .or_default()
                .entry(tool)
                .or_default()
                .push(value);
        }
    }

    /// Each debugger's runs of `metric`; the peers' from `metric.peers_from` when it names
    /// another figure.
    pub fn runs(&self, metric: &Metric) -> BTreeMap<Tool, &[f64]> {
        let of = |id: &str, tandem: bool| {
            self.values
                .get(id)
                .into_iter()
                .flatten()
                .filter(move |(&tool, _)| (tool == Tool::Tandem) == tandem)
                .map(|(&tool, runs)| (tool, runs.as_slice()))
        };
        of(metric.id, true)
            .chain(of(metric.peers_from.unwrap_or(metric.id), false))
            .collect()
    }

    /// The median of each debugger's runs of `metric`.
    pub fn medians(&self, metric: &Metric) -> BTreeMap<Tool, f64> {
        self.runs(metric)
            .into_iter()
            .map(|(tool, runs)| (tool, stats::median(runs)))
            .collect()
    }

    /// The metrics that have at least one value of their own, in the catalogue's order.
    pub fn measured(&self) -> impl Iterator<Item = &'static Metric> + '_ {
        metrics().filter(|m| self.values.get(m.id).is_some_and(|v| !v.is_empty()))
    }

    /// The values and failures of the scenarios `keep` accepts.
    pub fn subset(&self, keep: impl Fn(Scenario) -> bool) -> Results {
        let scenario_of = |id: &str| metrics().find(|m| m.id == id).map(|m| m.scenario);
        Results {
            values: self
                .values
                .iter()
                .filter(|(id, _)| scenario_of(id).is_some_and(&keep))
                .map(|(id, runs)| (*id, runs.clone()))
                .collect(),
            failures: self
                .failures
                .iter()
                .filter(|(scenario, _, _)| keep(*scenario))
                .cloned()
                .collect(),
        }
    }
}

/// How many times better tandem is than `peer` (> 1: tandem is ahead).
pub fn advantage(metric: &Metric, tandem: f64, peer: f64) -> f64 {
    match metric.better {
        Better::Higher => tandem / peer,
        Better::Lower => peer / tandem,
    }
}

pub fn format_value(metric: &Metric, value: f64) -> String {
    if value.is_nan() {
        return "—".to_owned();
    }
    match metric.unit {
        "hits/s" => format!("{} hits/s", thousands(value)),
        "s" => format!("{value:.3} s"),
        "ms" if value >= 100.0 => format!("{value:.0} ms"),
        "ms" if value >= 10.0 => format!("{value:.1} ms"),
        "ms" => format!("{value:.3} ms"),
        "×" => format_ratio(value),
        "µs" => micros(value),
        "s/s" => format!("{value:.2} s per s"),
        unit => format!("{value:.1} {unit}"),
    }
}

fn thousands(value: f64) -> String {
    let digits = format!("{:.0}", value.abs());
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    if value < 0.0 {
        out.insert(0, '-');
    }
    out
}

/// A duration given in microseconds, in the unit that reads best.
pub fn micros(us: f64) -> String {
    if us.is_nan() {
        "—".to_owned()
    } else if us.abs() < 1.0 {
        format!("{:.1} ns", us * 1e3)
    } else if us.abs() < 1000.0 {
        format!("{us:.2} µs")
    } else if us.abs() < 1e6 {
        format!("{:.1} ms", us / 1e3)
    } else {
        format!("{:.2} s", us / 1e6)
    }
}

fn format_ratio(ratio: f64) -> String {
    if !ratio.is_finite() {
        "—".to_owned()
    } else if ratio >= 10_000.0 {
        format!("{}×", thousands(ratio))
    } else if ratio >= 10.0 {
        format!("{ratio:.0}×")
    } else if ratio > 0.0 && ratio < 0.1 {
        // Two significant digits.
        let digits = (-ratio.log10()).ceil() as usize + 1;
        format!("{ratio:.digits$}×")
    } else {
        format!("{ratio:.2}×")
    }
}

/// The table as Markdown: medians, tandem's advantage over each peer, and the target.
pub fn table(results: &Results, reps: usize) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "| figure (median of {reps}) | tandem | gdb | lldb-dap | tandem vs gdb | tandem vs lldb-dap | target (tandem) |"
    );
    let _ = writeln!(out, "|---|---:|---:|---:|---:|---:|---|");
    for metric in results.measured() {
        let medians = results.medians(metric);
        let cell = |tool: Tool| {
            medians
                .get(&tool)
                .map_or("—".to_owned(), |&v| format_value(metric, v))
        };
        let ratio = |peer: Tool| match (medians.get(&Tool::Tandem), medians.get(&peer)) {
            (Some(&t), Some(&p)) if metric.ratio => format_ratio(advantage(metric, t, p)),
            _ => "—".to_owned(),
        };
        let target = match (metric.target, medians.get(&Tool::Tandem)) {
            (Some(target), Some(&t)) => {
                let met = match metric.better {
                    Better::Higher => t >= target,
                    Better::Lower => t <= target,
                };
                let sign = if metric.better == Better::Higher {
                    "≥"
                } else {
                    "≤"
                };
                format!(
                    "{sign} {}: {}",
                    format_value(metric, target),
                    if met { "met" } else { "**missed**" }
                )
            }
            _ => String::new(),
        };
        let _ = writeln!(
            out,
            "| {} ({}) | {} | {} | {} | {} | {} | {} |",
            metric.title,
            if metric.better == Better::Higher {
                "higher is better"
            } else {
                "lower is better"
            },
            cell(Tool::Tandem),
            cell(Tool::Gdb),
            cell(Tool::LldbDap),
            ratio(Tool::Gdb),
            ratio(Tool::LldbDap),
            target
        );
    }
    out
}

/// The results file.
pub fn json(results: &Results, header: Value) -> Value {
    let metrics: Vec<Value> = results
        .measured()
        .map(|metric| {
            let medians = results.medians(metric);
            let runs = results.runs(metric);
            let tools: serde_json::Map<String, Value> = runs
                .iter()
                .map(|(tool, values)| {
                    (
                        tool.name().to_owned(),
                        json!({ "median": medians.get(tool), "runs": values }),
                    )
                })
                .collect();
            let advantage: serde_json::Map<String, Value> = [Tool::Gdb, Tool::LldbDap]
                .iter()
                .filter(|_| metric.ratio)
                .filter_map(|peer| {
                    let t = medians.get(&Tool::Tandem)?;
                    let p = medians.get(peer)?;
                    Some((peer.name().to_owned(), json!(advantage(metric, *t, *p))))
                })
                .collect();
            json!({
                "id": metric.id,
                "scenario": metric.scenario.id(),
                "title": metric.title,
                "unit": metric.unit,
                "better": if metric.better == Better::Higher { "higher" } else { "lower" },
                "target": metric.target,
                "tools": tools,
                // The peers' runs repeated from this figure, when it names one.
                "peers_from": metric.peers_from,
                "tandem_advantage": advantage,
            })
        })
        .collect();
    let failures: Vec<Value> = results
        .failures
        .iter()
        .map(|(scenario, tool, error)| {
            json!({ "scenario": scenario.id(), "tool": tool.name(), "error": error })
        })
        .collect();
    let mut out = header;
    out["metrics"] = json!(metrics);
    out["failures"] = json!(failures);
    out
}

const COLORS: [(Tool, &str); 3] = [
    (Tool::Tandem, "#2b7bb9"),
    (Tool::Gdb, "#d9822b"),
    (Tool::LldbDap, "#7a5195"),
];

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// One panel per figure: a bar per debugger (median), scaled to the panel's largest value,
/// the target as a dashed line.
pub fn svg(results: &Results, title: &str, subtitle: &str) -> String {
    const WIDTH: f64 = 900.0;
    const LABEL: f64 = 90.0;
    const BAR_SPACE: f64 = 560.0;
    const BAR: f64 = 16.0;
    const PANEL: f64 = 30.0 + 3.0 * (BAR + 4.0) + 12.0;
    let metrics: Vec<&Metric> = results.measured().collect();
    let height = 70.0 + PANEL * metrics.len() as f64 + 30.0;
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(
        s,
        r##"<rect width="100%" height="100%" fill="white"/><text x="20" y="28" font-size="17" font-weight="bold">{}</text><text x="20" y="48" fill="#555">{}</text>"##,
        escape(title),
        escape(subtitle)
    );
    for (i, metric) in metrics.iter().enumerate() {
        let top = 70.0 + PANEL * i as f64;
        let medians = results.medians(metric);
        let max = medians
            .values()
            .copied()
            .chain(metric.target)
            .filter(|v| v.is_finite())
            .fold(0.0_f64, f64::max);
        let scale = if max > 0.0 { BAR_SPACE / max } else { 0.0 };
        let hint = if metric.better == Better::Higher {
            "longer is better"
        } else {
            "shorter is better"
        };
        let _ = writeln!(
            s,
            r#"<text x="20" y="{}" font-weight="bold">{} ({}, {hint})</text>"#,
            top + 16.0,
            escape(metric.title),
            escape(metric.unit)
        );
        for (row, (tool, color)) in COLORS.iter().enumerate() {
            let y = top + 26.0 + row as f64 * (BAR + 4.0);
            let _ = writeln!(
                s,
                r#"<text x="{}" y="{}" text-anchor="end">{}</text>"#,
                20.0 + LABEL - 8.0,
                y + BAR - 4.0,
                tool.name()
            );
            match medians.get(tool) {
                Some(&value) if value.is_finite() => {
                    let w = (value.max(0.0) * scale).max(1.0);
                    let _ = writeln!(
                        s,
                        r#"<rect x="{}" y="{y}" width="{w:.1}" height="{BAR}" fill="{color}"/><text x="{}" y="{}">{}</text>"#,
                        20.0 + LABEL,
                        20.0 + LABEL + w + 6.0,
                        y + BAR - 4.0,
                        escape(&format_value(metric, value))
                    );
                }
                _ => {
                    let _ = writeln!(
                        s,
                        r##"<text x="{}" y="{}" fill="#999">not measured</text>"##,
                        20.0 + LABEL,
                        y + BAR - 4.0
                    );
                }
            }
        }
        if let Some(target) = metric.target {
            let x = 20.0 + LABEL + target * scale;
            let _ = writeln!(
                s,
                r##"<line x1="{x:.1}" y1="{}" x2="{x:.1}" y2="{}" stroke="#c00" stroke-dasharray="4 3"/><text x="{:.1}" y="{}" fill="#c00" font-size="10">target</text>"##,
                top + 22.0,
                top + 26.0 + 3.0 * (BAR + 4.0),
                x + 3.0,
                top + 22.0 + 8.0
            );
        }
    }
    let _ = writeln!(
        s,
        r##"<text x="20" y="{}" fill="#555" font-size="11">Generated by `cargo run --release -p tandem-bench`; numbers in docs/benchmarks.json.</text>"##,
        height - 12.0
    );
    s.push_str("</svg>\n");
    s
}

/// R1's and R2's detail tables (Markdown): every mode of every program, and every distance
/// gone back, as medians of the repetitions.
pub fn reverse_tables(details: &Details) -> String {
    let mut out = String::new();
    if !details.r1.is_empty() {
        let _ = writeln!(
            out,
            "| R1 program | run | N | wall | CPU | per iteration, wall | per iteration, CPU | recorded / plain, whole run (wall, CPU) | per iteration / plain's (wall, CPU) |"
        );
        let _ = writeln!(out, "|---|---|---:|---:|---:|---:|---:|---:|---:|");
        let med = |runs: &[crate::reverse::Measured], f: fn(&crate::reverse::Measured) -> f64| {
            stats::median(&runs.iter().map(f).collect::<Vec<_>>())
        };
        let programs = [
            Program::Compute,
            Program::Syscalls,
            Program::FileIo,
            Program::FileIoDirect,
        ];
        for program in programs {
            let plain = details.r1.get(&(program, Mode::Plain));
            for mode in Mode::ALL {
                let Some(runs) = details.r1.get(&(program, mode)) else {
                    continue;
                };
                let wall = med(runs, |m| m.wall);
                let cpu = med(runs, |m| m.cpu);
                let per_wall = med(runs, |m| m.per_iter_wall);
                let per_cpu = med(runs, |m| m.per_iter_cpu);
                let (whole, per) = match (mode, plain) {
                    (Mode::Plain, _) | (_, None) => (String::new(), String::new()),
                    (_, Some(plain)) => {
                        let whole = if mode == Mode::Recorded {
                            format!(
                                "{}, {}",
                                format_ratio(wall / med(plain, |m| m.wall)),
                                format_ratio(cpu / med(plain, |m| m.cpu))
                            )
                        } else {
                            String::new()
                        };
                        let per = format!(
                            "{}, {}",
                            format_ratio(per_wall / med(plain, |m| m.per_iter_wall)),
                            format_ratio(per_cpu / med(plain, |m| m.per_iter_cpu))
                        );
                        (whole, per)
                    }
                };
                let _ = writeln!(
                    out,
                    "| {} | {} | {} | {:.3} s | {:.3} s | {} | {} | {whole} | {per} |",
                    program.title(),
                    mode.title(),
                    thousands(runs.first().map_or(0.0, |m| m.n as f64)),
                    wall,
                    cpu,
                    micros(per_wall),
                    micros(per_cpu),
                );
            }
        }
    }
    if !details.r2.is_empty() {
        if !out.is_empty() {
            out.push('\n');
        }
        let tools: Vec<Tool> = details.r2.keys().copied().collect();
        let _ = writeln!(
            out,
            "| R2 (`rev_bench syscalls N`, medians) | {} |",
            tools
                .iter()
                .map(|t| match t {
                    Tool::Gdb => "gdb `record full`",
                    other => other.name(),
                })
                .collect::<Vec<_>>()
                .join(" | ")
        );
        let _ = writeln!(out, "|---|{}", "---:|".repeat(tools.len()));
        let column = |tool: &Tool, cell: &dyn Fn(&[crate::reverse::GoingBack]) -> String| {
            details
                .r2
                .get(tool)
                .map_or("—".to_owned(), |runs| cell(runs))
        };
        let row = |out: &mut String,
                   title: &str,
                   cell: &dyn Fn(&[crate::reverse::GoingBack]) -> String| {
            let cells: Vec<String> = tools.iter().map(|t| column(t, cell)).collect();
            let _ = writeln!(out, "| {title} | {} |", cells.join(" | "));
        };
        row(
            &mut out,
            "recorded: rounds, time to the last tick, per round",
            &|runs| {
                let record = stats::median(&runs.iter().map(|r| r.record_s).collect::<Vec<_>>());
                let rounds = runs.first().map_or(0, |r| r.rounds);
                format!(
                    "{} in {record:.2} s ({} a round)",
                    thousands(rounds as f64),
                    micros(record / rounds.max(1) as f64 * 1e6)
                )
            },
        );
        for k in 0..5 {
            row(
                &mut out,
                &format!("`stepBack` / `reverse-next` {}", k + 1),
                &|runs| {
                    let ms: Vec<f64> = runs
                        .iter()
                        .filter_map(|r| r.steps_ms.get(k).copied())
                        .collect();
                    format!("{:.1} ms", stats::median(&ms))
                },
            );
        }
        // One row per distance asked, in rounds (the same for every run) or in seconds of
        // recorded execution (so many rounds at each run's own pace).
        let mut asked: Vec<Distance> = details
            .r2
            .values()
            .flatten()
            .flat_map(|r| r.back.iter().map(|b| b.asked))
            .collect();
        asked.sort_by(|a, b| {
            let key = |d: &Distance| match *d {
                Distance::Rounds(n) => (0, n as f64),
                Distance::Seconds(s) => (1, s),
            };
            key(a)
                .partial_cmp(&key(b))
                .unwrap_or(std::cmp::Ordering::Equal)
        });
        asked.dedup();
        for distance in asked {
            let title = match distance {
                Distance::Rounds(n) => {
                    format!("`reverseContinue` {} rounds back", thousands(n as f64))
                }
                Distance::Seconds(s) => {
                    format!("`reverseContinue` {s} s of recorded execution back")
                }
            };
            row(&mut out, &title, &|runs| {
                let (mut latency, mut rounds, mut recorded) = (Vec::new(), Vec::new(), Vec::new());
                for run in runs {
                    for b in run.back.iter().filter(|b| b.asked == distance) {
                        latency.push(b.latency_s);
                        rounds.push(b.rounds as f64);
                        recorded.push(run.recorded_s(b.rounds));
                    }
                }
                if latency.is_empty() {
                    return "—".to_owned();
                }
                let latency = stats::median(&latency);
                let recorded = stats::median(&recorded);
                format!(
                    "{} ({} rounds, ≈ {recorded:.3} s recorded: {:.2} s per s)",
                    micros(latency * 1e6),
                    thousands(stats::median(&rounds)),
                    latency / recorded
                )
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Results {
        let mut r = Results::default();
        r.record(
            Tool::Tandem,
            &[
                ("p1.hits_per_s", 2_500_000.0),
                ("p1_int3.hits_per_s", 25_000.0),
                ("p2.time_s", 0.3),
            ],
        );
        r.record(Tool::Gdb, &[("p1.hits_per_s", 5_000.0), ("p2.time_s", 1.5)]);
        r.record(Tool::LldbDap, &[("p1.hits_per_s", 500.0)]);
        r
    }

    #[test]
    fn advantage_reads_the_right_way() {
        let table = table(&sample(), 1);
        // 25,000 vs 5,000 hits/s and 0.3 vs 1.5 s are both 5× in tandem's favour.
        assert!(table.contains("| 25,000 hits/s | 5,000 hits/s | 500 hits/s | 5.00× | 50× |"));
        assert!(table.contains("| 0.300 s | 1.500 s | — | 5.00× | — |"));
        assert!(table.contains("≥ 20,000 hits/s: met"));
    }

    #[test]
    fn both_tandem_figures_face_the_same_peer_runs() {
        let table = table(&sample(), 1);
        assert!(table.contains(
            "| 2,500,000 hits/s | 5,000 hits/s | 500 hits/s | 500× | 5000× | ≥ 1,000,000 hits/s: met |"
        ));
        assert!(table.contains(
            "| 25,000 hits/s | 5,000 hits/s | 500 hits/s | 5.00× | 50× | ≥ 20,000 hits/s: met |"
        ));
        let v = json(&sample(), json!({}));
        assert_eq!(v["metrics"][1]["id"], "p1_int3.hits_per_s");
        assert_eq!(v["metrics"][1]["tools"]["gdb"]["runs"][0], 5_000.0);
        assert_eq!(v["metrics"][1]["peers_from"], "p1.hits_per_s");
    }

    #[test]
    fn svg_is_one_document_with_a_panel_per_figure() {
        let svg = svg(&sample(), "title", "a <machine>");
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        assert_eq!(svg.matches("font-weight=\"bold\">P").count(), 3);
        assert!(svg.contains("a &lt;machine&gt;"));
    }

    #[test]
    fn reverse_tables_divide_by_the_plain_run() {
        use crate::reverse::{Back, GoingBack, Measured};
        let m = |n: u64, wall: f64, per: f64| Measured {
            n,
            wall,
            cpu: wall / 2.0,
            per_iter_wall: per,
            per_iter_cpu: per / 2.0,
        };
        let mut d = Details::default();
        d.r1.insert(
            (Program::Syscalls, Mode::Plain),
            vec![m(1000, 0.5, 0.2), m(1000, 0.7, 0.4)],
        );
        d.r1.insert((Program::Syscalls, Mode::Recorded), vec![m(1000, 1.2, 0.6)]);
        d.r1.insert(
            (Program::Syscalls, Mode::GdbRecordFull),
            vec![m(10, 3.0, 6000.0)],
        );
        d.r2.insert(
            Tool::Tandem,
            vec![GoingBack {
                rounds: 2000,
                record_s: 2.0,
                steps_ms: vec![10.0, 20.0, 30.0, 40.0, 50.0],
                back: vec![Back {
                    asked: Distance::Rounds(1000),
                    rounds: 1000,
                    latency_s: 0.5,
                }],
            }],
        );
        let t = reverse_tables(&d);
        // Plain medians: 0.6 s and 0.3 µs an iteration.
        assert!(
            t.contains(
                "| 1,000 | 1.200 s | 0.600 s | 600.0 ns | 300.0 ns | 2.00×, 2.00× | 2.00×, 2.00× |"
            ),
            "{t}"
        );
        assert!(t.contains("| gdb `record full` | 10 | 3.000 s | 1.500 s | 6.0 ms | 3.0 ms |  | 20,000×, 20,000× |"), "{t}");
        assert!(t.contains("| `reverseContinue` 1,000 rounds back | 500.0 ms (1,000 rounds, ≈ 1.000 s recorded: 0.50 s per s) |"), "{t}");
        assert!(
            t.contains("| `stepBack` / `reverse-next` 3 | 30.0 ms |"),
            "{t}"
        );
    }

    #[test]
    fn small_ratios_keep_two_digits() {
        assert_eq!(format_ratio(0.0042), "0.0042×");
        assert_eq!(format_ratio(0.5), "0.50×");
        assert_eq!(format_ratio(123_456.0), "123,456×");
        assert_eq!(micros(0.25), "250.0 ns");
    }

    #[test]
    fn json_keeps_every_run() {
        let v = json(&sample(), json!({}));
        assert_eq!(v["metrics"][0]["tools"]["tandem"]["runs"][0], 2_500_000.0);
        assert_eq!(v["metrics"][0]["tandem_advantage"]["lldb-dap"], 5_000.0);
    }
}
