//! The eviction unit and the readahead, as the command gives them to the library: a folio of 4,
//! or 16 pages is evicted as one object, which the pool stores in its multi-page band (the 2024
//! RFC's large-folio path), so the pool's configuration must hold objects of the folio's size;
//! the readahead is swap's `page-cluster` (a cluster of `2^N` pages).

use zsmalloc_core::PoolConfig;

/// The pages of an eviction unit, for the library (1: a page, the default).
pub const FOLIO_VAR: &str = "ZSMALLOC_TIER_FOLIO_PAGES";
/// The readahead's `page-cluster` (log2 of the cluster's pages; 0: none), for the library.
pub const READAHEAD_VAR: &str = "ZSMALLOC_TIER_READAHEAD";
/// The core's variable of the multi-page band.
pub const MULTI_PAGE_VAR: &str = "ZSMALLOC_MULTI_PAGE_SIZE";
/// The largest `page-cluster`: 16 pages, a 64K folio's worth.
pub const MAX_READAHEAD: u32 = 4;
const PAGE: u64 = 4096;

/// The pool's variables for a folio of `folio_pages` pages: `pool_env` as given, with the
/// multi-page band set to the folio's size when the configuration `lookup` reads (the given
/// variables, then the environment) holds no object that long and names no band of its own.
/// A configuration that cannot hold a folio (a band named smaller, a page size whose band
/// cannot reach it, a backend without one) is refused in one line.
pub fn pool_env(
    folio_pages: u32,
    pool_env: &[(String, String)],
    lookup: impl Fn(&str) -> Option<String>,
) -> Result<Vec<(String, String)>, String> {
    let config =
        PoolConfig::from_lookup(&lookup).map_err(|e| format!("the pool's configuration: {e}"))?;
    let folio = u64::from(folio_pages) * PAGE;
    let mut env = pool_env.to_vec();
    if folio_pages <= 1 || u64::from(config.max_object_size()) >= folio {
        return Ok(env);
    }
    let size = folio_text(folio_pages);
    if config.multi_page_size != 0 {
        return Err(format!(
            "--folio-size {size}: the pool's multi-page band holds objects up to {} bytes, not a \
             folio of {folio}; set it to {size} or more, or leave it unset",
            config.multi_page_size
        ));
    }
    env.push((MULTI_PAGE_VAR.to_string(), folio.to_string()));
    let with = |name: &str| {
        if name == MULTI_PAGE_VAR {
            return Some(folio.to_string());
        }
        lookup(name)
    };
    PoolConfig::from_lookup(with).map_err(|e| {
        format!("--folio-size {size}: the pool cannot store a folio as one object: {e}")
    })?;
    Ok(env)
}

/// `4K`, `16K` or `64K`.
pub fn folio_text(folio_pages: u32) -> String {
    format!("{}K", u64::from(folio_pages) * PAGE / 1024)
}

/// Why a readahead of `page_cluster` beside folios of `folio_pages` is refused, if it is.
pub fn check_readahead(page_cluster: u32, folio_pages: u32) -> Result<(), String> {
    if page_cluster > MAX_READAHEAD {
        return Err(format!(
            "--readahead {page_cluster}: at most {MAX_READAHEAD} (swap's page-cluster: a cluster \
             of 2^N pages, 16 at most)"
        ));
    }
    if page_cluster > 0 && folio_pages > 1 {
        return Err(format!(
            "--readahead {page_cluster} with --folio-size {}: a fault on a folio brings its whole \
             group already; use one or the other",
            folio_text(folio_pages)
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_of(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    fn run(folio: u32, pairs: &[(&str, &str)]) -> Result<Vec<(String, String)>, String> {
        let env = env_of(pairs);
        let lookup = |n: &str| env.iter().find(|(k, _)| k == n).map(|(_, v)| v.clone());
        pool_env(folio, &env, lookup)
    }

    #[test]
    fn the_band_is_set_from_the_folio_unless_the_pool_holds_it_already() {
        assert_eq!(run(1, &[]).unwrap(), vec![]);
        assert_eq!(run(4, &[]).unwrap(), env_of(&[(MULTI_PAGE_VAR, "16384")]));
        assert_eq!(run(16, &[]).unwrap(), env_of(&[(MULTI_PAGE_VAR, "65536")]));
        let given = [(MULTI_PAGE_VAR, "64K")];
        assert_eq!(run(4, &given).unwrap(), env_of(&given), "a larger band is kept");
        let big = [("ZSMALLOC_PAGE_SIZE", "64K")];
        assert_eq!(run(16, &big).unwrap(), env_of(&big), "a 64K page holds a 64K folio");
        for page in ["8K", "16K", "32K"] {
            let mid = [("ZSMALLOC_PAGE_SIZE", page)];
            assert_eq!(run(16, &mid).unwrap()[1], (MULTI_PAGE_VAR.into(), "65536".into()));
        }
    }

    #[test]
    fn a_pool_that_cannot_hold_a_folio_is_refused_in_one_line() {
        let small = run(16, &[(MULTI_PAGE_VAR, "16K")]).unwrap_err();
        assert!(small.starts_with("--folio-size 64K: the pool's multi-page band"), "{small}");
        for backend in ["zblock", "malloc"] {
            let e = run(4, &[("ZSMALLOC_BACKEND", backend)]).unwrap_err();
            assert!(e.starts_with("--folio-size 16K: the pool cannot store"), "{e}");
            assert!(e.contains(backend) && !e.contains('\n'), "{e}");
        }
    }

    #[test]
    fn readahead_is_a_page_cluster_and_not_beside_folios() {
        assert!(check_readahead(0, 16).is_ok() && check_readahead(4, 1).is_ok());
        assert!(check_readahead(5, 1).unwrap_err().contains("at most 4"));
        assert!(check_readahead(3, 4).unwrap_err().contains("--folio-size 16K"));
    }
}
