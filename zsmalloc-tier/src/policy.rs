//! The tier's eviction policies by name, as `--policy` takes them and the report names them,
//! with what each knows of the pages' use and the userfaultfd features it needs. The library
//! (crate `zsmalloc-tier-preload`, its `policy` module) implements them.

use crate::uffd::Features;

/// An eviction policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PolicyName {
    /// Oldest arrival first.
    #[default]
    Fifo,
    /// Second chance: a page written since the hand last passed it goes round again.
    Clock,
    /// Two lists as the kernel's LRU: pages leave the program's memory uncompressed first (the
    /// inactive list), so that a touch there is seen, and brings them back cheaply.
    Lru,
}

impl PolicyName {
    pub const ALL: [PolicyName; 3] = [PolicyName::Fifo, PolicyName::Clock, PolicyName::Lru];

    pub fn name(self) -> &'static str {
        match self {
            PolicyName::Fifo => "fifo",
            PolicyName::Clock => "clock",
            PolicyName::Lru => "lru",
        }
    }

    /// What the policy knows of the pages' use, as the report says it.
    pub fn basis(self) -> &'static str {
        match self {
            PolicyName::Fifo => {
                "arrival order: the oldest page to come in (first touch or fault) leaves first"
            }
            PolicyName::Clock => {
                "arrival order and writes: pages come in write-protected, PAGEMAP_SCAN reports \
                 those written since (and protects them again) every eighth of a round; each scan \
                 that saw a page written earns it another round of the hand (up to three), the \
                 oldest page without one leaves"
            }
            PolicyName::Lru => {
                "reads and writes, as the kernel's active and inactive lists: the oldest pages \
                 leave the program's memory uncompressed for the inactive list (still within \
                 the budget), a touch there brings them back at once (a refault), and the \
                 oldest of the inactive list is compressed"
            }
        }
    }

    /// The userfaultfd features the policy needs beyond `UFFD_FEATURE_MOVE`.
    pub fn features(self) -> Features {
        match self {
            PolicyName::Fifo => Features::NONE,
            PolicyName::Clock => Features::WP_ASYNC,
            PolicyName::Lru => Features::NONE,
        }
    }

    /// The policy named `s`, or why not (one line).
    pub fn parse(s: &str) -> Result<PolicyName, String> {
        PolicyName::ALL.into_iter().find(|p| p.name() == s).ok_or_else(|| {
            let names: Vec<&str> = PolicyName::ALL.iter().map(|p| p.name()).collect();
            format!("unknown policy '{s}' (one of: {})", names.join(", "))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_back_and_others_are_refused() {
        for p in PolicyName::ALL {
            assert_eq!(PolicyName::parse(p.name()), Ok(p));
        }
        assert_eq!(
            PolicyName::parse("arc"),
            Err("unknown policy 'arc' (one of: fifo, clock, lru)".to_string())
        );
    }
}
