//! The lower kebab-case names skills and subagent selectors share, and the
//! close-match search used to suggest a name after a typo.

/// Longest allowed skill name or subagent selector, in characters (the Agent Skills
/// format's limit).
pub const MAX_NAME_LEN: usize = 64;

/// The JSON Schema `pattern` of a lower kebab-case name, as `load_skill` publishes it.
pub const NAME_PATTERN: &str = "^[a-z0-9]+(-[a-z0-9]+)*$";

/// Checks a lower kebab-case name: 1–64 characters of `a-z`, `0-9` and single
/// hyphens, neither starting nor ending with a hyphen.
///
/// Returns the reason when the name is invalid, phrased to follow "name `x` ".
///
/// ```
/// use iris_skill::check_kebab_name;
/// assert!(check_kebab_name("pdf-forms").is_ok());
/// assert!(check_kebab_name("PDF").is_err());
/// assert!(check_kebab_name("pdf_forms").is_err());
/// assert!(check_kebab_name("pdf--forms").is_err());
/// ```
pub fn check_kebab_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("must not be empty".into());
    }
    let len = name.chars().count();
    if len > MAX_NAME_LEN {
        return Err(format!(
            "is {len} characters long; at most {MAX_NAME_LEN} are allowed"
        ));
    }
    if let Some(bad) = name
        .chars()
        .find(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-'))
    {
        let hint = if bad.is_ascii_uppercase() {
            " (use lower case)"
        } else if bad == '_' {
            " (use `-` instead of `_`)"
        } else {
            ""
        };
        return Err(format!(
            "must be lower kebab-case (`a-z`, `0-9`, `-`); found `{bad}`{hint}"
        ));
    }
    if name.starts_with('-') || name.ends_with('-') {
        return Err("must not start or end with `-`".into());
    }
    if name.contains("--") {
        return Err("must not contain `--`".into());
    }
    Ok(())
}

/// Levenshtein distance between two strings, counted in characters.
pub(crate) fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    // One rolling row keeps the memory linear in the shorter input's length.
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            let cost = usize::from(ca != *cb);
            row[j + 1] = (diagonal + cost).min(above + 1).min(row[j] + 1);
            diagonal = above;
        }
    }
    row[b.len()]
}

/// At most `limit` names close to `wanted`, closest first (ties by name).
///
/// A name is close when its edit distance is at most a third of the longer name
/// (and at least 2), or when one name contains the other: `pdf` suggests `pdf-forms`.
pub(crate) fn close_matches<'a>(
    wanted: &str,
    names: impl IntoIterator<Item = &'a str>,
    limit: usize,
) -> Vec<String> {
    let mut scored: Vec<(usize, &str)> = names
        .into_iter()
        .filter_map(|name| {
            let distance = edit_distance(wanted, name);
            let longer = wanted.chars().count().max(name.chars().count());
            let threshold = (longer / 3).max(2);
            let contains = !wanted.is_empty() && (name.contains(wanted) || wanted.contains(name));
            (distance <= threshold || contains).then_some((distance, name))
        })
        .collect();
    scored.sort_unstable();
    scored
        .into_iter()
        .take(limit)
        .map(|(_, name)| name.to_owned())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edit_distance_table() {
        let table = [
            ("", "", 0),
            ("pdf", "", 3),
            ("", "pdf", 3),
            ("pdf", "pdf", 0),
            ("pdf", "pfd", 2),
            ("changelog", "change-log", 1),
            ("kitten", "sitting", 3),
            ("é", "e", 1),
        ];
        for (a, b, want) in table {
            assert_eq!(edit_distance(a, b), want, "{a:?} vs {b:?}");
        }
    }

    #[test]
    fn close_matches_table() {
        let names = ["pdf", "pdf-forms", "changelog", "docx", "release-notes"];
        let table: [(&str, &[&str]); 5] = [
            ("pdf", &["pdf", "pdf-forms"]),
            ("pdff", &["pdf"]),
            ("change-log", &["changelog"]),
            ("spreadsheet", &[]),
            ("doc", &["docx"]),
        ];
        for (wanted, want) in table {
            assert_eq!(close_matches(wanted, names, 3), want, "{wanted}");
        }
    }
}
