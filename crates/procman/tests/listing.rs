//! The /proc listing behind `tandem ps`.

use procman::{format_table, list_processes, read_process};
use tracer::Pid;

#[test]
fn lists_this_process_with_its_parent_user_and_exe() {
    let me = std::process::id() as i32;
    let rows = list_processes();
    let row = rows.iter().find(|r| r.pid.0 == me).expect("this process");
    // SAFETY: getppid has no preconditions.
    assert_eq!(row.ppid.0, unsafe { libc::getppid() });
    // SAFETY: getuid has no preconditions.
    assert_eq!(row.uid, unsafe { libc::getuid() });
    if row.uid == 0 {
        assert_eq!(row.user, "root");
    }
    assert_eq!(row.exe.as_deref(), std::env::current_exe().ok().as_deref());
    assert!(!row.cmdline.is_empty());
    assert!(rows.windows(2).all(|w| w[0].pid < w[1].pid), "sorted");
    assert!(read_process(Pid(-5)).is_none());
}

#[test]
fn table_and_pairs() {
    let me = std::process::id() as i32;
    let row = read_process(Pid(me)).expect("me");
    let table = format_table(std::slice::from_ref(&row));
    let mut lines = table.lines();
    let header = lines.next().expect("header");
    assert!(header.trim_start().starts_with("PID"));
    assert!(header.contains("PPID") && header.contains("USER") && header.contains("COMMAND"));
    let line = lines.next().expect("row");
    assert!(line.trim_start().starts_with(&me.to_string()));
    assert!(line.ends_with(&row.command()));
    let pairs = row.to_pairs();
    assert_eq!(pairs[0], ("pid", me.to_string()));
    assert!(pairs.iter().any(|(k, _)| *k == "command"));
}
