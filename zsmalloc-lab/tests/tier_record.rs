//! `--record` under every eviction policy the tier has: the trace of a short run of the C test
//! program (zsmalloc-tier/tests/programs/tier_check.c, 16 MiB filled and read back twice
//! under 4 MiB) replays to the tier's own pool pages, at the peak and at the end. The policy
//! decides which pages leave, not how the pool holds them, so a policy whose trace replayed to
//! other pages would be recording something else than the pool took. Needs root (or access to
//! /dev/userfaultfd) and a C compiler; a policy whose userfaultfd features this kernel lacks is
//! skipped with the reason printed (tier_support).

mod tier_support;

use tier_support::*;
use zsmalloc_tier::policy::PolicyName;
use zsmalloc_tier::uffd::{Features, Uffd, UffdError, Wait};

/// Whether `policy` can run here: its userfaultfd features (else why not, printed).
fn runs_here(test: &str, policy: PolicyName) -> bool {
    match Uffd::open(Wait::NonBlocking, Features::MOVE | policy.features()) {
        Ok(_) => true,
        Err(e @ UffdError::FeaturesUnavailable { .. }) => {
            skip(test, &format!("--policy {}: {e}", policy.name()));
            false
        }
        Err(e) => panic!("userfaultfd: {e}"),
    }
}

#[test]
fn every_policys_trace_replays_to_the_tiers_own_pool_pages() {
    let test = "every_policys_trace_replays_to_the_tiers_own_pool_pages";
    let Some(p) = program(test) else { return };
    for policy in PolicyName::ALL {
        if !runs_here(test, policy) {
            continue;
        }
        let name = policy.name();
        let trace = tempfile(&format!("{name}.trace"));
        let t = trace.to_str().unwrap();
        let args = ["--budget", "4M", "--policy", name, "--record", t, "--"];
        let r = tier(&[&args[..], &[p.to_str().unwrap(), "fill", "16"]].concat());
        assert_tiered(&r, 4 << 20, &["first pass", "second pass"]);
        let report = r.report.as_ref().unwrap();
        assert_eq!(report["policy"], name, "{report}");
        assert_eq!(report["record_error"], "", "{report}");
        // The stores, the reads and the peak (tier_support), then the end.
        let replay = assert_replays(&r, &trace);
        assert_eq!(replay["pages"].as_u64(), Some(figure(&r, "pool_pages")), "{name}: {replay}");
        let _ = std::fs::remove_file(&trace);
    }
}
