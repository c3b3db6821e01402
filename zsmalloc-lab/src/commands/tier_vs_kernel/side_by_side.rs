//! The two runs side by side: the tier's figures (from its report's JSON) beside the kernel
//! run's ([`Measured`]), as text for stderr and as the report's `kernel` object.

use serde_json::{json, Value};

use super::kernel_run::Measured;

/// The kernel run with what it was given.
pub struct KernelSide {
    pub m: Measured,
    pub budget: u64,
    pub untiered: u64,
    pub limit: u64,
    pub disksize: u64,
    pub page_size: u64,
}

fn mib(b: u64) -> String {
    format!("{:.1} MiB", b as f64 / (1 << 20) as f64)
}

fn num(v: &Value, key: &str) -> u64 {
    v[key].as_u64().unwrap_or(0)
}

impl KernelSide {
    /// Swap-ins: the cgroup's `pswpin` where its `memory.stat` has one, else the machine's.
    pub fn swap_ins(&self) -> (u64, &'static str) {
        self.counted("pswpin")
    }

    pub fn swap_outs(&self) -> (u64, &'static str) {
        self.counted("pswpout")
    }

    fn counted(&self, key: &str) -> (u64, &'static str) {
        match self.m.cgroup_stat.get(key) {
            Some(&n) => (n, "cgroup"),
            None => (self.m.machine.get(key).copied().unwrap_or(0), "machine-wide"),
        }
    }

    /// Killed: by the OOM killer in its cgroup, by a signal, or at the timeout.
    pub fn killed(&self) -> Option<String> {
        if self.m.oom_kills.unwrap_or(0) > 0 {
            return Some(format!("OOM ({} kills in its cgroup)", self.m.oom_kills.unwrap_or(0)));
        }
        if self.m.timed_out {
            return Some("at the timeout".into());
        }
        (self.m.exit_status > 128).then(|| format!("signal {}", self.m.exit_status - 128))
    }

    pub fn to_json(&self) -> Value {
        let (ins, ins_from) = self.swap_ins();
        let (outs, outs_from) = self.swap_outs();
        let m = &self.m;
        let r3 = |x: f64| (x * 1000.0).round() / 1000.0;
        json!({
            "device": m.device,
            "compressor": m.compressor,
            "disksize_bytes": self.disksize,
            "cgroup": m.cgroup_version,
            "memory_limit_bytes": self.limit,
            "budget_bytes": self.budget,
            "untiered_bytes": self.untiered,
            "elapsed_s": r3(m.elapsed.as_secs_f64()),
            "cpu_user_s": r3(m.usage.user_ns as f64 / 1e9),
            "cpu_system_s": r3(m.usage.system_ns as f64 / 1e9),
            "peak_rss_bytes": m.usage.max_rss_bytes,
            "swap_ins": ins,
            "swap_ins_from": ins_from,
            "swap_outs": outs,
            "swap_outs_from": outs_from,
            "machine_pswpin": m.machine.get("pswpin").copied().unwrap_or(0),
            "machine_pswpout": m.machine.get("pswpout").copied().unwrap_or(0),
            "workingset_refault_anon": m.cgroup_stat.get("workingset_refault_anon"),
            "pool_pages": m.last.mem_used_total / self.page_size,
            "mem_used_total": m.last.mem_used_total,
            "max_pool_pages": m.after.mem_used_max / self.page_size,
            "mem_used_max": m.after.mem_used_max,
            "compressed_bytes": m.last.compr_data_size,
            "compr_data_size": m.last.compr_data_size,
            "orig_data_size": m.last.orig_data_size,
            "same_pages": m.last.same_pages,
            "cgroup_peak_bytes": m.cgroup_peak,
            "oom_kill": m.oom_kills,
            "killed": self.killed(),
            "timed_out": m.timed_out,
            "exit_status": m.exit_status,
        })
    }

    /// The side-by-side text; `tier` is the tier report's JSON.
    pub fn to_text(&self, tier: &Value) -> String {
        let k = self.to_json();
        let pages = |v: &Value, p: &str, b: &str| format!("{} ({})", num(v, p), mib(num(v, b)));
        let secs = |v: &Value, key: &str| format!("{:.2} s", v[key].as_f64().unwrap_or(0.0));
        let cpu = |v: &Value| {
            let (u, s) = (
                v["cpu_user_s"].as_f64().unwrap_or(0.0),
                v["cpu_system_s"].as_f64().unwrap_or(0.0),
            );
            format!("{:.2} s ({u:.2} + {s:.2})", u + s)
        };
        let tier_killed = match num(tier, "exit_status") {
            s if s > 128 => format!("signal {}", s - 128),
            _ => "no".into(),
        };
        let (ins, ins_from) = self.swap_ins();
        let (outs, outs_from) = self.swap_outs();
        let refaults = self.m.cgroup_stat.get("workingset_refault_anon");
        let rows: Vec<(&str, String, String)> = vec![
            ("wall", secs(tier, "elapsed_s"), secs(&k, "elapsed_s")),
            ("cpu (user+sys)", cpu(tier), cpu(&k)),
            (
                "faults / swap-ins",
                num(tier, "faults").to_string(),
                format!(
                    "{ins} pswpin ({ins_from}){}",
                    refaults.map_or(String::new(), |r| format!(", {r} anon refaults (cgroup)"))
                ),
            ),
            (
                "evictions / swap-outs",
                num(tier, "evictions").to_string(),
                format!("{outs} pswpout ({outs_from})"),
            ),
            (
                "pool at the end",
                pages(tier, "pool_pages", "pool_bytes"),
                format!(
                    "{} mem_used_total, last while it ran",
                    pages(&k, "pool_pages", "mem_used_total")
                ),
            ),
            (
                "pool at the peak",
                pages(tier, "max_pool_pages", "max_pool_bytes"),
                format!("{} mem_used_max", pages(&k, "max_pool_pages", "mem_used_max")),
            ),
            (
                "compressed bytes",
                num(tier, "compressed_bytes").to_string(),
                format!("{} compr_data_size", num(&k, "compr_data_size")),
            ),
            ("peak RSS", mib(num(tier, "peak_rss_bytes")), mib(num(&k, "peak_rss_bytes"))),
            (
                "killed",
                tier_killed,
                self.killed().unwrap_or_else(|| {
                    format!(
                        "no (oom_kill {})",
                        self.m.oom_kills.map_or("?".into(), |n| n.to_string())
                    )
                }),
            ),
            ("exit status", num(tier, "exit_status").to_string(), self.m.exit_status.to_string()),
        ];
        let mut s = format!(
            "zsmalloc tier --vs-kernel: the same program under the kernel's zram swap ({}, {}, \
             disksize {}), in a memory cgroup ({}) limited to {} = the budget {} + {} measured \
             outside tiered memory (the tier run's peak RSS less its tiered peak)\n",
            self.m.device,
            self.m.compressor,
            mib(self.disksize),
            self.m.cgroup_version,
            mib(self.limit),
            mib(self.budget),
            mib(self.untiered)
        );
        s += &format!("  {:<22} {:<28} {}\n", "", "tier", "kernel");
        for (what, t, kern) in rows {
            s += &format!("  {what:<22} {t:<28} {kern}\n");
        }
        if ins_from == "machine-wide" || outs_from == "machine-wide" {
            s += "  (machine-wide: /proc/vmstat deltas over the kernel run, every process's swap \
                  included; this kernel's cgroup memory.stat has no pswpin/pswpout)\n";
        }
        s
    }
}
