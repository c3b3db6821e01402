//! The operation sequences `model.rs` draws: pool setups (page size, chain, class delta, chain
//! policy, read mode, backing), object lengths, read paths and operations, and the proptest
//! runner.

use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use zsmalloc_core::{
    Backing, Classic, Fixed, Heuristic, PolicyRef, PoolConfig, ReadMode, HANDLE_SIZE,
};

#[derive(Debug, Clone, Copy)]
pub enum Policy {
    Classic,
    Heuristic,
    Fixed(u32),
}

#[derive(Debug, Clone)]
pub struct Setup {
    pub page: u32,
    pub chain: u32,
    pub delta: u32,
    pub policy: Policy,
    /// Lengths most objects cluster around, so that zspages fill and fullness groups move.
    pub anchors: [u32; 3],
    pub mode: ReadMode,
    pub backing: Backing,
}

impl Setup {
    pub fn config(&self) -> PoolConfig {
        PoolConfig {
            page_size: self.page,
            chain_size: self.chain,
            class_delta: self.delta,
            chain_policy: match self.policy {
                Policy::Classic => PolicyRef::new(Classic),
                Policy::Heuristic => PolicyRef::new(Heuristic),
                Policy::Fixed(n) => PolicyRef::new(Fixed(n)),
            },
            read_mode: self.mode,
            backing: self.backing,
            ..Default::default()
        }
    }

    pub fn copies(&self) -> bool {
        self.mode == ReadMode::Copy
    }
}

pub const MODES: [ReadMode; 3] = [ReadMode::Copy, ReadMode::Map, ReadMode::Contiguous];

/// How a length is picked: near an anchor (most of the time) or anywhere in 1..=page.
#[derive(Debug, Clone, Copy)]
pub struct Len {
    pub sel: u8,
    pub jitter: u32,
}

impl Len {
    pub fn get(self, s: &Setup) -> usize {
        let page = s.page as usize;
        let len = match self.sel % 8 {
            0..=5 => {
                let a = s.anchors[self.sel as usize % 3] as usize;
                (a + (self.jitter % 33) as usize).saturating_sub(16)
            }
            6 => [1, 2, page - HANDLE_SIZE, page - 7, page - 1, page][self.jitter as usize % 6],
            _ => 1 + self.jitter as usize % page,
        };
        len.clamp(1, page)
    }
}

#[derive(Debug, Clone, Copy)]
pub enum ReadHow {
    Section,
    Into,
    ToVec,
    Sg,
}

#[derive(Debug, Clone)]
pub enum Op {
    /// Store through the safe layer (`raw == false`) or into a boxed raw word.
    Store {
        len: Len,
        raw: bool,
    },
    /// malloc, then write the whole object.
    MallocWrite {
        len: Len,
        raw: bool,
    },
    /// Overwrite a live object with new bytes of the same length.
    Rewrite {
        victim: usize,
    },
    Free {
        victim: usize,
    },
    Read {
        victim: usize,
        how: ReadHow,
    },
    /// Move a raw object to a new word (`handle_move_raw`).
    Move {
        victim: usize,
    },
    Compact,
    /// Compact while a read section of `victim` is open: its zspage must be skipped.
    CompactWhileReading {
        victim: usize,
    },
}

pub fn setup() -> impl Strategy<Value = Setup> {
    (
        prop::sample::select(vec![4096u32, 8192, 16384, 32768, 65536]),
        1u32..=16,
        prop::sample::select(vec![0u32, 0, 8, 16, 24, 32, 64, 128, 256, 1024]),
        prop_oneof![
            3 => Just(Policy::Classic),
            2 => Just(Policy::Heuristic),
            2 => (1u32..=16).prop_map(Policy::Fixed),
        ],
        any::<[u32; 3]>(),
        0usize..3,
        any::<bool>(),
    )
        .prop_map(|(page, chain, delta, policy, a, mode, memfd)| Setup {
            page,
            chain,
            delta: if delta >= page { 0 } else { delta },
            policy,
            // Mostly small and medium objects, one anchor anywhere.
            anchors: [1 + a[0] % 512, 1 + a[1] % (page / 4), 1 + a[2] % page],
            mode: MODES[mode],
            backing: if memfd { Backing::Memfd } else { Backing::Anonymous },
        })
}

pub fn len() -> impl Strategy<Value = Len> {
    (any::<u8>(), any::<u32>()).prop_map(|(sel, jitter)| Len { sel, jitter })
}

pub fn op() -> impl Strategy<Value = Op> {
    let victim = any::<usize>();
    prop_oneof![
        30 => (len(), any::<bool>()).prop_map(|(len, raw)| Op::Store { len, raw }),
        8 => (len(), any::<bool>()).prop_map(|(len, raw)| Op::MallocWrite { len, raw }),
        4 => victim.prop_map(|victim| Op::Rewrite { victim }),
        25 => victim.prop_map(|victim| Op::Free { victim }),
        15 => (victim, prop_oneof![
            Just(ReadHow::Section), Just(ReadHow::Into), Just(ReadHow::ToVec), Just(ReadHow::Sg)
        ])
            .prop_map(|(victim, how)| Op::Read { victim, how }),
        3 => victim.prop_map(|victim| Op::Move { victim }),
        2 => Just(Op::Compact),
        1 => victim.prop_map(|victim| Op::CompactWhileReading { victim }),
    ]
}

/// Cases per property test: `PROPTEST_CASES` if set, else `default`.
pub fn cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// A proptest runner of `cases(default_cases)` cases, nothing persisted.
pub fn runner(default_cases: u32) -> TestRunner {
    TestRunner::new(Config {
        cases: cases(default_cases),
        failure_persistence: None,
        ..Config::default()
    })
}
