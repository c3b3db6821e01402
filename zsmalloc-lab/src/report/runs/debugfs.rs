//! The kernel's debugfs `zsmalloc/<pool>/classes` table (6.x layout): one row per created
//! class with zspages per fullness group (10%..99%, 100%), then a Total row.

use crate::result::RunResult;

pub fn table(r: &RunResult) -> String {
    let mut out = format!(
        " {:>5} {:>5} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>13} {:>10} {:>10} {:>16} {:>8}\n",
        "class", "size", "10%", "20%", "30%", "40%", "50%", "60%", "70%", "80%", "90%", "99%",
        "100%", "obj_allocated", "obj_used", "pages_used", "pages_per_zspage", "freeable"
    );
    let mut totals = [0u64; 12];
    let (mut objs, mut used, mut pages, mut freeable) = (0u64, 0u64, 0u64, 0u64);
    for c in r.classes.iter().map(|row| &row.stats) {
        out += &format!(" {:>5} {:>5} ", c.index, c.size);
        for (t, n) in totals.iter_mut().zip(&c.fullness).skip(1) {
            *t += n;
            out += &format!("{n:>9} ");
        }
        let pages_used = if c.objs_per_zspage == 0 {
            0
        } else {
            c.obj_allocated / u64::from(c.objs_per_zspage) * u64::from(c.pages_per_zspage)
        };
        out += &format!(
            "{:>13} {:>10} {:>10} {:>16} {:>8}\n",
            c.obj_allocated, c.obj_used, pages_used, c.pages_per_zspage, c.freeable
        );
        objs += c.obj_allocated;
        used += c.obj_used;
        pages += pages_used;
        freeable += c.freeable;
    }
    out += "\n";
    out += &format!(" {:>5} {:>5} ", "Total", "");
    for t in &totals[1..12] {
        out += &format!("{t:>9} ");
    }
    out += &format!("{objs:>13} {used:>10} {pages:>10} {:>16} {freeable:>8}\n", "");
    out
}
