//! Type tests: struct layouts against gdb's `ptype /o`, and the structure of arrays,
//! enums, function pointers and Rust enums.

// Helpers outside #[test] functions panic on purpose: a broken oracle fails the test.
#![allow(clippy::unwrap_used)]

mod common;

use std::path::Path;

use symbols::{ArrayBound, Binary, CompositeKind, Type, TypeKind, TypeRef};

/// A top-level member line of `ptype /o`: (byte offset, bit offset) or none for unions, size.
type Row = (Option<(u64, Option<u64>)>, u64);

fn ptype_o(bin: &Path, ty: &str) -> (Vec<Row>, u64) {
    let out = common::gdb(bin, &[format!("ptype /o {ty}")]);
    let mut rows = Vec::new();
    let mut total = Vec::new();
    for line in out.lines() {
        if let Some(rest) = line.trim().strip_prefix("/* total size (bytes):") {
            total.push(rest.trim_end_matches("*/").trim().parse::<u64>().unwrap());
            continue;
        }
        let Some(body) = line.strip_prefix("/*") else {
            continue;
        };
        let Some((cols, decl)) = body.split_once("*/") else {
            continue;
        };
        if cols.contains("offset")
            || cols.contains("XXX")
            || !decl.starts_with("    ")
            || decl.starts_with("     ")
        {
            continue;
        }
        let (off, size) = match cols.split_once('|') {
            Some((off, size)) => {
                let off = off.trim();
                let parsed = match off.split_once(':') {
                    Some((b, bit)) => {
                        (b.trim().parse().unwrap(), Some(bit.trim().parse().unwrap()))
                    }
                    None => (off.parse().unwrap(), None),
                };
                (Some(parsed), size.trim().parse().unwrap())
            }
            None => (None, cols.trim().parse().unwrap()),
        };
        rows.push((off, size));
    }
    (rows, *total.last().unwrap())
}

fn our_layout(binary: &Binary, ty: &Type) -> (Vec<Row>, u64) {
    let TypeKind::Composite { kind, members, .. } = &ty.kind else {
        panic!("not a composite: {ty:?}")
    };
    let rows = members
        .iter()
        .map(|m| {
            // Flexible array members have no size; gdb prints 0.
            let size = binary.type_size(m.ty.unwrap()).unwrap().unwrap_or(0);
            let off = match (kind, m.bitfield) {
                (CompositeKind::Union, _) => None,
                (_, Some(b)) => Some((b.bit_offset / 8, Some(b.bit_offset % 8))),
                (_, None) => Some((m.byte_offset, None)),
            };
            (off, size)
        })
        .collect();
    (rows, ty.size.unwrap())
}

fn the_type(binary: &Binary, name: &str) -> Type {
    let found = binary.types_by_name(name);
    assert!(!found.is_empty(), "{name} not found");
    binary.type_info(found[0]).unwrap()
}

#[test]
fn struct_layouts_agree_with_gdb_ptype_o() {
    let dir = tempfile::tempdir().unwrap();
    for (fixture, flags) in [
        ("gcc-O0-dwarf5", vec!["-g", "-O0", "-gdwarf-5"]),
        ("gcc-O0-dwarf4", vec!["-g", "-O0", "-gdwarf-4"]),
        // Type units: DWARF 5 in .debug_info, DWARF 4 in .debug_types (DW_FORM_ref_sig8).
        (
            "gcc-O0-dwarf5-type-units",
            vec!["-g", "-O0", "-gdwarf-5", "-fdebug-types-section"],
        ),
        (
            "gcc-O0-dwarf4-debug-types",
            vec!["-g", "-O0", "-gdwarf-4", "-fdebug-types-section"],
        ),
        // DWARF 2 strict: DW_AT_bit_offset and DW_OP_plus_uconst member locations.
        (
            "gcc-O0-dwarf2-strict",
            vec!["-g", "-O0", "-gdwarf-2", "-gstrict-dwarf"],
        ),
    ] {
        let bin = common::build_c(dir.path(), "c/sym_lines.c", &flags, fixture);
        let binary = Binary::open(&bin).unwrap();
        for (ours, gdb) in [
            ("Shape", "struct Shape"),
            ("Flags", "struct Flags"),
            ("struct Point", "struct Point"),
            ("Number", "union Number"),
            ("Packet", "struct Packet"),
        ] {
            let ty = the_type(&binary, ours);
            let mine = our_layout(&binary, &ty);
            let (rows, total) = ptype_o(&bin, gdb);
            assert_eq!(mine.0, rows, "{fixture}: {gdb}");
            assert_eq!(mine.1, total, "{fixture}: {gdb} size");
        }
        let shape = the_type(&binary, "Shape");
        assert_eq!(shape.align, Some(8));
        // Through a variable: with type units the variable's type is a declaration
        // carrying DW_AT_signature, which must lead to the full definition.
        let main = &binary.functions_by_name("main").unwrap()[0];
        let scope = binary.scope_at(main.breakpoint_addr.unwrap()).unwrap();
        let var = scope
            .locals
            .iter()
            .find(|v| v.name.as_deref() == Some("shape"))
            .unwrap();
        let via_var = binary.type_info(var.ty.unwrap()).unwrap();
        assert_eq!(
            our_layout(&binary, &via_var),
            our_layout(&binary, &shape),
            "{fixture}"
        );
        let flags_ty = the_type(&binary, "Flags");
        let TypeKind::Composite { members, .. } = &flags_ty.kind else {
            panic!()
        };
        assert_eq!(members[1].name.as_deref(), Some("mode"));
        assert_eq!(members[1].bitfield.unwrap().bit_size, 3);
    }
}

fn ty_member(ty: &Type, i: usize) -> TypeRef {
    let TypeKind::Composite { members, .. } = &ty.kind else {
        panic!()
    };
    members[i].ty.unwrap()
}

#[test]
fn arrays_enums_and_function_pointers() {
    let dir = tempfile::tempdir().unwrap();
    let bin = common::build_c(dir.path(), "c/sym_lines.c", &["-g", "-O0"], "gcc-O0");
    let binary = Binary::open(&bin).unwrap();
    let shape = the_type(&binary, "Shape");
    // int grid[2][3]
    let grid = binary.type_info(ty_member(&shape, 2)).unwrap();
    let TypeKind::Array { dims, .. } = &grid.kind else {
        panic!("{grid:?}")
    };
    assert_eq!(
        dims.iter().map(|d| d.count.clone()).collect::<Vec<_>>(),
        vec![ArrayBound::Count(2), ArrayBound::Count(3)]
    );
    assert_eq!(grid.size, Some(24));
    assert_eq!(binary.type_name(grid.id).unwrap(), "int [2][3]");
    // Flexible array member.
    let packet = the_type(&binary, "Packet");
    let data = binary.type_info(ty_member(&packet, 1)).unwrap();
    let TypeKind::Array { dims, .. } = &data.kind else {
        panic!()
    };
    assert_eq!(dims[0].count, ArrayBound::Unknown);
    // enum Color { RED, GREEN = 4, BLUE } and the flag-like enum Perm.
    let color = binary.type_info(ty_member(&shape, 4)).unwrap();
    let TypeKind::Enum {
        enumerators,
        flag_like,
        ..
    } = &color.kind
    else {
        panic!()
    };
    assert_eq!(
        enumerators,
        &[
            ("RED".to_string(), 0),
            ("GREEN".into(), 4),
            ("BLUE".into(), 5)
        ]
    );
    assert!(!flag_like);
    let perm = the_type(&binary, "Perm");
    assert!(matches!(
        perm.kind,
        TypeKind::Enum {
            flag_like: true,
            ..
        }
    ));
    // binop_fn op: typedef → pointer → int (int, int)
    let op = binary.type_info(ty_member(&shape, 5)).unwrap();
    assert_eq!(op.name.as_deref(), Some("binop_fn"));
    assert_eq!(binary.type_name(op.id).unwrap(), "binop_fn");
    let TypeKind::Typedef(Some(ptr)) = op.kind else {
        panic!()
    };
    assert_eq!(binary.type_name(ptr).unwrap(), "int (*)(int, int)");
    // volatile int counter; const char *name
    assert_eq!(
        binary.type_name(ty_member(&shape, 6)).unwrap(),
        "volatile int"
    );
    assert_eq!(
        binary.type_name(ty_member(&shape, 0)).unwrap(),
        "const char *"
    );
}

#[test]
fn rust_enum_variant_parts() {
    let dir = tempfile::tempdir().unwrap();
    let bin = common::build_rust(dir.path(), "rust/sym_rust.rs", &[], "rustc-g");
    let binary = Binary::open(&bin).unwrap();
    let found = binary.types_by_name("sym_rust::Shape");
    assert_eq!(found.len(), 1);
    let shape = binary.type_info(found[0]).unwrap();
    let gdb = common::gdb(&bin, &["print sizeof(sym_rust::Shape)".into()]);
    let gdb_size: u64 = gdb.trim().rsplit(' ').next().unwrap().parse().unwrap();
    assert_eq!(shape.size, Some(gdb_size));
    let TypeKind::Composite {
        variant_part: Some(part),
        ..
    } = &shape.kind
    else {
        panic!("{shape:?}")
    };
    assert!(part.discriminant.is_some());
    let names: Vec<_> = part
        .variants
        .iter()
        .map(|v| v.members[0].name.clone().unwrap())
        .collect();
    assert_eq!(names, ["Circle", "Rect", "Empty"]);
    let discrs: Vec<_> = part.variants.iter().map(|v| v.discriminant).collect();
    assert_eq!(discrs, [Some(0), Some(1), Some(2)]);
    let rect = binary
        .type_info(part.variants[1].members[0].ty.unwrap())
        .unwrap();
    let TypeKind::Composite { members, .. } = &rect.kind else {
        panic!()
    };
    let fields: Vec<_> = members.iter().map(|m| m.name.clone().unwrap()).collect();
    assert_eq!(fields, ["w", "h"]);
}

#[test]
fn variable_length_array_bound_is_an_expression() {
    let dir = tempfile::tempdir().unwrap();
    let bin = common::build_c(dir.path(), "c/sym_lines.c", &["-g", "-O0"], "gcc-O0");
    let binary = Binary::open(&bin).unwrap();
    let f = &binary.functions_by_name("vla_sum").unwrap()[0];
    let scope = binary.scope_at(f.breakpoint_addr.unwrap()).unwrap();
    let values = scope
        .locals
        .iter()
        .find(|v| v.name.as_deref() == Some("values"))
        .unwrap();
    let ty = binary.type_info(values.ty.unwrap()).unwrap();
    let TypeKind::Array { dims, .. } = &ty.kind else {
        panic!("{ty:?}")
    };
    assert!(
        matches!(&dims[0].count, ArrayBound::Expr { upper_bound: true, expr } if !expr.bytes().is_empty()),
        "{dims:?}"
    );
    assert_eq!(ty.size, None, "a VLA has no static size");
}
