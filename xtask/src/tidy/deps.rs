//! The "Allowed dependencies" table of `docs/architecture.md`, read as data: one row per
//! crate, naming the iris crates it may depend on and, unless the cell says `any`, the
//! other crates too. The table is the only place the layering is written down; check 1
//! holds every manifest to it.
//!
//! ```text
//! | crate | iris crates | other crates |
//! |---|---|---|
//! | `iris-tools-core` | `iris-tools-macros` | `serde`, `tokio` (`sync` only) |
//! | `iris-sandbox` | — | any |
//! ```
//!
//! A cell is `—` (nothing), `any` (the third column only), or a comma-separated list
//! whose items each start with a crate name in backticks; what follows the name in an
//! item (`(`sync` only)`) is a remark for readers.

/// The heading (a substring of it) above the table.
pub(crate) const HEADING: &str = "Allowed dependencies";

/// One row: what crate `name` may depend on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Rule {
    /// The crate's package name.
    pub(crate) name: String,
    /// The 1-based line of its row.
    pub(crate) line: usize,
    /// The iris (workspace) crates it may depend on.
    pub(crate) iris: Vec<String>,
    /// The other crates it may depend on; `None` when any is allowed.
    pub(crate) other: Option<Vec<String>>,
}

/// The rows of the table under the first heading containing [`HEADING`] in `text`.
///
/// # Errors
/// The 1-based line and what is wrong: no such heading, no table under it, or a row
/// that is not three cells of the forms above.
pub(crate) fn parse(text: &str) -> Result<Vec<Rule>, (usize, String)> {
    let lines: Vec<&str> = text.lines().collect();
    let heading = lines
        .iter()
        .position(|l| l.starts_with('#') && l.contains(HEADING))
        .ok_or_else(|| (1, format!("no \"{HEADING}\" heading")))?;
    let Some(start) = lines[heading + 1..]
        .iter()
        .take_while(|l| !l.starts_with('#'))
        .position(|l| l.starts_with('|'))
        .map(|p| heading + 1 + p)
    else {
        return Err((heading + 1, format!("no table under \"{HEADING}\"")));
    };
    // The header row and the `|---|` separator come first.
    let mut rules = Vec::new();
    for (i, line) in lines.iter().enumerate().skip(start + 2) {
        if !line.starts_with('|') {
            break;
        }
        let at = i + 1;
        let cells: Vec<&str> = line
            .trim()
            .trim_start_matches('|')
            .trim_end_matches('|')
            .split('|')
            .map(str::trim)
            .collect();
        let [name, iris, other] = cells[..] else {
            return Err((at, format!("a row has 3 cells, this one {}", cells.len())));
        };
        let name = match names(name) {
            Some(n) if n.len() == 1 => n[0].clone(),
            _ => {
                return Err((
                    at,
                    format!("the first cell names one crate in backticks: {name}"),
                ));
            }
        };
        let iris = names(iris).ok_or_else(|| {
            (
                at,
                format!("the iris crates are `—` or names in backticks: {iris}"),
            )
        })?;
        let other = if other == "any" {
            None
        } else {
            Some(names(other).ok_or_else(|| {
                (
                    at,
                    format!("the other crates are `any`, `—` or names in backticks: {other}"),
                )
            })?)
        };
        rules.push(Rule {
            name,
            line: at,
            iris,
            other,
        });
    }
    Ok(rules)
}

/// The crate names of a cell: none for `—`, else the first backticked word of each
/// comma-separated item; `None` when an item has none.
fn names(cell: &str) -> Option<Vec<String>> {
    if cell == "—" || cell == "-" {
        return Some(Vec::new());
    }
    split_items(cell)
        .into_iter()
        .map(|item| {
            let rest = item.trim().strip_prefix('`')?;
            let name = &rest[..rest.find('`')?];
            (!name.is_empty()).then(|| name.to_string())
        })
        .collect()
}

/// `cell` split at the commas outside parentheses.
fn split_items(cell: &str) -> Vec<&str> {
    let mut items = Vec::new();
    let (mut depth, mut start) = (0i32, 0);
    for (i, c) in cell.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                items.push(&cell[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    items.push(&cell[start..]);
    items
}
