//! `zsmalloc tier` removes the stats files that a run killed before it could remove its own
//! left in the temporary directory: this user's, named for processes that no longer exist.

use zsmalloc_tier::launch::remove_stale_stats;

#[test]
fn stats_files_of_processes_gone_are_removed_and_the_others_kept() {
    let dir = std::env::temp_dir().join(format!("stale-stats-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let gone = child.id();
    child.wait().unwrap();
    let names = [
        format!("zsmalloc-tier-{gone}-17.stats"),
        format!("zsmalloc-tier-{}-18.stats", std::process::id()),
        "zsmalloc-tier-x-19.stats".into(),
        format!("zsmalloc-tier-{gone}-20.trace"),
    ];
    for n in &names {
        std::fs::write(dir.join(n), b"").unwrap();
    }
    remove_stale_stats(&dir);
    let left: Vec<bool> = names.iter().map(|n| dir.join(n).exists()).collect();
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(left, [false, true, true, true], "{names:?}");
}
