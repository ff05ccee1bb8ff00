//! Fuzz target: any bytes, opened as a binary and queried through every parsing path
//! (ELF, line tables, DIEs, types, scopes, location lists, unwind tables) must never panic.
#![no_main]

use std::io::Write;
use std::path::Path;

use libfuzzer_sys::fuzz_target;
use symbols::{Binary, FileAddr, Line, SourceMap, SymbolKind};

fuzz_target!(|data: &[u8]| {
    // Binary::open maps a file, so the input goes through a private temporary file.
    let path = std::env::temp_dir().join(format!("symbols-fuzz-{}", std::process::id()));
    let Ok(mut file) = std::fs::File::create(&path) else { return };
    if file.write_all(data).is_err() {
        return;
    }
    drop(file);
    if let Ok(binary) = Binary::open(&path) {
        let _ = binary.all_line_rows();
        if let Ok(files) = binary.source_files() {
            for f in files.iter().take(4) {
                let _ = binary.resolve_line(f, Line::from_zero_based(0), &SourceMap::new());
            }
        }
        let _ = binary.resolve_line(Path::new("a.c"), Line::from_zero_based(9), &SourceMap::new());
        let index = binary.symbol_index();
        let _ = binary.functions_by_name("main");
        for e in index.entries().take(64) {
            if let Some(r) = &e.range {
                let _ = binary.function_at(r.start);
                let _ = binary.scope_at(r.start);
                let _ = binary.unwind_row(r.start);
                let _ = binary.location_for_addr(r.start);
            }
            if e.kind == SymbolKind::Type {
                for t in binary.types_by_name(&e.name) {
                    let _ = binary.type_info(t);
                    let _ = binary.type_name(t);
                }
            }
        }
        let _ = binary.unwind_row(FileAddr(binary.info().entry.0));
    }
    let _ = std::fs::remove_file(&path);
});
