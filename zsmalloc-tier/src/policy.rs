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
}

impl PolicyName {
    pub const ALL: [PolicyName; 2] = [PolicyName::Fifo, PolicyName::Clock];

    pub fn name(self) -> &'static str {
        match self {
            PolicyName::Fifo => "fifo",
            PolicyName::Clock => "clock",
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
        }
    }

    /// The userfaultfd features the policy needs beyond `UFFD_FEATURE_MOVE`.
    pub fn features(self) -> Features {
        match self {
            PolicyName::Fifo => Features::NONE,
            PolicyName::Clock => Features::WP_ASYNC,
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
            PolicyName::parse("lru"),
            Err("unknown policy 'lru' (one of: fifo, clock)".to_string())
        );
    }
}
