//! The report's figures of the run as a whole: wall and CPU time (the handler's beside the
//! program's), the share of the program's resident memory that was tiered, the pool in bytes,
//! and the plain lines: a program run untiered from an exec on, little or nothing tiered, a
//! budget far below the working set.

use serde_json::{json, Value};

use crate::report::Report;
use crate::stats::Field;

const PAGE: u64 = 4096;
/// Faults a second of wall time above which the run counts as thrashing: each costs the
/// program a wait of several microseconds (4 at the median on one CPU, tens across two), so
/// this many take a tenth of its time or more.
pub const THRASH_FAULTS_PER_SECOND: f64 = 20_000.0;
/// Faults below which no run counts as thrashing, whatever the rate (a short run's few).
pub const THRASH_MIN_FAULTS: u64 = 1000;
/// The share of the program's peak RSS below which the report says little was tiered.
pub const LITTLE_SHARE: f64 = 0.10;

fn mib(b: u64) -> String {
    format!("{:.1} MiB", b as f64 / (1 << 20) as f64)
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

impl Report {
    fn secs(ns: u64) -> f64 {
        ns as f64 / 1e9
    }

    /// The handlers' CPU time, every program the processes ran included.
    pub fn handler_cpu_ns(&self) -> u64 {
        self.get(Field::HandlerCpuNs) + self.get(Field::HandlerCpuEarlierNs)
    }

    /// The tiered pages held at once at most (resident and evicted), in bytes.
    pub fn peak_held_bytes(&self) -> u64 {
        self.get(Field::PeakHeldPages) * PAGE
    }

    /// The share of the program's peak RSS that the tier held: its resident tiered pages and
    /// its pool (the evicted pages, compressed), each at its peak, over the peak RSS (at most 1,
    /// as the peaks need not coincide; 0 when the RSS is unknown). The pool counts: a program
    /// far over its budget has most of its RSS in the pool, which is its memory tiered. With
    /// `--follow-children` the RSS is the largest of the process and the descendants it
    /// waited for, and the tier's figures the started process's own.
    pub fn tiered_share(&self) -> f64 {
        let rss = self.run.usage.max_rss_bytes;
        if rss == 0 {
            return 0.0;
        }
        (self.share_parts().iter().sum::<u64>() as f64 / rss as f64).min(1.0)
    }

    /// The resident tiered pages and the pool, in bytes, each at its peak: the started
    /// process's.
    fn share_parts(&self) -> [u64; 2] {
        let of = |f: Field| self.processes.first().map_or(self.get(f), |p| p.get(f));
        [of(Field::PeakResidentPages) * PAGE, of(Field::MaxPoolPages) * self.run.pool_page_bytes]
    }

    pub fn faults_per_second(&self) -> f64 {
        let s = self.run.elapsed.as_secs_f64();
        if s <= 0.0 {
            return 0.0;
        }
        self.get(Field::Faults) as f64 / s
    }

    /// The line when the program ended as a program the library never started in.
    pub fn untiered_message(&self) -> Option<String> {
        self.run.untiered_program.as_ref().map(|p| {
            format!(
                "{p} ran untiered from its exec on (static, setuid or setgid, or its environment \
                 cleared)"
            )
        })
    }

    /// A plain line when little or nothing was tiered, from what the tier can know ("" else).
    pub fn note(&self) -> String {
        if self.figures.is_none() || self.run.untiered_program.is_some() {
            return String::new();
        }
        // What ran in child processes, untiered: programs they executed (each counted as it
        // loaded the library), else the forks.
        let (programs, forks) = (self.get(Field::ChildPrograms), self.get(Field::Forks));
        let plural =
            |n: u64, one: &'static str, many: &'static str| if n == 1 { one } else { many };
        let forked = if self.run.follow_children {
            String::new()
        } else if programs > 0 {
            format!(
                "; it ran {programs} {}, untiered (--follow-children tiers them)",
                plural(programs, "program in a child process", "programs in child processes")
            )
        } else if forks > 0 {
            format!(
                "; it forked {forks} {}, untiered (--follow-children tiers them)",
                plural(forks, "child", "children")
            )
        } else {
            String::new()
        };
        let peak = self.get(Field::PeakResidentPages) * PAGE;
        if peak == 0 && self.get(Field::FirstTouches) == 0 {
            return format!(
                "nothing was tiered: {} took no memory the tier serves (no malloc, no anonymous \
                 mapping of its own){forked}",
                self.command
            );
        }
        if self.get(Field::Evictions) == 0 {
            return format!(
                "nothing was evicted: the tiered memory peaked at {}, within the budget \
                 ({}){forked}",
                mib(self.peak_held_bytes().max(peak)),
                mib(self.budget_bytes)
            );
        }
        let share = self.tiered_share();
        if share > 0.0 && share < LITTLE_SHARE {
            return format!(
                "little was tiered: {:.0}% of the program's peak RSS ({}); the rest is memory the \
                 tier does not serve (code, files, stacks, shared memory){forked}",
                share * 100.0,
                mib(self.run.usage.max_rss_bytes)
            );
        }
        forked.strip_prefix("; ").map_or(String::new(), str::to_string)
    }

    /// A warning when the faults say the budget is far below the working set ("" else): the
    /// program brought back at least its whole tiered memory, or faulted at a rate that costs
    /// it a tenth of its time.
    pub fn thrash(&self) -> String {
        let faults = self.get(Field::Faults);
        let held = self.peak_held_bytes();
        let back = self.get(Field::DecompressedBytes);
        let rate = self.faults_per_second();
        let cycled = held > 0 && back >= held;
        // The peak is what the run held under this budget; with room to spare a first touch
        // brings in more untouched pages, so the budget named is "about" (docs/TIER.md).
        if faults < THRASH_MIN_FAULTS || !(cycled || rate >= THRASH_FAULTS_PER_SECOND) {
            return String::new();
        }
        format!(
            "{faults} faults ({rate:.0} a second), {} decompressed ({:.1} times the tiered \
             memory's peak): the budget ({}) is far below the working set; the run would have \
             about fitted in a budget of {} (the tiered memory's peak, resident and evicted)",
            mib(back),
            if held == 0 { 0.0 } else { back as f64 / held as f64 },
            mib(self.budget_bytes),
            mib(held.div_ceil(1 << 20) << 20)
        )
    }

    /// The run's fields of the JSON, in their documented places (`report.rs` puts them).
    pub(crate) fn time_json(&self) -> [(&'static str, Value); 6] {
        let u = self.run.usage;
        [
            ("elapsed_s", json!(round3(self.run.elapsed.as_secs_f64()))),
            ("cpu_user_s", json!(round3(Self::secs(u.user_ns)))),
            ("cpu_system_s", json!(round3(Self::secs(u.system_ns)))),
            ("handler_cpu_s", json!(round3(Self::secs(self.handler_cpu_ns())))),
            ("peak_rss_bytes", json!(u.max_rss_bytes)),
            ("tiered_share", json!(round3(self.tiered_share()))),
        ]
    }

    pub(crate) fn pool_bytes(&self, f: Field) -> u64 {
        self.get(f) * self.run.pool_page_bytes
    }

    pub(crate) fn lines_json(&self) -> [(&'static str, Value); 6] {
        [
            ("execs", json!(self.get(Field::Execs))),
            ("child_programs", json!(self.get(Field::ChildPrograms))),
            ("untiered_program", json!(self.run.untiered_program.clone().unwrap_or_default())),
            ("note", json!(self.note())),
            ("faults_per_second", json!(self.faults_per_second().round())),
            ("thrash", json!(self.thrash())),
        ]
    }

    /// The text's lines of time and share, after the budget's.
    pub(crate) fn time_text(&self) -> String {
        let u = self.run.usage;
        let mut s = format!(
            "  time                  {:.2} s wall; CPU {:.2} s (user {:.2}, system {:.2}), the \
             tier's handler {:.2} s of it\n",
            self.run.elapsed.as_secs_f64(),
            Self::secs(u.user_ns + u.system_ns),
            Self::secs(u.user_ns),
            Self::secs(u.system_ns),
            Self::secs(self.handler_cpu_ns())
        );
        if u.max_rss_bytes > 0 {
            let [resident, pool] = self.share_parts();
            s += &format!(
                "  share tiered          {:.0}% of the program's peak RSS ({}): {} of tiered \
                 pages resident and a pool of {}, at their peaks\n",
                self.tiered_share() * 100.0,
                mib(u.max_rss_bytes),
                mib(resident),
                mib(pool)
            );
        }
        s
    }

    /// The plain lines, last: executed programs, little or nothing tiered, thrashing.
    pub(crate) fn lines_text(&self) -> String {
        let mut s = String::new();
        let execs = self.get(Field::Execs);
        if execs > 0 {
            s += &format!(
                "  exec                  {execs} {} executed in the same process, tiered \
                 (the figures are the process's across them)\n",
                if execs == 1 { "program" } else { "programs" }
            );
        }
        for (what, line) in [("note", self.note()), ("thrashing", self.thrash())] {
            if !line.is_empty() {
                s += &format!("  {what:<21} {line}\n");
            }
        }
        s
    }
}
