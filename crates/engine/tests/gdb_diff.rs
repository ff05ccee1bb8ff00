//! Differential tests against gdb: at every stop of a multi-breakpoint run, each
//! frame's function and line and every argument and local (walked down to scalar
//! leaves) agree with gdb's answers from its Python API.

mod common;

/// Runs the eng_values sample. Values the engine cannot produce yet are dropped from both sides when the engine's
/// error contains one of `known_gaps` (each is listed in the crate's open items); a
/// wrong value still fails.
fn differential(
    flags: &[&str],
    lines: &[u32],
    min_stops: usize,
    known_gaps: &[&str],
) -> Vec<Vec<String>> {
    differential_of("eng_values", 3, flags, lines, min_stops, known_gaps)
}

fn differential_of(
    name: &str,
    exit_code: i32,
    flags: &[&str],
    lines: &[u32],
    min_stops: usize,
    known_gaps: &[&str],
) -> Vec<Vec<String>> {
    let sample = common::compile(name, flags);
    let locations: Vec<String> = lines.iter().map(|l| format!("{name}.c:{l}")).collect();
    let expected = common::gdb_stops(&sample.path, &locations, sample.dir.path());
    assert!(
        expected.len() >= min_stops,
        "gdb reported {} stops",
        expected.len()
    );
    let (actual, code) = common::engine_stops(&sample, lines);
    assert_eq!(code, exit_code);
    assert_eq!(actual.len(), expected.len(), "number of stops");
    for (i, (a, e)) in actual.iter().zip(&expected).enumerate() {
        let (mut a, mut e) = (common::normalize(a), common::normalize(e));
        let key = |l: &String| l.split(" = ").next().unwrap_or("").to_string();
        let gaps: Vec<String> = a
            .iter()
            .filter(|l| known_gaps.iter().any(|g| l.contains(g)))
            .map(key)
            .collect();
        a.retain(|l| !gaps.contains(&key(l)));
        e.retain(|l| !gaps.contains(&key(l)));
        if a != e {
            let missing: Vec<_> = e.iter().filter(|l| !a.contains(l)).collect();
            let extra: Vec<_> = a.iter().filter(|l| !e.contains(l)).collect();
            panic!("stop {i} differs\n gdb only: {missing:#?}\n engine only: {extra:#?}");
        }
    }
    actual
}

#[test]
fn values_and_frames_agree_with_gdb_at_o0() {
    let stops = differential(&["-g", "-O0"], &[49, 60, 72, 97, 112], 8, &[]);
    // The samples' interesting values are really in the comparison.
    let all: Vec<&String> = stops.iter().flatten().collect();
    for needle in [
        "FRAME 3 fact 51",
        "FRAME 4 main 137",
        "VAR 0 squares[3] = 9",
        "VAR 0 bf.b = -7",
        "VAR 0 fl = (F_READ | F_EXEC)",
        "VAR 0 msg = ",
        "VAR 4 padded = \"hi\\tthere\", '\\000' <repeats 15 times>",
        "VAR 4 op = ",
        "VAR 4 ratio = -0.666666666666666666685",
        "VAR 1 sq.corners[1].y = 4",
    ] {
        assert!(
            all.iter().any(|l| l.starts_with(needle)),
            "no line starts with {needle}"
        );
    }
}

#[test]
fn values_and_frames_agree_with_gdb_at_o2() {
    // Parameters located by DW_OP_entry_value are compared too: the engine recovers
    // them from the caller's call site as gdb does, or both say `<optimized out>`.
    let stops = differential(&["-g", "-O2"], &[49, 60, 72, 97, 112], 3, &[]);
    let all: Vec<&String> = stops.iter().flatten().collect();
    assert!(all.iter().all(|l| !l.contains("<error")), "{all:#?}");
}

/// At `return 7;` in `leaf`, both arguments are dead: their locations are
/// `DW_OP_entry_value(DW_OP_reg5)` / `(DW_OP_reg4)`, recovered from `middle`'s call
/// site (`rdi` = a callee-saved register, `rsi` = the constant 5). `main`'s `argc`
/// needs the call site in libc, which has none: `<optimized out>` on both sides.
fn entry_values_agree_with_gdb(dwarf: &str) {
    let stops = differential_of("sym_callsite", 0, &["-O2", dwarf], &[13], 1, &[]);
    let all: Vec<&String> = stops.iter().flatten().collect();
    for needle in [
        "VAR 0 a = 42",
        "VAR 0 b = 5",
        "VAR 2 argc = <optimized out>",
    ] {
        assert!(all.iter().any(|l| *l == needle), "no {needle}: {all:#?}");
    }
}

#[test]
fn entry_values_agree_with_gdb_dwarf5() {
    entry_values_agree_with_gdb("-gdwarf-5");
}

#[test]
fn gnu_entry_values_agree_with_gdb_dwarf4() {
    entry_values_agree_with_gdb("-gdwarf-4");
}
