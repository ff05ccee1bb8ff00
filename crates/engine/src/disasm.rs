//! Machine instructions as text: x86-64 decoded with iced-x86 and printed in AT&T
//! syntax the way gdb and objdump print it (`mov    %rsp,%rbp`).

use std::path::PathBuf;

use iced_x86::{Decoder, DecoderError, DecoderOptions, Formatter, GasFormatter, OpKind};
use symbols::Line;

/// Longest x86 instruction.
pub(crate) const MAX_INSN: usize = 15;

/// One disassembled instruction (DAP `disassemble`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Instruction {
    /// Its runtime address.
    pub address: u64,
    /// Its bytes (the program's, never a breakpoint's int3); empty when unreadable.
    pub bytes: Vec<u8>,
    /// AT&T syntax as gdb prints it, branch targets followed by `<function+offset>`
    /// and rip-relative operands by `# address`; `(bad)` for bytes that decode to no
    /// instruction, `<unreadable>` for memory that cannot be read.
    pub text: String,
    /// `main+12` (`main` at its first byte), when a symbol covers the address.
    pub symbol: Option<String>,
    /// The source file of the address, when the line table has one.
    pub file: Option<PathBuf>,
    /// The source line of the address.
    pub line: Option<Line>,
    /// Unreadable memory or bytes that are no instruction.
    pub invalid: bool,
}

/// A decoded instruction before symbols and lines are attached.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Decoded {
    pub address: u64,
    pub bytes: Vec<u8>,
    pub text: String,
    pub invalid: bool,
    /// A near branch's target, to name it.
    pub branch: Option<u64>,
    /// A rip-relative operand's address, to show it.
    pub rip_target: Option<u64>,
}

impl Decoded {
    pub(crate) fn end(&self) -> u64 {
        self.address.wrapping_add(self.bytes.len().max(1) as u64)
    }

    pub(crate) fn unreadable(address: u64) -> Decoded {
        Decoded {
            address,
            bytes: Vec::new(),
            text: "<unreadable>".into(),
            invalid: true,
            branch: None,
            rip_target: None,
        }
    }
}

fn formatter() -> GasFormatter {
    let mut f = GasFormatter::new();
    let o = f.options_mut();
    o.set_uppercase_hex(false);
    o.set_hex_prefix("0x");
    o.set_hex_suffix("");
    o.set_small_hex_numbers_in_decimal(false);
    o.set_branch_leading_zeros(false);
    o.set_displacement_leading_zeros(false);
    o.set_leading_zeros(false);
    o.set_rip_relative_addresses(true);
    // `nopl 0x0(%rax)`: an encoded zero displacement is shown, as objdump does.
    o.set_show_zero_displacements(true);
    // `(%rax,%rax,1)`: the scale of an index is always shown.
    o.set_always_show_scale(true);
    o.set_space_after_operand_separator(false);
    // gdb and objdump pad the mnemonic to 6 columns and a space.
    o.set_first_operand_char_index(7);
    f
}

/// iced names 64-bit near branches `callq`, `jmpq`, `retq` (binutils before 2.35);
/// gdb and objdump now print `call`, `jmp`, `ret`, padded as before.
fn drop_branch_suffix(text: String) -> String {
    for (long, short) in [("callq", "call"), ("jmpq", "jmp"), ("retq", "ret")] {
        let rest = match text.strip_prefix(long) {
            Some(rest) if rest.is_empty() || rest.starts_with(' ') => rest,
            _ => continue,
        };
        let operands = rest.trim_start();
        if operands.is_empty() {
            return short.to_string();
        }
        return format!("{short:<6} {operands}");
    }
    text
}

/// Whether the instruction is a shift or rotate by an implicit 1 (opcodes D0/D1:
/// iced names them `Sar_rm64_1` and so on).
fn implicit_one(insn: &iced_x86::Instruction) -> bool {
    insn.op_count() == 2
        && insn.op1_kind() == OpKind::Immediate8
        && insn.immediate8() == 1
        && format!("{:?}", insn.code()).ends_with("_1")
}

/// Decodes `bytes` (starting at runtime `address`) into at most `max` instructions.
/// Stops early at an instruction cut off by the end of `bytes`: the caller reads on
/// from [`Decoded::end`] of the last one (or reports the rest unreadable).
pub(crate) fn decode(bytes: &[u8], address: u64, max: usize) -> Vec<Decoded> {
    let mut out = Vec::new();
    let mut decoder = Decoder::with_ip(64, bytes, address, DecoderOptions::NONE);
    let mut fmt = formatter();
    let mut insn = iced_x86::Instruction::default();
    while decoder.can_decode() && out.len() < max {
        let pos = decoder.position();
        decoder.decode_out(&mut insn);
        if insn.is_invalid() {
            if decoder.last_error() == DecoderError::NoMoreBytes {
                break;
            }
            // One byte that starts no instruction, as objdump shows it; decoding goes
            // on with the next byte.
            out.push(Decoded {
                address: address.wrapping_add(pos as u64),
                bytes: bytes[pos..pos + 1].to_vec(),
                text: "(bad)".into(),
                invalid: true,
                branch: None,
                rip_target: None,
            });
            if decoder.set_position(pos + 1).is_err() {
                break;
            }
            decoder.set_ip(address.wrapping_add(pos as u64 + 1));
            continue;
        }
        let mut text = String::new();
        fmt.format(&insn, &mut text);
        let mut text = drop_branch_suffix(text);
        if text.contains(",)") {
            // With the scale always shown, iced leaves a comma where a base has no
            // index (`0x0(%rax,)`); binutils writes `0x0(%rax)`.
            text = text.replace(",)", ")");
        }
        if implicit_one(&insn) {
            // The shift-by-one encodings (D0/D1) have no count operand: binutils
            // prints `sar %rsi`, iced `sar $0x1,%rsi`.
            text = text.replacen("$0x1,", "", 1);
        }
        let branch = matches!(insn.op0_kind(), OpKind::NearBranch64 | OpKind::NearBranch32)
            .then(|| insn.near_branch_target());
        let rip_target = insn
            .is_ip_rel_memory_operand()
            .then(|| insn.ip_rel_memory_address());
        out.push(Decoded {
            address: insn.ip(),
            bytes: bytes[pos..pos + insn.len()].to_vec(),
            text,
            invalid: false,
            branch,
            rip_target,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prints_att_syntax_as_gdb_does() {
        // push %rbp; mov %rsp,%rbp; movl $0x0,-0x4(%rbp); call +0; ret
        let code = [
            0x55, 0x48, 0x89, 0xe5, 0xc7, 0x45, 0xfc, 0x00, 0x00, 0x00, 0x00, 0xe8, 0x00, 0x00,
            0x00, 0x00, 0xc3,
        ];
        let d = decode(&code, 0x1000, 100);
        let texts: Vec<&str> = d.iter().map(|i| i.text.as_str()).collect();
        assert_eq!(
            texts,
            [
                "push   %rbp",
                "mov    %rsp,%rbp",
                "movl   $0x0,-0x4(%rbp)",
                "call   0x1010",
                "ret"
            ]
        );
        assert_eq!(d[3].branch, Some(0x1010));
        assert_eq!(d[2].address, 0x1004);
        assert_eq!(d[2].bytes.len(), 7);
        // call *0x8(%rax); nopl 0x0(%rax); sar %rsi; sar $0x1,%rsi
        let d = decode(
            &[
                0xff, 0x50, 0x08, 0x0f, 0x1f, 0x40, 0x00, 0x48, 0xd1, 0xfe, 0x48, 0xc1, 0xfe, 0x01,
            ],
            0x1000,
            4,
        );
        assert_eq!(d[0].text, "call   *0x8(%rax)");
        assert_eq!(d[1].text, "nopl   0x0(%rax)");
        assert_eq!(d[2].text, "sar    %rsi");
        assert_eq!(d[3].text, "sar    $0x1,%rsi");
        // nopw 0x0(%rax,%rax,1)
        let d = decode(&[0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00], 0x1000, 1);
        assert_eq!(d[0].text, "nopw   0x0(%rax,%rax,1)");
    }

    #[test]
    fn cut_off_instructions_wait_and_bad_bytes_are_marked() {
        // A call cut off after two bytes: nothing decoded from it.
        let d = decode(&[0x55, 0xe8, 0x00], 0x1000, 100);
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].end(), 0x1001);
        // 0x06 (push %es) is invalid in 64-bit mode.
        let d = decode(&[0x06, 0xc3], 0x2000, 100);
        assert_eq!(d[0].text, "(bad)");
        assert!(d[0].invalid);
        assert_eq!((d[1].address, d[1].text.as_str()), (0x2001, "ret"));
    }
}
