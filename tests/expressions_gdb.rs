//! Expressions as gdb's `print` answers them (issue #29): samples/c/expr_probe.c built
//! as C (gcc) and as C++ (g++), both -O0, stopped at its marked line; every expression
//! of [`EXPRESSIONS`] is evaluated by tandem over DAP (`evaluate`) and by gdb
//! (`output`) on the same binary at the same stop, and the texts must be equal.
//! The set covers subscripts through pointers and arrays, pointer arithmetic and
//! differences, member chains through pointers, casts, comparisons, enumerators,
//! globals, `sizeof`, the conditional operator, logical and unary operators, and char
//! and string values — the C++ build is what caught every pointer subscript failing in
//! a C++ frame.
#![allow(clippy::unwrap_used)] // Test code: a failed unwrap is a failed test.

mod support;

use std::path::PathBuf;

use serde_json::json;
use support::dap::{build, gdb_locals_at, line_of, sample_path, DapClient};

const SAMPLE: &str = "c/expr_probe.c";
const MARKER: &str = "EXPR HERE";

/// The expressions, each printed by gdb and evaluated by tandem at the marked line of
/// `probe` (gdb's answer is the expected one; none is written here).
const EXPRESSIONS: &[&str] = &[
    "argv[0][1] != 0",
    "argc",
    "i",
    "arr[1]",
    "arr[i]",
    "arr[i + 1] - arr[0]",
    "*p",
    "p[0]",
    "p[1]",
    "p[-1]",
    "*(p + 2)",
    "q - p",
    "p - q",
    "&arr[3] - p",
    "p < q",
    "p == &arr[1]",
    "p != q",
    "s[0]",
    "s[1]",
    "*s",
    "s[i]",
    "g_text[3]",
    "g_text",
    "g_words[1]",
    "g_words[1][0]",
    "g_words[2][3]",
    "*g_words[0]",
    "g_grid[1][2]",
    "g_grid[0][1] + g_grid[1][0]",
    "g_grid[1]",
    "*g_grid[1]",
    "g_int",
    "g_int * 2 + 1",
    "g_uint",
    "g_uint + 1",
    "g_long",
    "g_long / 1000",
    "g_double",
    "g_double * 2",
    "g_char",
    "g_color",
    "g_color == BLUE",
    "RED",
    "GREEN + 1",
    "(int)BLUE",
    "h->head->value",
    "h->head->next->value",
    "h->head->next->next->name",
    "h->head->next->name[1]",
    "h->head->tag",
    "h->head->tag[2]",
    "h->counts[3]",
    "h->counts[1] * 2",
    "h->small",
    "h->neg",
    "h->ratio",
    "h->hue",
    "h->label[0]",
    "n->next->next->tag[0]",
    "(*n).value",
    "n->name",
    "(*h).counts[2]",
    "sizeof(int)",
    "sizeof(arr)",
    "sizeof arr[0]",
    "sizeof(node_t)",
    "sizeof(struct holder)",
    "sizeof(g_grid[0])",
    "(char)65",
    "(unsigned char)h->neg",
    "(short)70000",
    "(long)neg",
    "(unsigned)neg",
    "(double)i / 4",
    "neg / 2",
    "neg % 4",
    "u - 10",
    "-neg",
    "~i",
    "!i",
    "!0",
    "i && neg",
    "i || 0",
    "0 && i",
    "neg < 0",
    "u > 3",
    "d < 0.5",
    "d * 4",
    "ci + vl",
    "i ? arr[0] : arr[1]",
    "0 ? 1 : 2",
    "neg < 0 ? -neg : neg",
    "i > 1 ? i > 2 ? 3 : 2 : 1",
    "i == 2 ? p[1] : q[0]",
    "u ? d : 1",
    "1 << 4",
    "g_int >> 2",
    "g_int & 0xf",
    "g_int | 1",
    "g_int ^ 0xff",
    "'a'",
    "'a' + 1",
    "h->head == n",
    "n->next == &n->next->next[0]",
];

/// tandem's text for each expression (`<error: …>` when it refused one).
fn tandem_values(program: &PathBuf) -> Vec<String> {
    let source = sample_path(SAMPLE);
    let mut dap = DapClient::new();
    let stopped = dap.launch_to_stop(
        json!({"program": program}),
        &source,
        &[line_of(&source, MARKER)],
    );
    let thread = stopped["body"]["threadId"].as_i64().unwrap();
    let frame = dap.frames(thread)[0]["id"].as_i64().unwrap();
    let values = EXPRESSIONS
        .iter()
        .map(|e| {
            let r = dap.request(
                "evaluate",
                json!({"expression": e, "frameId": frame, "context": "watch"}),
            );
            if r["success"] == true {
                r["body"]["result"].as_str().unwrap().to_string()
            } else {
                format!("<error: {}>", r["message"].as_str().unwrap_or(""))
            }
        })
        .collect();
    dap.finish();
    values
}

/// Evaluates every expression in the build made by `compiler` and asserts that each
/// text equals gdb's.
fn expressions_equal_gdb(compiler: &str) {
    let program = build(SAMPLE, compiler, &["-g", "-O0"]);
    let (_, gdb) = gdb_locals_at(&program, SAMPLE, MARKER, EXPRESSIONS);
    assert_eq!(gdb.len(), EXPRESSIONS.len(), "gdb answered {gdb:?}");
    let ours = tandem_values(&program);
    let mut differ = Vec::new();
    for ((e, g), t) in EXPRESSIONS.iter().zip(&gdb).zip(&ours) {
        assert!(!g.is_empty(), "gdb cannot evaluate {e} ({compiler} build)");
        if g != t {
            differ.push(format!("{e}: gdb {g:?}, tandem {t:?}"));
        }
    }
    eprintln!(
        "{compiler}: {} of {} expressions equal to gdb's print",
        EXPRESSIONS.len() - differ.len(),
        EXPRESSIONS.len()
    );
    assert!(
        differ.is_empty(),
        "{compiler} build:\n{}",
        differ.join("\n")
    );
}

#[test]
fn c_expressions_equal_gdb() {
    expressions_equal_gdb("gcc");
}

#[test]
fn cpp_expressions_equal_gdb() {
    expressions_equal_gdb("g++");
}
