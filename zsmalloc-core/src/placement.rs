//! Placement validation: does a handle word name an object of this pool, and how much of that is
//! proved. One check, [`Pool::place`], with a level, replaces a family of near-copies: each
//! caller asks for the level it needs and the rest folds away at compile time.
//!
//! Levels (what a successful check proves; each caller's choice is explained where it calls):
//! - [`WORD`]: the word is this pool's (non-zero, its tag) and names an existing zspage-table
//!   entry; `Place::zspage` is that entry's zspage and `Place::class` its class as it is now.
//!   Nothing about the object: the zspage may have been released or reused since. Starts loading
//!   the object's header. Taken before pinning a zspage or locking its class.
//! - [`START`]: by the page's role alone (class and index within the zspage, which never change
//!   for a page, `arena.rs`): the word's place is an object start of a non-huge class, so an
//!   8-aligned header word the pool wrote, a freelist link or zero. No object index and no
//!   zspage metadata: the announced read's fast path.
//! - [`ROLE`]: by the page's role: an object start of its class, with its object index (any
//!   class, huge included).
//! - [`ZSPAGE`]: by the metadata of `z`, the zspage the word names: live, the word's page in its
//!   page list, an object start of its class that was handed out at least once (so its header is
//!   one the pool wrote, never stray bytes). Stable while `z` is pinned or its class lock held.
//!
//! Only the header can say whose object it is: every level is followed by a header check
//! (`header.rs`) naming the handle word's address as the owner.

use crate::arena::Pfn;
use crate::handle_word::Location;
use crate::payload::Payload;
use crate::pool::Pool;
use crate::size_class::{self, SizeClass};
use crate::zspage::Zspage;

/// The word is this pool's and names a zspage-table entry (see the module documentation).
pub(crate) const WORD: u8 = 0;
/// An object start of a non-huge class, by the page's role alone.
pub(crate) const START: u8 = 1;
/// An object start and its index, by the page's role.
pub(crate) const ROLE: u8 = 2;
/// A handed-out object of a live zspage, by the zspage's metadata.
pub(crate) const ZSPAGE: u8 = 3;

const STALE: &str = "stale handle: its object was freed";
const NOT_AN_OBJECT: &str = "not an object of its zspage";

/// What a placement check found.
#[derive(Clone, Copy)]
pub(crate) struct Place<'a> {
    pub loc: Location,
    /// The zspage the word names (levels `WORD` and `ZSPAGE`; `None` for the others).
    pub zspage: Option<&'a Zspage>,
    /// The class's position in the pool's class array, and the class.
    pub pos: usize,
    pub class: &'a SizeClass,
    /// The object's index in its zspage (levels `ROLE` and `ZSPAGE`; 0 for the others).
    pub obj: u32,
}

impl<P: Payload> Pool<P> {
    /// The placement check of handle word `word` at level `LEVEL` (see the module
    /// documentation); `z` is the zspage the word names, needed at `ZSPAGE` only. The error says
    /// what failed; callers that fall back to a slower path drop it.
    #[inline(always)]
    pub(crate) fn place<'a, const LEVEL: u8>(
        &'a self,
        word: usize,
        z: Option<&'a Zspage>,
    ) -> Result<Place<'a>, &'static str> {
        let loc = match Location::decode(word) {
            Some(loc) if loc.tag == self.tag => loc,
            Some(_) => return Err("handle belongs to another pool (or is garbage)"),
            None if word == 0 => return Err("empty handle"),
            None => return Err("not a handle word"),
        };
        if LEVEL == WORD {
            self.arena.prefetch(loc.offset());
            let z = self.zspages.get(loc.entry).ok_or("no such zspage")?;
            let pos = z.class_pos();
            let class = self.classes.get(pos).ok_or("no such class")?;
            return Ok(Place { loc, zspage: Some(z), pos, class, obj: 0 });
        }
        let shift = self.page_shift();
        let pfn = (loc.offset() >> shift) as Pfn;
        let (pos, zspage) = if LEVEL == ZSPAGE {
            let z = z.ok_or("no such zspage")?;
            if !z.is_live() {
                return Err(STALE);
            }
            (z.class_pos(), Some(z))
        } else {
            let (pos, index) = self.arena.role(pfn).ok_or("no such page")?;
            if index != loc.page {
                return Err(STALE);
            }
            (pos, None)
        };
        let class = self.classes.get(pos).ok_or("no such class")?;
        let info = &class.info;
        // The class's unit: a page, or an aligned compound page (whose pages share a role).
        let (ushift, umask) = (info.unit_shift, info.unit_mask as usize);
        if let Some(z) = zspage {
            // The word's place lies in the unit starting at the zspage's page (units are
            // aligned, so its offset differs from the unit's only in the bits below the unit).
            if loc.page >= info.pages_per_zspage
                || (loc.offset() ^ ((z.page(loc.page as usize) as usize) << shift)) > umask
            {
                return Err(STALE);
            }
        }
        let start = ((loc.page as usize) << ushift) | (loc.offset() & umask);
        if LEVEL == START {
            // `object_area` is 0 for a huge class: only non-huge object starts pass.
            return if start < class.object_area as usize && class.by_size.divides(start as u32) {
                Ok(Place { loc, zspage, pos, class, obj: 0 })
            } else {
                Err(NOT_AN_OBJECT)
            };
        }
        let obj = if info.huge { 0 } else { class.by_size.div(start as u32) };
        if obj as usize * info.size as usize != start || obj >= info.objs_per_zspage {
            return Err(NOT_AN_OBJECT);
        }
        if let Some(z) = zspage {
            if obj >= size_class::fresh(z) {
                return Err("object was never allocated");
            }
        }
        Ok(Place { loc, zspage, pos, class, obj })
    }
}
