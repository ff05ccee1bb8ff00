//! The address → scope index of one unit: for every address its code covers, the
//! innermost function, inlined call or lexical block there, with the chain of enclosing
//! ones. Built once per unit on first use, so looking up the function, the inlined
//! calls or the innermost block at a pc is a binary search instead of a walk over the
//! unit's DIEs (SQLite's amalgamation is one unit of about a million DIEs).
//!
//! The answers are exactly those of walking the DIEs: the function is the one with the
//! smallest total span among the unit's concrete functions covering the pc (the first
//! in DIE order among equals); below it, the first child (inlined call or lexical
//! block) whose ranges cover the pc, then that child's first such child, and so on.

use std::collections::{BTreeMap, HashMap};

use gimli::UnitOffset;

use crate::binary::Binary;
use crate::functions::{span, UnitSymbols};
use crate::units::Unit;

/// What a node of the index is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum BlockKind {
    /// A concrete function: its index in [`UnitSymbols::funcs`].
    Function(usize),
    /// A `DW_TAG_inlined_subroutine`.
    Inlined,
    /// A `DW_TAG_lexical_block`.
    Lexical,
}

/// A function, inlined call or lexical block with code.
#[derive(Clone, Debug)]
pub(crate) struct Block {
    pub(crate) offset: UnitOffset<usize>,
    pub(crate) kind: BlockKind,
    /// The enclosing block (its DIE parent); `None` for a function.
    pub(crate) parent: Option<u32>,
    pub(crate) ranges: Vec<(u64, u64)>,
}

/// One unit's index.
#[derive(Debug, Default)]
pub(crate) struct BlockIndex {
    blocks: Vec<Block>,
    /// Disjoint address segments sorted by start: (start, end, innermost block).
    segments: Vec<(u64, u64, u32)>,
}

impl BlockIndex {
    /// The innermost block at `pc`.
    pub(crate) fn at(&self, pc: u64) -> Option<u32> {
        let i = self.segments.partition_point(|s| s.0 <= pc);
        let s = self.segments.get(i.checked_sub(1)?)?;
        (pc < s.1).then_some(s.2)
    }

    pub(crate) fn block(&self, id: u32) -> Option<&Block> {
        self.blocks.get(id as usize)
    }

    /// The blocks from the function down to `innermost`, outermost first.
    pub(crate) fn chain(&self, innermost: u32) -> Vec<&Block> {
        let mut out = Vec::new();
        let mut current = Some(innermost);
        // Parents come before their children, so the walk ends; the bound is for safety.
        while let Some(id) = current {
            let Some(b) = self.block(id) else { break };
            out.push(b);
            if out.len() > self.blocks.len() {
                break;
            }
            current = b.parent;
        }
        out.reverse();
        out
    }

    /// The function whose code covers `pc` (its index in [`UnitSymbols::funcs`]).
    pub(crate) fn function_at(&self, pc: u64) -> Option<usize> {
        self.chain(self.at(pc)?).first().and_then(|b| match b.kind {
            BlockKind::Function(f) => Some(f),
            _ => None,
        })
    }

    /// How many blocks and segments it holds (for tests and logs).
    pub(crate) fn size(&self) -> (usize, usize) {
        (self.blocks.len(), self.segments.len())
    }

    fn build(binary: &Binary, unit: &Unit, syms: &UnitSymbols) -> Result<Self, gimli::Error> {
        let func_of: HashMap<UnitOffset<usize>, usize> = syms
            .funcs
            .iter()
            .enumerate()
            .filter(|(_, f)| !f.ranges.is_empty())
            .map(|(i, f)| (f.die.offset, i))
            .collect();
        let mut blocks: Vec<Block> = Vec::new();
        // Enclosing DIEs with children: (depth, the block it is, if it is one).
        let mut stack: Vec<(isize, Option<u32>)> = Vec::new();
        let mut cursor = unit.entries();
        while let Some(die) = cursor.next_dfs()? {
            let depth = die.depth();
            while stack.last().is_some_and(|s| s.0 >= depth) {
                stack.pop();
            }
            let parent = stack.last().and_then(|s| s.1);
            let id = u32::try_from(blocks.len()).unwrap_or(u32::MAX);
            let block = match die.tag() {
                gimli::DW_TAG_subprogram => func_of.get(&die.offset()).map(|&f| Block {
                    offset: die.offset(),
                    kind: BlockKind::Function(f),
                    parent: None,
                    ranges: syms.funcs[f].ranges.clone(),
                }),
                // Reached only through a block that is its direct parent, as a walk down
                // from the function would.
                tag @ (gimli::DW_TAG_inlined_subroutine | gimli::DW_TAG_lexical_block)
                    if parent.is_some() =>
                {
                    let ranges = binary.die_ranges(unit, die);
                    (!ranges.is_empty()).then(|| Block {
                        offset: die.offset(),
                        kind: if tag == gimli::DW_TAG_inlined_subroutine {
                            BlockKind::Inlined
                        } else {
                            BlockKind::Lexical
                        },
                        parent,
                        ranges,
                    })
                }
                _ => None,
            };
            let this = block.map(|b| {
                blocks.push(b);
                id
            });
            if die.has_children() {
                stack.push((depth, this));
            }
            if blocks.len() >= u32::MAX as usize {
                break;
            }
        }
        let mut map = Segments::default();
        // Functions: the smallest span wins, the first in DIE order among equals — so
        // painted largest first, later ones among equals first.
        let mut functions: Vec<u32> = (0..blocks.len() as u32)
            .filter(|&i| blocks[i as usize].parent.is_none())
            .collect();
        functions.sort_by_key(|&i| {
            (
                std::cmp::Reverse(span(&blocks[i as usize].ranges)),
                std::cmp::Reverse(i),
            )
        });
        for &f in &functions {
            for &(lo, hi) in &blocks[f as usize].ranges {
                map.paint(lo, hi, f, None);
            }
        }
        // Below a function, in DIE order: a block takes only addresses where its parent
        // is the innermost so far (so where the walk reaches the parent and no earlier
        // sibling took them).
        for (i, b) in blocks.iter().enumerate() {
            if let Some(parent) = b.parent {
                for &(lo, hi) in &b.ranges {
                    map.paint(lo, hi, i as u32, Some(parent));
                }
            }
        }
        Ok(BlockIndex {
            blocks,
            segments: map.0.into_iter().map(|(s, (e, b))| (s, e, b)).collect(),
        })
    }
}

/// Disjoint segments being painted: start → (end, block).
#[derive(Default)]
struct Segments(BTreeMap<u64, (u64, u32)>);

impl Segments {
    /// Paints `[lo, hi)` with `block`: everywhere when `over` is `None`, else only the
    /// parts painted with `over`.
    fn paint(&mut self, lo: u64, hi: u64, block: u32, over: Option<u32>) {
        if lo >= hi {
            return;
        }
        let overlapping: Vec<(u64, u64, u32)> = self
            .0
            .range(..hi)
            .rev()
            .take_while(|(_, &(end, _))| end > lo)
            .map(|(&s, &(e, b))| (s, e, b))
            .collect();
        match over {
            None => {
                for (s, e, b) in overlapping {
                    self.0.remove(&s);
                    if s < lo {
                        self.0.insert(s, (lo, b));
                    }
                    if e > hi {
                        self.0.insert(hi, (e, b));
                    }
                }
                self.0.insert(lo, (hi, block));
            }
            Some(parent) => {
                for (s, e, b) in overlapping {
                    if b != parent {
                        continue;
                    }
                    self.0.remove(&s);
                    if s < lo {
                        self.0.insert(s, (lo, b));
                    }
                    if e > hi {
                        self.0.insert(hi, (e, b));
                    }
                    self.0.insert(s.max(lo), (e.min(hi), block));
                }
            }
        }
    }
}

impl Binary {
    /// The address → scope index of a unit, built on first use and cached.
    pub(crate) fn block_index(
        &self,
        index: usize,
    ) -> crate::error::Result<std::sync::Arc<BlockIndex>> {
        let slot = self
            .units()
            .get(index)
            .ok_or(crate::error::Error::BadReference(index as u64))?;
        let result = slot.blocks.get_or_init(|| {
            let syms = self
                .unit_functions(index)
                .map_err(|_| gimli::Error::MissingUnitDie)?;
            let unit = self.unit(index).map_err(|_| gimli::Error::MissingUnitDie)?;
            let started = std::time::Instant::now();
            let built = BlockIndex::build(self, &unit, &syms)?;
            tracing::debug!(
                unit = index,
                blocks = built.size().0,
                segments = built.size().1,
                elapsed = ?started.elapsed(),
                "address → scope index built"
            );
            Ok(std::sync::Arc::new(built))
        });
        result.clone().map_err(crate::error::Error::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn painted(s: &Segments) -> Vec<(u64, u64, u32)> {
        s.0.iter().map(|(&a, &(b, c))| (a, b, c)).collect()
    }

    #[test]
    fn painting_keeps_segments_disjoint_and_innermost() {
        let mut s = Segments::default();
        s.paint(0, 100, 0, None);
        s.paint(40, 60, 1, None);
        assert_eq!(painted(&s), vec![(0, 40, 0), (40, 60, 1), (60, 100, 0)]);
        // A child of 0 takes only 0's parts; one of 1 only 1's.
        s.paint(30, 70, 2, Some(0));
        assert_eq!(
            painted(&s),
            vec![
                (0, 30, 0),
                (30, 40, 2),
                (40, 60, 1),
                (60, 70, 2),
                (70, 100, 0)
            ]
        );
        s.paint(45, 200, 3, Some(1));
        assert_eq!(
            painted(&s),
            vec![
                (0, 30, 0),
                (30, 40, 2),
                (40, 45, 1),
                (45, 60, 3),
                (60, 70, 2),
                (70, 100, 0)
            ]
        );
        // A later sibling never takes what an earlier one took.
        s.paint(30, 35, 4, Some(0));
        assert_eq!(painted(&s)[1], (30, 40, 2));
        // Empty and reversed ranges paint nothing.
        s.paint(10, 10, 5, None);
        s.paint(20, 10, 5, None);
        assert!(painted(&s).iter().all(|x| x.2 != 5));
    }
}
