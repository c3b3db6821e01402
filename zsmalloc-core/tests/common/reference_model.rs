//! The reference model of mainline zsmalloc placement (Linux 6.4+) that `placement.rs` drives:
//! the class table (chains per policy, merging), zspages with LIFO freelists, 12 fullness groups
//! with head insertion, allocation, release and compaction order, written from the semantics
//! (docs/DESIGN.md, Placement) independently of the pool's code; and the pool's class rows in the
//! model's terms.

use std::collections::{HashMap, VecDeque};

use zsmalloc_core::ClassStats;

pub const HDR: u32 = 8;
pub const MIN: u32 = 32;
pub const GROUPS: usize = 12;
pub const FULL: usize = 11;

// ------------------------------------------------------------------------------------ class table

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    Classic,
    Heuristic,
    Fixed(u32),
}

/// Pages per zspage, as mainline and the RFC define the policies.
pub fn chain_size(policy: Policy, size: u32, page: u32, chain: u32) -> u32 {
    let (size, page) = (u64::from(size), u64::from(page));
    let pages = match policy {
        Policy::Fixed(n) => u64::from(n.min(chain)),
        _ if size.is_power_of_two() => 1,
        Policy::Classic => {
            // Least tail waste; the smallest chain wins ties.
            (1..=u64::from(chain)).min_by_key(|&i| ((i * page) % size, i)).unwrap()
        }
        Policy::Heuristic => {
            // RFC patch 2/2, transcribed from the RFC's C (the first candidate is always taken).
            let (mut best, mut min_waste) = (1u64, None::<u64>);
            for i in 1..=u64::from(chain) {
                let waste = (i * page) % size;
                if waste == 0 {
                    return i as u32;
                }
                let take = match min_waste {
                    None => true,
                    Some(m) if m * 10 > best * page => waste < m,
                    Some(m) => waste * 4 < m * 3,
                };
                if take {
                    min_waste = Some(waste);
                    best = i;
                }
                if min_waste.unwrap() * 64 <= best * page {
                    break;
                }
            }
            best
        }
    };
    // The page-sized class takes lengths up to a full page, which fit only headerless: it is
    // always one page (mainline gets this from the power-of-two rule).
    if size == page {
        1
    } else {
        pages.clamp(1, u64::from(chain)) as u32
    }
}

#[derive(Debug, Clone)]
pub struct MClassInfo {
    /// Largest index served (the kernel's class index).
    pub index: u32,
    pub first_index: u32,
    pub size: u32,
    pub pages: u32,
    pub objs: u32,
    pub huge: bool,
}

#[derive(Debug, Clone)]
pub struct MTable {
    pub page: u32,
    pub delta: u32,
    /// Created classes, descending by size (the walk's order).
    pub classes: Vec<MClassInfo>,
    /// Class index -> position in `classes`.
    pub by_index: Vec<usize>,
    pub huge_class_size: u32,
}

impl MTable {
    pub fn new(page: u32, chain: u32, delta: u32, policy: Policy) -> MTable {
        let delta = if delta == 0 { page >> 8 } else { delta };
        let n = (page - MIN).div_ceil(delta) + 1;
        let mut classes: Vec<MClassInfo> = Vec::new();
        let mut by_index = vec![0; n as usize];
        let mut huge_class_size = 0;
        for i in (0..n).rev() {
            let size = (MIN + i * delta).min(page);
            let pages = chain_size(policy, size, page, chain);
            let objs = pages * page / size;
            if huge_class_size == 0 && pages != 1 && objs != 1 {
                huge_class_size = size - (HDR - 1);
            }
            match classes.last_mut() {
                Some(prev) if prev.pages == pages && prev.objs == objs => prev.first_index = i,
                _ => classes.push(MClassInfo {
                    index: i,
                    first_index: i,
                    size,
                    pages,
                    objs,
                    huge: pages == 1 && objs == 1,
                }),
            }
            by_index[i as usize] = classes.len() - 1;
        }
        MTable { page, delta, classes, by_index, huge_class_size }
    }

    /// The class serving a store of `len` bytes.
    pub fn class_of_len(&self, len: usize) -> usize {
        let size = len + HDR as usize;
        let idx = if size <= MIN as usize {
            0
        } else {
            (size - MIN as usize).div_ceil(self.delta as usize)
        };
        self.by_index[idx.min(self.by_index.len() - 1)]
    }
}

// ------------------------------------------------------------------------------------ model

pub fn group(inuse: u32, objs: u32) -> usize {
    if inuse == 0 {
        0
    } else if inuse == objs {
        FULL
    } else {
        (100 * inuse / objs) as usize / 10 + 1
    }
}

#[derive(Debug)]
pub struct MZspage {
    pub class: usize,
    pub inuse: u32,
    /// Free object indices; the front is the head.
    pub free: VecDeque<u32>,
    /// Object index -> model object key.
    pub slots: Vec<Option<u64>>,
    pub group: usize,
}

#[derive(Debug, Default)]
pub struct MClass {
    /// Fullness lists of zspage ids; the front is the head.
    pub lists: [VecDeque<u64>; GROUPS],
    pub obj_allocated: u64,
    pub obj_used: u64,
    pub zspages: u64,
}

pub struct RefModel {
    pub table: MTable,
    pub classes: Vec<MClass>,
    pub zspages: HashMap<u64, MZspage>,
    pub next_zspage: u64,
    /// Object key -> (zspage id, object index).
    pub objects: HashMap<u64, (u64, u32)>,
    pub pages: u64,
    pub moved: u64,
}

impl RefModel {
    pub fn new(table: MTable) -> Self {
        let classes = table.classes.iter().map(|_| MClass::default()).collect();
        RefModel {
            table,
            classes,
            zspages: HashMap::new(),
            next_zspage: 0,
            objects: HashMap::new(),
            pages: 0,
            moved: 0,
        }
    }

    pub fn insert(&mut self, class: usize, zs: u64, g: usize) {
        self.zspages.get_mut(&zs).unwrap().group = g;
        self.classes[class].lists[g].push_front(zs);
    }

    pub fn remove(&mut self, class: usize, zs: u64) {
        let g = self.zspages[&zs].group;
        let list = &mut self.classes[class].lists[g];
        let at = list.iter().position(|&z| z == zs).expect("listed");
        list.remove(at);
    }

    /// Re-files a listed zspage if its group changed (kernel `fix_fullness_group`).
    pub fn fix(&mut self, class: usize, zs: u64) {
        let z = &self.zspages[&zs];
        let g = group(z.inuse, self.table.classes[class].objs);
        if g != z.group {
            self.remove(class, zs);
            self.insert(class, zs, g);
        }
    }

    /// Kernel `obj_malloc`: the head of the zspage's freelist.
    pub fn obj_malloc(&mut self, zs: u64, key: u64) -> u32 {
        let z = self.zspages.get_mut(&zs).unwrap();
        let idx = z.free.pop_front().expect("zspage not full");
        z.inuse += 1;
        assert!(z.slots[idx as usize].replace(key).is_none());
        self.objects.insert(key, (zs, idx));
        idx
    }

    /// Kernel `obj_free`: the slot goes onto the head of the freelist.
    pub fn obj_free(&mut self, zs: u64, idx: u32) -> u64 {
        let z = self.zspages.get_mut(&zs).unwrap();
        let key = z.slots[idx as usize].take().expect("allocated");
        z.free.push_front(idx);
        z.inuse -= 1;
        key
    }

    pub fn release(&mut self, class: usize, zs: u64) {
        let z = self.zspages.remove(&zs).unwrap();
        assert_eq!(z.inuse, 0);
        let info = &self.table.classes[class];
        let c = &mut self.classes[class];
        c.obj_allocated -= u64::from(info.objs);
        c.zspages -= 1;
        self.pages -= u64::from(info.pages);
    }

    pub fn store(&mut self, key: u64, len: usize) {
        let class = self.table.class_of_len(len);
        let info = self.table.classes[class].clone();
        let found = (0..FULL).rev().find_map(|g| self.classes[class].lists[g].front().copied());
        match found {
            Some(zs) => {
                self.obj_malloc(zs, key);
                self.fix(class, zs);
            }
            None => {
                let zs = self.next_zspage;
                self.next_zspage += 1;
                let z = MZspage {
                    class,
                    inuse: 0,
                    free: (0..info.objs).collect(),
                    slots: vec![None; info.objs as usize],
                    group: 0,
                };
                self.zspages.insert(zs, z);
                self.obj_malloc(zs, key);
                let g = group(1, info.objs);
                self.insert(class, zs, g);
                let c = &mut self.classes[class];
                c.obj_allocated += u64::from(info.objs);
                c.zspages += 1;
                self.pages += u64::from(info.pages);
            }
        }
        self.classes[class].obj_used += 1;
    }

    pub fn free(&mut self, key: u64) {
        let (zs, idx) = self.objects.remove(&key).expect("live object");
        let class = self.zspages[&zs].class;
        self.obj_free(zs, idx);
        self.classes[class].obj_used -= 1;
        if self.zspages[&zs].inuse == 0 {
            self.remove(class, zs);
            self.release(class, zs);
        } else {
            self.fix(class, zs);
        }
    }

    pub fn can_compact(&self, class: usize) -> u64 {
        let info = &self.table.classes[class];
        let c = &self.classes[class];
        (c.obj_allocated - c.obj_used) / u64::from(info.objs) * u64::from(info.pages)
    }

    /// `zs_compact`; zspages in `pinned` are never sources. Returns pages freed.
    pub fn compact(&mut self, pinned: &[u64]) -> u64 {
        // `classes` is descending by size: the largest index first.
        (0..self.classes.len()).map(|c| self.compact_class(c, pinned)).sum()
    }

    pub fn compact_class(&mut self, class: usize, pinned: &[u64]) -> u64 {
        let info = self.table.classes[class].clone();
        let mut freed = 0;
        let mut dst: Option<u64> = None;
        while self.can_compact(class) > 0 {
            let d = match dst {
                Some(d) => d,
                None => {
                    let lists = &self.classes[class].lists;
                    let Some(d) = (1..FULL).rev().find_map(|g| lists[g].front().copied()) else {
                        break;
                    };
                    self.remove(class, d);
                    dst = Some(d);
                    d
                }
            };
            let lists = &self.classes[class].lists;
            let src =
                (1..FULL).flat_map(|g| lists[g].iter().copied()).find(|z| !pinned.contains(z));
            let Some(s) = src else { break };
            self.remove(class, s);
            // migrate_zspage: live objects of the source in increasing index.
            for idx in 0..info.objs {
                if self.zspages[&s].slots[idx as usize].is_none() {
                    continue;
                }
                let key = self.obj_free(s, idx);
                self.obj_malloc(d, key);
                self.moved += 1;
                if self.zspages[&d].inuse == info.objs || self.zspages[&s].inuse == 0 {
                    break;
                }
            }
            if self.zspages[&s].inuse == 0 {
                self.release(class, s);
                freed += u64::from(info.pages);
            } else {
                let g = group(self.zspages[&s].inuse, info.objs);
                self.insert(class, s, g);
            }
            if self.zspages[&d].inuse == info.objs {
                self.insert(class, d, FULL);
                dst = None;
            }
        }
        if let Some(d) = dst {
            let g = group(self.zspages[&d].inuse, info.objs);
            self.insert(class, d, g);
        }
        freed
    }

    /// The model's per-class row in the pool's format (for the fields the model knows).
    pub fn row(&self, class: usize) -> Row {
        let i = &self.table.classes[class];
        let c = &self.classes[class];
        let fullness = std::array::from_fn(|g| c.lists[g].len() as u64);
        (
            i.index,
            i.first_index,
            i.size,
            i.pages,
            i.huge,
            i.objs,
            fullness,
            c.obj_allocated,
            c.obj_used,
            c.zspages * u64::from(i.pages),
            self.can_compact(class),
        )
    }
}

/// A class row: (index, first index, size, pages, huge, objs, fullness, obj_allocated, obj_used,
/// pages_used, freeable).
pub type Row = (u32, u32, u32, u32, bool, u32, [u64; GROUPS], u64, u64, u64, u64);

pub fn pool_row(c: &ClassStats) -> Row {
    (
        c.last_index,
        c.first_index,
        c.size,
        c.pages_per_zspage,
        c.huge,
        c.objs_per_zspage,
        c.fullness,
        c.obj_allocated,
        c.obj_used,
        c.pages_used,
        c.freeable,
    )
}
