//! What a table on the optimizer's axes is ([`PointKind`]), and the references every search
//! places beside its frontier ([`References`]): named fields, not positions in a list.

use super::evaluate::Evaluation;

/// Which table a reported point is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PointKind {
    /// Mainline's classic table on the base settings.
    Classic,
    /// The RFC heuristic's table on the base settings.
    Heuristic,
    /// The table given with `--class-table`.
    Given,
    /// Frontier point N (1 = fewest pages), the number `--point` takes.
    Frontier(usize),
}

impl PointKind {
    /// The label of its row: `classic`, `heuristic`, `table` or the point's number.
    pub fn label(self) -> String {
        match self {
            PointKind::Classic => "classic".into(),
            PointKind::Heuristic => "heuristic".into(),
            PointKind::Given => "table".into(),
            PointKind::Frontier(n) => n.to_string(),
        }
    }

    /// The frontier point's number; none for a reference.
    pub fn point(self) -> Option<usize> {
        match self {
            PointKind::Frontier(n) => Some(n),
            _ => None,
        }
    }

    /// What it is, in a sentence (the exported table's title): `frontier point 3`, `classic`.
    pub fn describe(self) -> String {
        match self {
            PointKind::Frontier(n) => format!("frontier point {n}"),
            other => other.label(),
        }
    }
}

/// One `T` per reference: classic, the heuristic, and the given table when there is one.
#[derive(Debug, Clone, PartialEq)]
pub struct References<T> {
    pub classic: T,
    pub heuristic: T,
    pub given: Option<T>,
}

impl<T> References<T> {
    /// The references in report order (classic, heuristic, the given table), with their kind.
    pub fn iter(&self) -> impl Iterator<Item = (PointKind, &T)> {
        [(PointKind::Classic, &self.classic), (PointKind::Heuristic, &self.heuristic)]
            .into_iter()
            .chain(self.given.as_ref().map(|g| (PointKind::Given, g)))
    }

    pub fn len(&self) -> usize {
        2 + usize::from(self.given.is_some())
    }

    pub fn is_empty(&self) -> bool {
        false
    }

    /// `f` of each reference.
    pub fn map<U>(&self, mut f: impl FnMut(PointKind, &T) -> U) -> References<U> {
        References {
            classic: f(PointKind::Classic, &self.classic),
            heuristic: f(PointKind::Heuristic, &self.heuristic),
            given: self.given.as_ref().map(|g| f(PointKind::Given, g)),
        }
    }

    /// `items`, one per reference in report order (as [`References::iter`] lists them), as
    /// references of the same shape; `None` when the counts differ.
    pub fn matched<U>(&self, items: Vec<U>) -> Option<References<U>> {
        if items.len() != self.len() {
            return None;
        }
        let mut items = items.into_iter();
        Some(References {
            classic: items.next()?,
            heuristic: items.next()?,
            given: if self.given.is_some() { items.next() } else { None },
        })
    }
}

impl References<Evaluation> {
    /// Whether `e` has no more pages and spanning reads than every reference, and fewer of one
    /// than each.
    pub fn dominated_by(&self, e: &Evaluation) -> bool {
        self.iter().all(|(_, r)| {
            e.pages <= r.pages
                && e.reads_spanning <= r.reads_spanning
                && (e.pages < r.pages || e.reads_spanning < r.reads_spanning)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_keep_their_kind_whatever_their_count() {
        let two = References { classic: 1, heuristic: 2, given: None };
        let kinds: Vec<PointKind> = two.iter().map(|(k, _)| k).collect();
        assert_eq!(kinds, [PointKind::Classic, PointKind::Heuristic]);
        assert_eq!(two.matched(vec!["a", "b"]).unwrap().heuristic, "b");
        assert!(two.matched(vec!["a"]).is_none());
        let three = References { given: Some(3), ..two };
        assert_eq!(three.matched(vec!['a', 'b', 'c']).unwrap().given, Some('c'));
        assert_eq!(PointKind::Frontier(7).label(), "7");
        assert_eq!(PointKind::Given.describe(), "table");
    }
}
