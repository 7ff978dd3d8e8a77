//! Tools over shared state: `#[tools]` on an impl block (only `tools` is imported: the
//! `#[tool]` markers inside are read by it), each `#[tool]` method taking
//! `&self`, with an injected context, a preset, a default and thread execution.

use std::collections::BTreeMap;
use std::sync::Mutex;

use iris_tools_core::{ToolErrorInfo, ToolExecutionContext, codes, tools};

/// An in-memory stock of items by SKU: the state every inventory tool shares.
#[derive(Debug, Default)]
pub struct Inventory {
    stock: Mutex<BTreeMap<String, u32>>,
}

impl Inventory {
    /// An inventory holding these items.
    pub fn with_items<'a>(items: impl IntoIterator<Item = (&'a str, u32)>) -> Self {
        Self {
            stock: Mutex::new(items.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()),
        }
    }

    fn stock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, u32>> {
        self.stock
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[tools]
impl Inventory {
    /// Look up how many units of one item are in stock.
    ///
    /// Use before `reserve_item`; `count_items` counts every item.
    ///
    /// # Arguments
    /// * `sku` - the item's stock-keeping unit, e.g. `widget-7`
    #[tool(capabilities(read), group = "inventory", tags("stock", "lookup"))]
    pub async fn stock_level(&self, sku: String) -> Result<u32, ToolErrorInfo> {
        self.stock().get(&sku).copied().ok_or_else(|| {
            ToolErrorInfo::new(codes::TOOL_FAILED, format!("no item `{sku}` in stock"))
        })
    }

    /// Reserve units of one item for the current session, lowering its stock.
    #[tool(capabilities(write), group = "inventory", concurrency_safe = false)]
    pub fn reserve_item(
        &self,
        /// The item's stock-keeping unit, e.g. `widget-7`.
        sku: String,
        /// How many units to reserve.
        #[default = 1]
        count: u32,
        ctx: &ToolExecutionContext,
    ) -> Result<String, String> {
        let mut stock = self.stock();
        let have = stock.get_mut(&sku).ok_or(format!("no item `{sku}`"))?;
        if *have < count {
            return Err(format!("only {have} of `{sku}` left"));
        }
        *have -= count;
        Ok(format!("reserved {count} x {sku} for {}", ctx.session_id))
    }

    /// Count the distinct items in stock, on a worker thread.
    #[tool(capabilities(read), group = "inventory", execution_mode = "thread")]
    pub fn count_items(&self) -> usize {
        self.stock().len()
    }

    /// Report the stock of the warehouse this inventory belongs to.
    #[tool(capabilities(read), group = "inventory")]
    pub async fn warehouse_report(
        &self,
        /// Set by the host: which warehouse this is.
        #[preset]
        warehouse: String,
        /// List every item instead of only the totals.
        #[default]
        verbose: Option<bool>,
    ) -> String {
        let stock = self.stock();
        let total: u32 = stock.values().sum();
        if verbose.unwrap_or(false) {
            let items: Vec<String> = stock.iter().map(|(k, v)| format!("{k}={v}")).collect();
            format!("{warehouse}: {total} units ({})", items.join(", "))
        } else {
            format!("{warehouse}: {total} units")
        }
    }

    /// Not a tool: a plain method stays as it is.
    pub fn restock(&self, sku: &str, count: u32) {
        *self.stock().entry(sku.to_owned()).or_default() += count;
    }
}
