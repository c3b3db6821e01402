//! The report of a tiered run: the stats file's figures as the program left them, with its
//! exit status, as JSON (`--report FILE`) and as text (stderr).

use serde_json::{json, Value};
use zsmalloc_codec::{Compressor, DEFAULT_ZSTD_LEVEL};
use zsmalloc_core::text_input::io_reason;

use crate::policy::PolicyName;
use crate::stats::{Field, Percentiles, Snapshot, State, Step};

const PAGE: u64 = 4096;

#[derive(Debug, Clone)]
pub struct Report {
    pub command: String,
    pub budget_bytes: u64,
    pub compressor: Compressor,
    /// The eviction policy the run had.
    pub policy: PolicyName,
    pub exit_status: i32,
    /// The trace of the pool's operations, as the command names it (`--record`).
    pub record: Option<String>,
    /// Pages evicted as one object (`--folio-size`).
    pub folio_pages: u32,
    /// The readahead's page-cluster (`--readahead`; 0: none).
    pub readahead: u32,
    /// The figures (with `--follow-children`, every tiered process's added up); `None` when
    /// the tier never started in the program.
    pub figures: Option<Snapshot>,
    /// With `--follow-children`: each tiered process's own figures, the started program's
    /// first (empty without the flag).
    pub processes: Vec<Snapshot>,
    /// The userfaultfd took user-mode faults only (`--user-faults-only`).
    pub user_faults_only: bool,
    /// What the command saw of the run: its time, usage and end.
    pub run: crate::ending::Ran,
}

fn state_name(state: State) -> &'static str {
    match state {
        State::NotStarted => "not started",
        State::Tiering => "tiering",
        State::SteppedAside => "stepped aside",
        State::Failed => "failed",
    }
}

/// One process's line of the JSON report.
fn process_json(p: &Snapshot) -> Value {
    json!({
        "pid": p.pid(),
        "command": p.command(),
        "state": state_name(p.state()),
        "message": p.message(),
        "peak_resident_bytes": p.get(Field::PeakResidentPages) * PAGE,
        "resident_bytes": p.get(Field::ResidentPages) * PAGE,
        "evictions": p.get(Field::Evictions),
        "faults": p.get(Field::Faults),
        "first_touches": p.get(Field::FirstTouches),
        "stored_pages": p.get(Field::StoredPages),
        "compressed_bytes": p.get(Field::CompressedBytes),
        "max_pool_pages": p.get(Field::MaxPoolPages),
        "forks": p.get(Field::Forks),
    })
}

fn ns(p: Percentiles, with_max: bool) -> Value {
    let mut v = json!({ "count": p.count, "p50": p.p50, "p99": p.p99 });
    if with_max {
        v["max"] = json!(p.max);
    }
    v
}

impl Report {
    pub(crate) fn get(&self, f: Field) -> u64 {
        self.figures.as_ref().map_or(0, |s| s.get(f))
    }

    pub fn state(&self) -> State {
        self.figures.as_ref().map_or(State::NotStarted, Snapshot::state)
    }

    /// Why the tier stepped aside or failed, or that the program ended untiered after an exec
    /// ("" otherwise).
    pub fn message(&self) -> String {
        if let Some(m) = self.untiered_message() {
            return m;
        }
        self.figures.as_ref().map(Snapshot::message).unwrap_or_default()
    }

    fn state_text(&self) -> &'static str {
        if self.run.untiered_program.is_some() {
            return "untiered after an exec";
        }
        match self.state() {
            State::NotStarted => "the tier's library did not start in it",
            State::Tiering => "tiered to the end",
            State::SteppedAside => "the tier stepped aside",
            State::Failed => "the tier failed",
        }
    }

    fn state_name(&self) -> &'static str {
        if self.run.untiered_program.is_some() {
            return "untiered after exec";
        }
        state_name(self.state())
    }

    /// The OS error in `field` as `what` says it (`{}` is the error), "" when there was none.
    fn os_error(&self, field: Field, what: &str) -> String {
        match self.get(field) {
            0 => String::new(),
            e => what.replace("{}", &io_reason(&std::io::Error::from_raw_os_error(e as i32))),
        }
    }

    /// Why the recording stopped early ("" when it did not).
    pub fn record_error(&self) -> String {
        self.os_error(Field::RecordErrno, "the record stopped: {}")
    }

    /// Why the policy's scans stopped ("" when they did not).
    pub fn scan_error(&self) -> String {
        self.os_error(Field::ScanErrno, "PAGEMAP_SCAN failed: {}; the policy went on by arrival")
    }

    pub fn fault_ns(&self) -> Percentiles {
        self.figures.as_ref().map(Snapshot::fault_ns).unwrap_or_default()
    }

    pub fn evict_ns(&self) -> Percentiles {
        self.figures.as_ref().map(Snapshot::evict_ns).unwrap_or_default()
    }

    /// Each step of the faults' service, when they were timed (`ZSMALLOC_TIER_BREAKDOWN`).
    pub fn step_ns(&self) -> Option<Vec<(Step, Percentiles)>> {
        let steps: Vec<(Step, Percentiles)> = Step::ALL
            .iter()
            .map(|&st| (st, self.figures.as_ref().map(|s| s.step_ns(st)).unwrap_or_default()))
            .collect();
        steps.iter().any(|(_, p)| p.count > 0).then_some(steps)
    }

    /// The compressor as the text names it: zstd with its level.
    fn compressor_text(&self) -> String {
        match self.compressor {
            Compressor::Zstd => format!("zstd (level {DEFAULT_ZSTD_LEVEL})"),
            c => c.name().to_string(),
        }
    }

    pub fn to_json(&self) -> Value {
        let mut fields = vec![
            ("command", json!(self.command)),
            ("state", json!(self.state_name())),
            ("message", json!(self.message())),
            ("budget_bytes", json!(self.budget_bytes)),
            ("slack_bytes", json!(crate::slack::slack_pages(self.budget_bytes / PAGE) * PAGE)),
            ("compressor", json!(self.compressor.name())),
        ];
        fields.extend(self.time_json());
        fields.extend([
            ("peak_resident_bytes", json!(self.get(Field::PeakResidentPages) * PAGE)),
            ("resident_bytes", json!(self.get(Field::ResidentPages) * PAGE)),
            ("peak_pinned_bytes", json!(self.get(Field::PeakPinnedPages) * PAGE)),
            ("pinned_bytes", json!(self.get(Field::PinnedPages) * PAGE)),
            ("peak_held_bytes", json!(self.peak_held_bytes())),
            ("evictions", json!(self.get(Field::Evictions))),
            ("faults", json!(self.get(Field::Faults))),
            ("first_touches", json!(self.get(Field::FirstTouches))),
            ("same_filled_pages", json!(self.get(Field::SameFilledPages))),
            ("stored_pages", json!(self.get(Field::StoredPages))),
            ("stored_bytes", json!(self.get(Field::StoredPages) * PAGE)),
            ("compressed_bytes", json!(self.get(Field::CompressedBytes))),
            ("pool_pages", json!(self.get(Field::PoolPages))),
            ("pool_bytes", json!(self.pool_bytes(Field::PoolPages))),
            ("max_pool_pages", json!(self.get(Field::MaxPoolPages))),
            ("max_pool_bytes", json!(self.pool_bytes(Field::MaxPoolPages))),
            ("shared_skips", json!(self.get(Field::SharedSkips))),
            ("pool_full_stops", json!(self.get(Field::PoolFullStops))),
            ("untiered_bytes", json!(self.get(Field::UntieredBytes))),
            ("forks", json!(self.get(Field::Forks))),
            ("fault_ns", ns(self.fault_ns(), true)),
            ("evict_ns", ns(self.evict_ns(), true)),
            ("policy", json!(self.policy.name())),
            ("policy_basis", json!(self.policy.basis())),
            ("second_chances", json!(self.get(Field::SecondChances))),
            ("written_scans", json!(self.get(Field::WrittenScans))),
            ("written_seen", json!(self.get(Field::WrittenSeen))),
            ("written_scan_ns", json!(self.get(Field::WrittenScanNs))),
            ("scan_error", json!(self.scan_error())),
            ("moves_despite_eexist", json!(self.get(Field::MovesDespiteEexist))),
            ("demotions", json!(self.get(Field::Demotions))),
            ("demote_ns", json!(self.get(Field::DemoteNs))),
            ("inactive_refaults", json!(self.get(Field::InactiveRefaults))),
            ("peak_inactive_bytes", json!(self.get(Field::PeakInactivePages) * PAGE)),
            ("exit_status", json!(self.exit_status)),
            ("user_faults_only", json!(self.user_faults_only)),
        ]);
        fields.extend(self.lines_json());
        let mut v = Value::Object(fields.into_iter().map(|(k, v)| (k.to_string(), v)).collect());
        if !self.processes.is_empty() {
            v["processes"] = self.processes.iter().map(process_json).collect();
            v["processes_without_slot"] = json!(self.get(Field::SlotsFull));
        }
        self.add_folio_json(&mut v);
        if let Some(steps) = self.step_ns() {
            let mean = |st| self.figures.as_ref().map_or(0, |s| s.step_mean_ns(st));
            let m: serde_json::Map<String, Value> = steps
                .into_iter()
                .map(|(st, p)| {
                    let mut v = ns(p, true);
                    v["mean"] = json!(mean(st));
                    (st.key().to_string(), v)
                })
                .collect();
            v["fault_steps_ns"] = Value::Object(m);
        }
        if let Some(path) = &self.record {
            v["record"] = json!(path);
            v["recorded_operations"] = json!(self.get(Field::RecordedOps));
            v["record_error"] = json!(self.record_error());
        }
        v
    }

    /// The text for stderr, after the program's own output.
    pub fn to_text(&self) -> String {
        let us = |n: u64| format!("{:.1}", n as f64 / 1000.0);
        let mib = |b: u64| format!("{:.1} MiB", b as f64 / (1 << 20) as f64);
        let mut s = format!(
            "zsmalloc tier: {} exited with status {} ({})\n",
            self.command,
            self.exit_status,
            self.state_text()
        );
        let msg = self.message();
        if !msg.is_empty() {
            s += &format!("  why                   {msg}\n");
        }
        if self.figures.is_none() {
            s += "  the tier's library did not start in the program: no figures\n";
            return s;
        }
        let (f, e) = (self.fault_ns(), self.evict_ns());
        s += &format!(
            "  budget                {} ({} B), policy {} ({})\n",
            mib(self.budget_bytes),
            self.budget_bytes,
            self.policy.name(),
            self.policy.basis()
        );
        s += &format!("  compressor            {}\n", self.compressor_text());
        s += &self.time_text();
        s += &format!(
            "  resident              {} at the peak, {} at the end; {} tiered at most \
             (resident and evicted)\n",
            mib(self.get(Field::PeakResidentPages) * PAGE),
            mib(self.get(Field::ResidentPages) * PAGE),
            mib(self.peak_held_bytes())
        );
        if self.get(Field::PeakPinnedPages) > 0 {
            s += &format!(
                "  pinned                {} at the peak, {} at the end (locked, PROT_NONE, or \
                 writable and executable: kept resident, beside the budget)\n",
                mib(self.get(Field::PeakPinnedPages) * PAGE),
                mib(self.get(Field::PinnedPages) * PAGE)
            );
        }
        s += &format!(
            "  evictions             {} (µs: p50 {}, p99 {}, max {})\n",
            self.get(Field::Evictions),
            us(e.p50),
            us(e.p99),
            us(e.max)
        );
        s += &format!(
            "  faults                {} on evicted pages (µs: p50 {}, p99 {}, max {}), {} first \
             touches\n",
            self.get(Field::Faults),
            us(f.p50),
            us(f.p99),
            us(f.max),
            self.get(Field::FirstTouches)
        );
        if let Some(steps) = self.step_ns() {
            let cells: Vec<String> =
                steps.iter().map(|(st, p)| format!("{} {}", st.key(), us(p.p50))).collect();
            s += &format!("  fault steps           µs p50: {}\n", cells.join(", "));
        }
        let stored = self.get(Field::StoredPages);
        s += &format!(
            "  held at the end       {} same-filled pages, {stored} pages ({}) stored in {} \
             compressed\n",
            self.get(Field::SameFilledPages),
            mib(stored * PAGE),
            mib(self.get(Field::CompressedBytes))
        );
        s += &format!(
            "  pool                  {} pages ({}), {} at most ({})\n",
            self.get(Field::PoolPages),
            mib(self.pool_bytes(Field::PoolPages)),
            self.get(Field::MaxPoolPages),
            mib(self.pool_bytes(Field::MaxPoolPages))
        );
        if self.policy == PolicyName::Lru {
            let demotions = self.get(Field::Demotions);
            s += &format!(
                "  inactive list         {} pages moved there ({:.2} µs a page), {} brought \
                 back by a touch (refaults, not in faults), {} at most\n",
                demotions,
                self.get(Field::DemoteNs) as f64 / 1e3 / demotions.max(1) as f64,
                self.get(Field::InactiveRefaults),
                mib(self.get(Field::PeakInactivePages) * PAGE)
            );
        }
        if self.policy == PolicyName::Clock {
            s += &format!(
                "  policy saw            {} pages written in {} scans ({:.1} ms in all), {} \
                 second chances (pages kept because written)\n",
                self.get(Field::WrittenSeen),
                self.get(Field::WrittenScans),
                self.get(Field::WrittenScanNs) as f64 / 1e6,
                self.get(Field::SecondChances)
            );
            let why = self.scan_error();
            if !why.is_empty() {
                s += &format!("  {:<21} {why}\n", "");
            }
        }
        if self.user_faults_only {
            s += "  user faults only      a system call on tiered memory not resident fails \
                  with EFAULT\n";
        }
        if !self.processes.is_empty() {
            s += &format!(
                "  processes             {} tiered (the figures above are their sum; the budget \
                 is each one's)\n",
                self.processes.len()
            );
            for p in &self.processes {
                s += &format!(
                    "    pid {:<8} {:<16} {} evictions, {} faults, peak {}, {}{}\n",
                    p.pid(),
                    p.command(),
                    p.get(Field::Evictions),
                    p.get(Field::Faults),
                    mib(p.get(Field::PeakResidentPages) * PAGE),
                    state_name(p.state()),
                    Some(p.message())
                        .filter(|m| !m.is_empty())
                        .map_or(String::new(), |m| format!(": {m}"))
                );
            }
            if self.get(Field::SlotsFull) > 0 {
                s += &format!(
                    "  {:<21} {} processes ran untiered: every one of the report's {} slots was \
                     taken\n",
                    "",
                    self.get(Field::SlotsFull),
                    crate::stats::SLOTS
                );
            }
        }
        let notes = [
            (Field::Forks, "forks (every page brought back before each)"),
            (Field::SharedSkips, "evictions skipped (page shared with a child or pinned)"),
            (Field::PoolFullStops, "stops with the pool full"),
            (Field::UntieredBytes, "bytes served untiered (the reserve full)"),
            (Field::MovesDespiteEexist, "pages moved out though the kernel answered EEXIST"),
        ];
        s += &self.folio_text();
        if let Some(path) = &self.record {
            s += &format!(
                "  record                {} operations to {path}\n",
                self.get(Field::RecordedOps)
            );
            let why = self.record_error();
            if !why.is_empty() {
                s += &format!("  {:<21} {why}\n", "");
            }
        }
        for (field, what) in notes {
            if self.get(field) > 0 {
                s += &format!("  {:<21} {} {what}\n", "", self.get(field));
            }
        }
        s += &self.lines_text();
        s
    }
}
