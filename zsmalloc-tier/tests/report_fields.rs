//! The JSON report's fields are those docs/TIER.md ("The report") lists, in its order: a report
//! with every optional part present (processes, timed steps, a record) is made from figures
//! written as the library writes them, and its keys read against the list.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use zsmalloc_codec::Compressor;
use zsmalloc_tier::ending::{Ran, Usage};
use zsmalloc_tier::policy::PolicyName;
use zsmalloc_tier::report::Report;
use zsmalloc_tier::stats::{Field, Snapshot, State, Step, Words, MAGIC, WORDS};

/// A process's block as the library leaves it: tiered, some pages evicted and faulted, one
/// step timed.
fn block() -> Snapshot {
    let words: Box<[AtomicU64; WORDS]> = Box::new(std::array::from_fn(|_| AtomicU64::new(0)));
    let w = Words(&words);
    w.set(Field::Magic, MAGIC);
    w.set_state(State::Tiering, "");
    w.set(Field::ResidentPages, 10);
    w.raise(Field::PeakResidentPages, 10);
    w.add(Field::FirstTouches, 1);
    w.add(Field::StoredPages, 5);
    w.add(Field::Evictions, 5);
    w.add(Field::Faults, 2);
    w.fault(3000);
    w.eviction(9000);
    w.step(Step::Copy, 1200);
    let bytes: Vec<u8> =
        words.iter().flat_map(|a| a.load(Ordering::Relaxed).to_ne_bytes()).collect();
    Snapshot::from_bytes(&bytes).expect("a block")
}

/// The field names the list in "The report" gives, in order (a bullet may name several).
fn documented() -> Vec<String> {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/TIER.md"))
        .expect("docs/TIER.md");
    let section = doc.split("\n## The report\n").nth(1).expect("the section");
    let section = section.split("\n## ").next().unwrap();
    let mut names = Vec::new();
    for line in section.lines().filter(|l| l.starts_with("- `")) {
        let head = line.split(": ").next().unwrap();
        names.extend(head.split('`').skip(1).step_by(2).map(str::to_string));
    }
    names
}

#[test]
fn the_json_fields_are_the_documented_ones_in_their_order() {
    let first = block();
    let report = Report {
        command: "prog".into(),
        budget_bytes: 4 << 20,
        compressor: Compressor::Lz4,
        policy: PolicyName::Fifo,
        exit_status: 0,
        record: Some("t.trace".into()),
        folio_pages: 1,
        readahead: 0,
        figures: Snapshot::total(&[first.clone(), block()]),
        processes: vec![first, block()],
        user_faults_only: false,
        run: Ran {
            elapsed: Duration::from_millis(1500),
            usage: Usage {
                user_ns: 1_000_000_000,
                system_ns: 200_000_000,
                max_rss_bytes: 48 << 10,
            },
            untiered_program: None,
            follow_children: true,
            pool_page_bytes: 4096,
        },
    };
    let json = report.to_json();
    let keys: Vec<String> = json.as_object().expect("an object").keys().cloned().collect();
    assert_eq!(keys, documented(), "docs/TIER.md, \"The report\", lists them in this order");
    // The figures behind a few of the new fields.
    assert_eq!(json["elapsed_s"], 1.5);
    assert_eq!(json["peak_held_bytes"], 2 * 15 * 4096, "two processes' peaks of 15 pages");
    assert_eq!(json["pool_bytes"], 0);
    assert_eq!(json["tiered_share"], 0.833, "10 pages resident of 12 in the RSS");
    assert_eq!(json["note"], "", "evictions, most of the RSS tiered, children followed");
}
