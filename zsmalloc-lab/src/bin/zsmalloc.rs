//! The `zsmalloc` command: the lab's class tables, runs, comparisons, trace replays and the cost
//! study (docs/LAB.md is the user guide). The command line is [`zsmalloc_lab::cli`]; each command
//! is a module of [`zsmalloc_lab::commands`].
//!
//! Exit codes: 0 success; 2 bad flags, bad configuration, unreadable input or unwritable
//! output (one line on stderr); 1 a failure while running (e.g. an object that does not read
//! back as written). SIGINT, SIGTERM and SIGHUP end the process by the signal itself (a shell
//! sees 130, 143, 129) once unfinished outputs and zram devices are removed
//! ([`zsmalloc_lab::interrupt`]).

fn main() {
    // Before anything is written: an interrupted command leaves no partial output.
    zsmalloc_lab::interrupt::install();
    std::process::exit(zsmalloc_lab::cli::main_code(std::env::args_os()));
}
