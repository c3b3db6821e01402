//! A configuration's explicit class table checked against the rest of the configuration: its
//! page size, the backend, the band and the settings the table replaces.

use crate::config::{BackendKind, PoolConfig, DEFAULT_CHAIN_SIZE};
use crate::error::{Error, Result};

impl PoolConfig {
    /// An explicit class table is for this page size and the zsmalloc backend, and the settings
    /// it replaces are left at their defaults (else they would silently mean nothing).
    pub(crate) fn validate_class_table(&self) -> Result<()> {
        let Some(table) = &self.class_table else { return Ok(()) };
        let refuse = |message: String| Err(Error::config("class_table", message));
        if table.page_size() != self.page_size {
            let (table, pool) = (table.page_size(), self.page_size);
            return refuse(format!("the table is for {table}-byte pages, the pool's are {pool}"));
        }
        if self.backend != BackendKind::Zsmalloc {
            let backend = self.backend.name();
            return refuse(format!("the {backend} backend has no size classes to replace"));
        }
        match (table.multi_page_size(), self.multi_page_size) {
            (a, b) if a == b => {}
            (0, m) => {
                return refuse(format!(
                    "multi_page_size {m} with a table that has no class above the page: add the \
                     band's classes (their order is {}) or leave multi_page_size at 0",
                    crate::band::order_of(self.page_size, m).unwrap_or(0)
                ))
            }
            (t, 0) => {
                return refuse(format!(
                    "the table has the multi-page band up to {t} bytes: set multi_page_size to \
                     {t}"
                ))
            }
            (t, m) => {
                return refuse(format!(
                    "the table's band goes up to {t} bytes, multi_page_size is {m}: they must \
                     agree"
                ))
            }
        }
        let policy = self.chain_policy.name();
        let replaced = [
            (self.chain_size != DEFAULT_CHAIN_SIZE, format!("chain_size {}", self.chain_size)),
            (self.class_delta != 0, format!("class_delta {}", self.class_delta)),
            (policy != "classic", format!("chain_policy '{policy}'")),
            (!self.merge_classes, "unmerged classes".to_string()),
        ];
        match replaced.into_iter().find(|(set, _)| *set) {
            Some((_, setting)) => refuse(format!(
                "{setting} means nothing with a class table (it gives every class's size and \
                 chain); leave it at its default"
            )),
            None => Ok(()),
        }
    }
}
