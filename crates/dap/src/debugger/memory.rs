//! disassemble, readMemory, writeMemory.

use super::*;

impl Debugger {
    pub(crate) fn disassemble(
        &mut self,
        args: DisassembleArguments,
    ) -> Result<DisassembleBody, Failure> {
        let base = parse_address(&args.memory_reference)?;
        let addr = base.wrapping_add_signed(args.offset.unwrap_or(0));
        let count = usize::try_from(args.instruction_count)
            .map_err(|_| Failure("instructionCount must not be negative".into()))?;
        if count > 100_000 {
            return Err("instructionCount is too large (at most 100000)".into());
        }
        let instructions = self
            .debuggee()?
            .session
            .inspect()
            .disassemble(addr, args.instruction_offset.unwrap_or(0), count)
            .map_err(fail)?;
        let resolve = args.resolve_symbols != Some(false);
        let mut last_file: Option<PathBuf> = None;
        let mut out = Vec::with_capacity(instructions.len());
        for i in instructions {
            let location = match &i.file {
                Some(f) if last_file.as_ref() != Some(f) => Some(self.local_source(f)),
                _ => None,
            };
            if i.file.is_some() {
                last_file = i.file.clone();
            }
            out.push(DisassembledInstruction {
                address: format!("{:#x}", i.address),
                instruction_bytes: (!i.bytes.is_empty()).then(|| {
                    i.bytes
                        .iter()
                        .map(|b| format!("{b:02x}"))
                        .collect::<Vec<_>>()
                        .join(" ")
                }),
                instruction: if i.invalid { "??".into() } else { i.text },
                symbol: if resolve { i.symbol } else { None },
                location,
                line: i.line.map(|l| self.line_out(i64::from(l.get()))),
                presentation_hint: i.invalid.then(|| "invalid".to_string()),
            });
        }
        Ok(DisassembleBody { instructions: out })
    }

    pub(crate) fn read_memory(
        &mut self,
        args: ReadMemoryArguments,
    ) -> Result<ReadMemoryBody, Failure> {
        use base64::Engine as _;
        let base = parse_address(&args.memory_reference)?;
        let addr = base.wrapping_add_signed(args.offset.unwrap_or(0));
        if args.count < 0 {
            return Err("count must not be negative".into());
        }
        let count = args.count.min(MAX_READ);
        let data = if count == 0 {
            Vec::new()
        } else {
            match self
                .debuggee()?
                .session
                .inspect()
                .read_memory(addr, count as usize)
            {
                Ok(d) => d,
                Err(engine::Error::Running) => return Err("the program is running".into()),
                Err(engine::Error::Exited) => return Err("the process has exited".into()),
                Err(_) => Vec::new(),
            }
        };
        let unreadable = count - data.len() as i64;
        Ok(ReadMemoryBody {
            address: format!("{addr:#x}"),
            unreadable_bytes: (unreadable > 0).then_some(unreadable),
            data: Some(base64::engine::general_purpose::STANDARD.encode(&data)),
        })
    }

    pub(crate) fn write_memory(
        &mut self,
        args: WriteMemoryArguments,
    ) -> Result<WriteMemoryBody, Failure> {
        use base64::Engine as _;
        let base = parse_address(&args.memory_reference)?;
        let addr = base.wrapping_add_signed(args.offset.unwrap_or(0));
        let data = base64::engine::general_purpose::STANDARD
            .decode(args.data.trim())
            .map_err(|e| format!("data is not base64: {e}"))?;
        let len = data.len() as i64;
        self.live()?
            .engine()
            .write_memory(addr, data)
            .map_err(|e| format!("cannot write {len} bytes at {addr:#x}: {e}"))?;
        if self.client.invalidated {
            self.after("invalidated", json!({"areas": ["variables"]}));
        }
        Ok(WriteMemoryBody {
            offset: None,
            bytes_written: Some(len),
        })
    }
}
