//! `lsp::diagnostics::diagnose_text`, the check of an unsaved C or C++ text that the agent
//! face calls: the real compiler reads the text from stdin with the file's flags from
//! compile_commands.json, and its diagnostics come back in the text's own lines and columns.
#![allow(clippy::unwrap_used)] // Test code: a failed unwrap is a failed test.

use std::path::PathBuf;

use lsp::diagnostics::{diagnose_text, DiagnoseError, Severity};

fn scratch(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tandem-diagnose-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("build")).unwrap();
    dir
}

#[test]
fn an_unsaved_text_gets_the_compilers_diagnostics_with_the_files_flags() {
    let dir = scratch("c");
    std::fs::write(dir.join("defs.h"), "#define ANSWER 42\n").unwrap();
    // The entry compiles in build/: "defs.h" is found only through -iquote the file's
    // directory; WANT comes only from the entry's flags.
    std::fs::write(
        dir.join("compile_commands.json"),
        serde_json::json!([{"directory": dir.join("build").display().to_string(),
            "file": "../draft.c",
            "arguments": ["cc", "-DWANT=1", "-Wall", "-c", "../draft.c", "-o", "draft.o"]}])
        .to_string(),
    )
    .unwrap();
    let file = dir.join("draft.c");
    // The file on disk is not what is checked (it need not exist at all).
    let text = "#include \"defs.h\"\nint main(void) {\n    int unused;\n#if WANT\n    return ANSWR;\n#endif\n}\n";
    let found = diagnose_text(&file, text).unwrap();
    let errors: Vec<_> = found
        .iter()
        .filter(|d| d.severity == Severity::Error)
        .collect();
    assert_eq!(errors.len(), 1, "{found:?}");
    let e = errors[0];
    assert_eq!(
        (e.line, e.column, e.end_line, e.end_column),
        (5, 12, 5, 17),
        "{e:?}"
    );
    assert!(e.message.contains("ANSWR"), "{e:?}");
    let unused = found
        .iter()
        .find(|d| d.code.as_deref() == Some("-Wunused-variable"))
        .unwrap_or_else(|| panic!("-Wall from the entry: {found:?}"));
    assert_eq!((unused.line, unused.column), (3, 9));
    assert_eq!(unused.severity, Severity::Warning);

    // Fixed text: nothing.
    let fixed = text
        .replace("ANSWR", "ANSWER")
        .replace("    int unused;\n", "");
    assert_eq!(diagnose_text(&file, &fixed).unwrap(), vec![]);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn cpp_is_checked_as_cpp_and_rust_is_refused() {
    let dir = scratch("cpp");
    let found = diagnose_text(
        &dir.join("a.cpp"),
        "template <typename T> T twice(T x) { return x + x; }\nint main() { return twice(1) + nothing; }\n",
    )
    .unwrap();
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!((found[0].line, found[0].column), (2, 32));
    assert!(matches!(
        diagnose_text(&dir.join("lib.rs"), "fn f() {}"),
        Err(DiagnoseError::Unsupported(_))
    ));
    let _ = std::fs::remove_dir_all(&dir);
}
