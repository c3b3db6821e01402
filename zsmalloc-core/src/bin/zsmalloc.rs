//! The `zsmalloc` command (the lab). Subcommands arrive with the lab issue.
fn main() {
    eprintln!("zsmalloc: the lab's subcommands (classes, run, compare, replay) are not built yet");
    std::process::exit(2);
}
