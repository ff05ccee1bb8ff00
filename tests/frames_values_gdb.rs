//! Arguments and locals of every frame of the stack as gdb shows them (issue #29):
//! samples/c/frames_probe.c, built -O0 and -O2, stopped at each hit of its `STOP` lines;
//! for every frame from the innermost to `main`, gdb's `info args` and `info locals`
//! (after `frame N`) are compared with tandem's Arguments and Locals scopes of the same
//! frame, text for text, and the frames' functions and lines too. Outer frames' values at
//! -O2 come from callee-saved registers recovered through the CFI, and parameters of
//! every width, floats, `long double`, `_Complex`, structs and unions by value are read
//! where the ABI and the compiler put them.
#![allow(clippy::unwrap_used)] // Test code: a failed unwrap is a failed test.

mod support;

use std::path::Path;

use serde_json::json;
use support::dap::{build, line_of, sample_path, stack_free, DapClient};

const SAMPLE: &str = "c/frames_probe.c";
const STOPS: &[&str] = &["STOP leaf", "STOP bottom", "STOP odd"];
/// Stops the program makes: `leaf` from `scalars`, twice from `keeper`, from `twice`
/// (inlined into `shapes` at -O2), the bottom of the recursion, then the odd values.
const HITS: usize = 6;

/// One frame: its function and line, then `name = value` of its arguments and locals.
type Frame = Vec<String>;

/// gdb's frame header (`#N  [0x… in ]FUNC (ARGS) at FILE:LINE`) as `FUNC:LINE`.
fn header(line: &str) -> Option<String> {
    let rest = line.strip_prefix('#')?;
    let rest = rest.split_once("  ")?.1;
    let rest = rest.split_once(" in ").map_or(
        rest,
        |(addr, f)| {
            if addr.starts_with("0x") {
                f
            } else {
                rest
            }
        },
    );
    // gdb names a C++ frame by its minimal symbol at times, parameters and all
    // (`floats(float, double, …)`): the function is the name before them.
    let func = rest.split(" (").next()?;
    let func = func.split('(').next()?;
    let line_no = rest.rsplit_once(':')?.1.trim();
    Some(format!("{func}:{line_no}"))
}

fn gdb_stops(program: &Path) -> Vec<Vec<Frame>> {
    let source = sample_path(SAMPLE);
    let file = source.file_name().unwrap().to_string_lossy().into_owned();
    let mut cmds = vec![
        "set pagination off".to_string(),
        "set width 0".into(),
        "unset environment LINES".into(),
        "unset environment COLUMNS".into(),
    ];
    for s in STOPS {
        cmds.push(format!("break {file}:{}", line_of(&source, s)));
    }
    cmds.push("run".into());
    for _ in 0..HITS {
        cmds.push("echo STOP\\n".into());
        // Deep enough for every stop here; a `frame N` past the outermost prints no
        // header (its part is dropped).
        for n in 0..8 {
            cmds.extend([
                "echo FRAME\\n".into(),
                format!("frame {n}"),
                "info args".into(),
                "info locals".into(),
            ]);
        }
        cmds.push("continue".into());
    }
    let mut args: Vec<String> = vec!["-batch".into(), "-nx".into()];
    for c in cmds {
        args.extend(["-ex".into(), c]);
    }
    let out = std::process::Command::new("gdb")
        .args(&args)
        .arg(program)
        .output()
        .expect("gdb runs");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let stops: Vec<Vec<Frame>> = text
        .split("STOP\n")
        .skip(1)
        .map(|stop| {
            stop.split("FRAME\n")
                .skip(1)
                .filter_map(|part| {
                    let mut lines = part.lines();
                    let mut frame = vec![header(lines.next()?)?];
                    let mut names = std::collections::BTreeSet::new();
                    for l in lines {
                        let Some((n, v)) = l.split_once(" = ") else {
                            continue;
                        };
                        // A name listed again is an outer block's (shadowed) or, for a
                        // variable of an inlined function's block, gdb listing the
                        // abstract instance's copy too (`<optimized out>`): the first,
                        // innermost one is the one the frame shows.
                        if n.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
                            && names.insert(n.to_string())
                        {
                            frame.push(format!("{n} = {}", stack_free(v)));
                        }
                    }
                    Some(frame)
                })
                .collect()
        })
        .collect();
    assert_eq!(stops.len(), HITS, "gdb stopped otherwise:\n{text}");
    stops
}

fn tandem_stops(program: &Path) -> Vec<Vec<Frame>> {
    let source = sample_path(SAMPLE);
    let lines: Vec<i64> = STOPS.iter().map(|s| line_of(&source, s)).collect();
    let mut dap = DapClient::new();
    let mut stopped = dap.launch_to_stop(json!({"program": program}), &source, &lines);
    let mut stops = Vec::new();
    for i in 0..HITS {
        let thread = stopped["body"]["threadId"].as_i64().unwrap();
        let mut frames = Vec::new();
        for f in dap.frames(thread) {
            let id = f["id"].as_i64().unwrap();
            let mut frame = vec![format!("{}:{}", f["name"].as_str().unwrap(), f["line"])];
            for scope in ["Arguments", "Locals"] {
                for v in dap.scope_vars(id, scope) {
                    frame.push(format!(
                        "{} = {}",
                        v["name"].as_str().unwrap(),
                        stack_free(v["value"].as_str().unwrap())
                    ));
                }
            }
            frames.push(frame);
        }
        stops.push(frames);
        if i + 1 < HITS {
            dap.ok("continue", json!({"threadId": thread}));
            stopped = dap.event("stopped");
        }
    }
    dap.finish();
    stops
}

/// `compiler` builds the probe: gcc as C, g++ as C++ (`-x c++`).
fn compare(compiler: &str, opt: &str) -> (usize, Vec<String>) {
    let program = if compiler == "g++" {
        build(SAMPLE, "g++", &["-g", opt, "-x", "c++"])
    } else {
        build(SAMPLE, "gcc", &["-g", opt])
    };
    let gdb = gdb_stops(&program);
    let ours = tandem_stops(&program);
    let (mut total, mut differ) = (0, Vec::new());
    for (n, (g, t)) in gdb.iter().zip(&ours).enumerate() {
        for (level, gf) in g.iter().enumerate() {
            let tf = t.get(level).cloned().unwrap_or_default();
            for v in gf {
                total += 1;
                if !tf.contains(v) {
                    differ.push(format!(
                        "{opt} stop {n} frame {level}: gdb {v:?}, tandem {tf:?}"
                    ));
                }
            }
        }
    }
    eprintln!(
        "{opt}: {} of {total} values equal to gdb's",
        total - differ.len()
    );
    for d in &differ {
        eprintln!("  {d}");
    }
    (total, differ)
}

#[test]
fn frame_values_equal_gdb_at_o0() {
    let (total, differ) = compare("gcc", "-O0");
    assert!(total >= 60, "gdb showed only {total} values");
    assert!(differ.is_empty(), "{}", differ.join("\n"));
}

#[test]
fn frame_values_equal_gdb_at_o2() {
    let (total, differ) = compare("gcc", "-O2");
    assert!(total >= 40, "gdb showed only {total} values");
    assert!(differ.is_empty(), "{}", differ.join("\n"));
}

#[test]
fn frame_values_equal_gdb_in_cpp_at_o0() {
    let (total, differ) = compare("g++", "-O0");
    assert!(total >= 60, "gdb showed only {total} values");
    assert!(differ.is_empty(), "{}", differ.join("\n"));
}

#[test]
fn frame_values_equal_gdb_in_cpp_at_o2() {
    let (total, differ) = compare("g++", "-O2");
    assert!(total >= 40, "gdb showed only {total} values");
    assert!(differ.is_empty(), "{}", differ.join("\n"));
}
