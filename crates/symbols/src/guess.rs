//! Guessing source-map rules: a binary built elsewhere (in a container, on a build
//! server) records compilation paths such as `/src/app/main.c` that do not exist here;
//! when the same relative file exists under the local workspace, the recorded prefix is
//! mapped to it (`/src` → `/home/me/proj`).

use std::collections::BTreeSet;

use std::path::{Component, Path, PathBuf};

use crate::lines::SourceMap;

/// Rules (recorded prefix → `root`) that make the recorded source `files` that do not
/// exist locally (after `map`) exist under `root`, as `exists` says. For each such file
/// the longest tail of its path found under `root` decides the prefix: `/src/app/main.c`
/// with `root/app/main.c` present gives `/src` → `root`. Files already under a rule of
/// `map` or of an earlier guess are skipped; the rules come back longest prefix first
/// (the order [`SourceMap`] needs, as its first matching rule wins).
pub fn guess_source_rules(
    files: &[PathBuf],
    map: &SourceMap,
    root: &Path,
    exists: impl Fn(&Path) -> bool,
) -> Vec<(PathBuf, PathBuf)> {
    let mut prefixes: BTreeSet<PathBuf> = BTreeSet::new();
    for file in files {
        if !file.is_absolute() || map.rules().iter().any(|(from, _)| file.starts_with(from)) {
            continue;
        }
        if prefixes.iter().any(|p| file.starts_with(p)) {
            continue;
        }
        let local = map.to_local(file);
        if exists(&local) {
            continue;
        }
        let parts: Vec<Component<'_>> = file.components().collect();
        // parts[0] is the root directory; the tail keeps at least the file name.
        for split in 1..parts.len() {
            let tail: PathBuf = parts[split..].iter().collect();
            if exists(&root.join(&tail)) {
                let prefix: PathBuf = parts[..split].iter().collect();
                // The root itself would map every path: never guess `/`.
                if prefix.parent().is_some() {
                    prefixes.insert(prefix);
                }
                break;
            }
        }
    }
    let mut rules: Vec<(PathBuf, PathBuf)> = prefixes
        .into_iter()
        .map(|p| (p, root.to_path_buf()))
        .collect();
    rules.sort_by_key(|(p, _)| std::cmp::Reverse(p.components().count()));
    rules
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    fn existing(paths: &[&str]) -> impl Fn(&Path) -> bool {
        let set: HashSet<PathBuf> = paths.iter().map(PathBuf::from).collect();
        move |p: &Path| set.contains(p)
    }

    fn files(list: &[&str]) -> Vec<PathBuf> {
        list.iter().map(PathBuf::from).collect()
    }

    #[test]
    fn a_missing_build_directory_maps_to_the_workspace() {
        let exists = existing(&["/home/me/proj/app/main.c", "/home/me/proj/app/util.h"]);
        let rules = guess_source_rules(
            &files(&["/src/app/main.c", "/src/app/util.h", "/usr/include/stdio.h"]),
            &SourceMap::new(),
            Path::new("/home/me/proj"),
            exists,
        );
        assert_eq!(
            rules,
            vec![(PathBuf::from("/src"), PathBuf::from("/home/me/proj"))]
        );
    }

    #[test]
    fn the_longest_tail_found_decides_the_prefix() {
        // Only the file name exists under the root: the whole directory is the prefix.
        let exists = existing(&["/w/main.c"]);
        let rules = guess_source_rules(
            &files(&["/build/x/main.c"]),
            &SourceMap::new(),
            Path::new("/w"),
            exists,
        );
        assert_eq!(
            rules,
            vec![(PathBuf::from("/build/x"), PathBuf::from("/w"))]
        );
    }

    #[test]
    fn files_that_exist_or_are_mapped_already_are_left_alone() {
        let exists = existing(&["/src/app/main.c", "/w/app/main.c", "/w/lib/a.c"]);
        let mut map = SourceMap::new();
        map.add("/build", "/elsewhere");
        let rules = guess_source_rules(
            &files(&["/src/app/main.c", "/build/lib/a.c", "relative/b.c"]),
            &map,
            Path::new("/w"),
            exists,
        );
        assert!(rules.is_empty(), "{rules:?}");
    }

    #[test]
    fn nothing_found_means_no_rule_and_the_root_directory_is_never_a_prefix() {
        let rules = guess_source_rules(
            &files(&["/src/app/main.c"]),
            &SourceMap::new(),
            Path::new("/w"),
            existing(&[]),
        );
        assert!(rules.is_empty());
        // `/main.c` recorded, `/w/main.c` present: mapping `/` would capture everything.
        let rules = guess_source_rules(
            &files(&["/main.c"]),
            &SourceMap::new(),
            Path::new("/w"),
            existing(&["/w/main.c"]),
        );
        assert!(rules.is_empty());
    }

    #[test]
    fn longer_prefixes_come_first() {
        let exists = existing(&["/w/main.c", "/w/app/main.c"]);
        // `/src/app/x/main.c`: tail `main.c` found → prefix `/src/app/x`; then
        // `/src/app/main.c`: tail `app/main.c` → prefix `/src`.
        let rules = guess_source_rules(
            &files(&["/src/app/x/main.c", "/src/app/main.c"]),
            &SourceMap::new(),
            Path::new("/w"),
            exists,
        );
        assert_eq!(
            rules,
            vec![
                (PathBuf::from("/src/app/x"), PathBuf::from("/w")),
                (PathBuf::from("/src"), PathBuf::from("/w")),
            ]
        );
    }
}
