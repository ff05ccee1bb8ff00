//! Names shared across units while the symbol index is built: one allocation per
//! distinct qualified name, and one demangling per distinct linkage name.
//!
//! Why: in a C++ program every unit repeats the functions and types of the headers it
//! includes (`std::vector<int>::size`, `std::string`), so the per-unit tables held the
//! same name hundreds of times, each its own `Arc<str>`, and the same linkage name was
//! demangled and normalized once per unit. Sharing them changes no answer: an entry's
//! name is the same text, only no longer a copy.

use std::collections::{HashMap, HashSet};
use std::hash::BuildHasher;
use std::sync::{Arc, Mutex, MutexGuard};

use crate::names;

/// Shards, so that the index's worker threads rarely wait for each other.
const SHARDS: usize = 16;

/// Names are the binary's, not an adversary's: foldhash (hashbrown's own) rather than
/// SipHash, which was a tenth of the name table's build on ceph-osd.
type Hasher = foldhash::fast::FixedState;

#[derive(Default)]
struct Shard {
    names: HashSet<Arc<str>, Hasher>,
    /// Linkage name (by its [`linkage_key`]) → its demangled, normalized form (itself
    /// in `names`).
    demangled: HashMap<u128, Arc<str>, Hasher>,
    /// The same by where the linkage name is in the binary's own `.debug_str`: a linker
    /// merges equal strings, so a name repeated by unit after unit has one place.
    at: HashMap<usize, Arc<str>, Hasher>,
}

/// A shard on cache lines of its own: two threads taking neighbouring shards' locks
/// must not take each other's line (a shard is 88 bytes).
#[derive(Default)]
#[repr(align(128))]
struct Padded(Mutex<Shard>);

impl std::ops::Deref for Padded {
    type Target = Mutex<Shard>;
    fn deref(&self) -> &Mutex<Shard> {
        &self.0
    }
}

/// The shared names of one binary (see the module documentation).
#[derive(Default)]
pub(crate) struct Names {
    shards: [Padded; SHARDS],
    hasher: Hasher,
}

impl std::fmt::Debug for Names {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Names")
    }
}

impl Names {
    fn shard(&self, s: &str) -> MutexGuard<'_, Shard> {
        let i = (self.hasher.hash_one(s) as usize) % SHARDS;
        // A poisoned shard only means a worker panicked while inserting; the sets are
        // still valid (an insert either happened or not).
        self.shards[i].lock().unwrap_or_else(|e| e.into_inner())
    }

    /// `s` as the one shared copy of its text.
    pub(crate) fn intern(&self, s: &str) -> Arc<str> {
        let mut shard = self.shard(s);
        if let Some(found) = shard.names.get(s) {
            return found.clone();
        }
        let new: Arc<str> = Arc::from(s);
        shard.names.insert(new.clone());
        new
    }

    fn key_shard(&self, key: u128) -> MutexGuard<'_, Shard> {
        self.shards[(key as usize) % SHARDS]
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }

    /// The qualified name of a function with this linkage name (demangled, then
    /// normalized), shared.
    pub(crate) fn qualified_of_linkage(&self, linkage: &str) -> Arc<str> {
        let key = linkage_key(linkage);
        if let Some(found) = self.key_shard(key).demangled.get(&key) {
            return found.clone();
        }
        // Computed without holding a lock: demangling is the slow part. Two threads may
        // both compute it; they get the same text and the same interned copy.
        let qualified = self.intern(&names::normalize(&names::demangle(linkage)));
        self.key_shard(key).demangled.insert(key, qualified.clone());
        qualified
    }

    /// [`Names::qualified_of_linkage`] for the linkage name at `offset` in the binary's
    /// own `.debug_str`, which `read` reads (only when this memo lacks it); `None` when it
    /// cannot.
    pub(crate) fn qualified_of_str_at(
        &self,
        offset: usize,
        read: impl FnOnce() -> Option<String>,
    ) -> Option<Arc<str>> {
        let shard = || {
            let i = (self.hasher.hash_one(offset) as usize) % SHARDS;
            self.shards[i].lock().unwrap_or_else(|e| e.into_inner())
        };
        if let Some(found) = shard().at.get(&offset) {
            return Some(found.clone());
        }
        let qualified = self.qualified_of_linkage(&read()?);
        shard().at.insert(offset, qualified.clone());
        Some(qualified)
    }

    /// Forgets every name (the tables that hold them keep their copies): the index is
    /// built, and the maps would only hold memory.
    pub(crate) fn clear(&self) {
        for shard in &self.shards {
            let mut shard = shard.lock().unwrap_or_else(|e| e.into_inner());
            *shard = Shard::default();
        }
    }
}

/// What the memo of demangled names knows a linkage name by: its 128-bit XXH3 (see the
/// workspace's Cargo.toml), not a copy of its text.
fn linkage_key(linkage: &str) -> u128 {
    twox_hash::XxHash3_128::oneshot(linkage.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_names_share_one_copy() {
        let names = Names::default();
        let a = names.intern("ns::Class::method");
        let b = names.intern(&String::from("ns::Class::method"));
        assert!(Arc::ptr_eq(&a, &b));
        assert!(!Arc::ptr_eq(&a, &names.intern("ns::Class::other")));
    }

    #[test]
    fn a_linkage_name_gives_what_demangling_it_gives() {
        let names = Names::default();
        for linkage in [
            "_ZN2ns5Class6methodEv",
            "_ZNSt6vectorIiSaIiEE4sizeEv",
            "main",
        ] {
            let expected = names::normalize(&names::demangle(linkage));
            let first = names.qualified_of_linkage(linkage);
            assert_eq!(&*first, expected);
            // The second time from the memo: the same shared copy.
            assert!(Arc::ptr_eq(&first, &names.qualified_of_linkage(linkage)));
        }
        names.clear();
        // By its place in `.debug_str`: read once, the same shared copy as by text.
        let reads = std::cell::Cell::new(0);
        let read = || {
            reads.set(reads.get() + 1);
            Some("_ZN2ns5Class6methodEv".to_string())
        };
        let at = names.qualified_of_str_at(40, read).unwrap();
        assert!(Arc::ptr_eq(
            &at,
            &names.qualified_of_str_at(40, read).unwrap()
        ));
        assert!(Arc::ptr_eq(
            &at,
            &names.qualified_of_linkage("_ZN2ns5Class6methodEv")
        ));
        assert_eq!(reads.get(), 1);
        assert_eq!(names.qualified_of_str_at(41, || None), None);
        names.clear();
        assert_eq!(
            &*names.qualified_of_linkage("_ZN2ns5Class6methodEv"),
            names::normalize(&names::demangle("_ZN2ns5Class6methodEv"))
        );
    }
}
