//! Local relevance ranking for deferred-tool search.
//!
//! [`SearchIndex`] is the default, dependency-free backend behind
//! [`SearchDeferred::search_deferred`]. It ranks tool definitions by how well
//! their metadata answers a free-text intent such as "open a ticket for the login bug".
//!
//! # The default: BM25F plus what survived the protocol
//!
//! The shipped ranking ([`Tuning::DEFAULT`]) is a stock BM25F (k1 1.2; every field of
//! weight 1 and length normalisation b 0.75) over six fields, plus only what the
//! leave-one-set-out protocol kept (issue 29; `tests/eval/protocol.rs`, numbers in
//! `docs/benchmarks.md`): a rule is kept only when, chosen on the other development
//! sets, it does not lose to plain BM25 on the set left out.
//!
//! | field | source |
//! |---|---|
//! | name | the tool's own name: the last `__` segment of `name` (so `create_issue` in `mcp__jira__create_issue`), plus aliases |
//! | group | `group` plus the namespace segments of `name` (`mcp`, `jira`), each word once |
//! | tags | `metadata.tags` |
//! | description | `description` |
//! | argument names | every key under `properties` in `input_schema`, nested ones included |
//! | argument descriptions | the `description` of those properties |
//!
//! Text is split on anything that is not a letter or a digit and on camelCase humps,
//! lower-cased, and pure numbers and single characters are dropped. A pluralised acronym
//! stays one word ("PRs" is "prs").
//!
//! On top of BM25F the default has:
//!
//! * **a thesaurus** of general software vocabulary (delete/remove/drop, update/edit,
//!   send/post, …; issue/ticket/bug, pr/"pull request",
//!   folder/directory, …): a query word also matches its synonyms at weight 0.7, never
//!   summed with the word itself. A synonym may be a phrase: "pr" matches where both
//!   "pull" and "request" occur, as strongly as the weaker of the two. Synonyms share
//!   one idf, that of the whole concept, counting every tool any alternative matched
//!   (as Lucene's synonym query does), so a rare synonym cannot outweigh the word the
//!   user typed. Six groups (create/new/add, get/fetch/read, run/execute, the two
//!   comment groups, diff/compare) lost on a left-out set of four and were removed;
//!   with a fifth set, list/show/get and search/find lost too and download/export/save
//!   lowered the mean over all five, so the default leaves those three out.
//!
//! # Rules that are off by default
//!
//! [`SearchIndex::with_tuning`] can switch on what the protocol tried and did not keep:
//! per-field weights and length norms; stemming ([`analyze`]'s suffix stripper, with the
//! surface form as typed scoring on top where a tool has that very form); a stop-word
//! list; completion of a word unknown to the index from the indexed words it is a prefix
//! of ("kube" finds "kubernetes"); the *verb-object bonus*, 15 % for a tool whose own
//! name pairs a verb and an object the query also pairs (through two different query
//! words, synonyms allowed; the name's verb is its first verb and its object its last
//! word); a 15 % bonus for a tool every word of whose own name
//! the query contains as typed; and the *named tier*, where a query that spells a tool's
//! name out as one token (`create_issue`, or `mcp__github__create_issue`) ranks that
//! tool above every tool it does not name. Each was chosen by some folds and lost on a
//! left-out set (or gained too little), so none ships on.
//!
//! Ties keep candidate order, so results are deterministic.
//!
//! # Cost of a query
//!
//! A query visits only the posting lists of its words and their alternatives, never
//! every tool. It keeps the best `limit` hits by selection rather than sorting every
//! hit, and checks the bonuses only on hits that could still reach the top `limit`
//! with them. Its per-tool accumulators live in buffers owned by the calling
//! thread and reused by every later query on that thread (about 40 bytes per tool of
//! the largest index that thread searched), so a [`SearchIndex`] itself stays
//! immutable and `Send + Sync`. Over 10,000 tools the median query takes tens of
//! microseconds (see `benches/search.rs`).
//!
//! ```
//! use iris_tools_core::ToolDefinition;
//! use iris_discovery::search::SearchIndex;
//! use serde_json::json;
//!
//! let defs = [
//!     ToolDefinition::new("mcp__jira__add_comment", "Add a comment to a Jira issue", json!({"type": "object"})),
//!     ToolDefinition::new("mcp__jira__create_issue", "Create a new Jira issue", json!({"type": "object"})),
//! ];
//! let index = SearchIndex::new(&defs);
//! let hits = index.search("open a ticket for the login bug", 5);
//! assert_eq!(hits[0].index, 1);
//! ```

use std::collections::{BTreeSet, HashMap};
use std::sync::OnceLock;

use serde_json::Value;

use iris_tools_core::{ToolDefinition, ToolRegistryView};

/// One ranked hit: an index into the candidate slice and its score.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SearchHit {
    /// Index into the candidates given to [`SearchIndex::new`].
    pub index: usize,
    /// Relevance score; higher is better, always positive.
    pub score: f64,
}

/// BM25 term-frequency saturation (the stock value).
const K1: f64 = 1.2;
/// Weight of a synonym alternative relative to the query word itself.
const SYNONYM_WEIGHT: f64 = 0.7;
/// At most this many completions are tried for one partial word.
const MAX_PREFIX_EXPANSIONS: usize = 16;
/// The thesaurus groups [`Tuning::DEFAULT`] leaves out (bit `g` for group `g`):
/// list/show/get (1) and search/find (2) lost on a left-out set, download/export/save
/// (7) lowered the mean over every set.
const DEFAULT_OFF_GROUPS: u64 = (1 << 1) | (1 << 2) | (1 << 7);
/// Query words beyond this many are ignored (bit masks track the words per tool).
const MAX_QUERY_TERMS: usize = 64;
/// Schema nesting deeper than this is not indexed (it only guards the recursion).
const MAX_SCHEMA_DEPTH: usize = 32;

/// The indexed fields of a definition, in [`Tuning::field_weights`] order.
#[derive(Clone, Copy)]
enum Field {
    Name = 0,
    Group,
    Tags,
    Description,
    ArgName,
    ArgDescription,
}

const FIELD_COUNT: usize = 6;

/// The ranking's parameters and rules: what [`SearchIndex::new`] uses
/// ([`Tuning::DEFAULT`], see the [module documentation](self)), or what
/// [`SearchIndex::with_tuning`] is given. The leave-one-set-out protocol
/// (`tests/eval/protocol.rs`) tries them; nothing else needs to change them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tuning {
    /// Per field (name, group, tags, description, argument names, argument
    /// descriptions): its weight in BM25F. A field of weight 0 (or less) is not indexed.
    pub field_weights: [f64; FIELD_COUNT],
    /// Per field, in the same order: its length normalisation `b` (0 ignores length).
    pub field_b: [f64; FIELD_COUNT],
    /// BM25 term-frequency saturation.
    pub k1: f64,
    /// Weight of a synonym alternative relative to the query word itself.
    pub synonym_weight: f64,
    /// Weight of a prefix alternative (a partial word completed from the index).
    pub prefix_weight: f64,
    /// Weight of a word's surface form (as typed, not stemmed) on top of its stem.
    pub surface_weight: f64,
    /// Multiplier for a tool whose name pairs a query verb with a query object (at
    /// least 1).
    pub verb_object_bonus: f64,
    /// Multiplier for a tool every word of whose own name the query contains as typed
    /// (at least 1).
    pub full_name_bonus: f64,
    /// Whether words are reduced by the suffix-stripping stemmer (else only
    /// lower-cased).
    pub stemming: bool,
    /// Whether the stop-word list is dropped from tools and queries.
    pub stop_words: bool,
    /// Whether a query that spells a tool's name out as one token ranks that tool above
    /// every tool it does not name.
    pub named_tier: bool,
    /// Which groups of the thesaurus ([`thesaurus_groups`]) are used: bit `g` for group
    /// `g`. A group left out neither expands a query word nor counts as a verb.
    pub thesaurus_groups: u64,
}

impl Tuning {
    /// The shipped ranking: stock BM25F (every field weight 1, b 0.75, k1 1.2, words
    /// only lower-cased) plus what the leave-one-set-out protocol kept over five
    /// development sets (issue 29, `tests/eval/protocol.rs`): the thesaurus at 0.7,
    /// without its list/show/get, search/find and download/export/save groups.
    /// Stemming, other field weights and length norms, prefix completion, the full-name
    /// bonus and the named tier were each chosen by some folds and lost on a left-out
    /// set; stop words and the verb-object bonus survived but gain too little over all
    /// sets to be taken. All are off.
    pub const DEFAULT: Tuning = Tuning {
        field_weights: [1.0; FIELD_COUNT],
        field_b: [0.75; FIELD_COUNT],
        k1: K1,
        synonym_weight: SYNONYM_WEIGHT,
        prefix_weight: 0.0,
        surface_weight: 0.0,
        verb_object_bonus: 1.0,
        full_name_bonus: 1.0,
        stemming: false,
        stop_words: false,
        named_tier: false,
        thesaurus_groups: !DEFAULT_OFF_GROUPS,
    };

    /// Whether thesaurus group `g` is used.
    pub fn uses_group(&self, g: usize) -> bool {
        g < 64 && self.thesaurus_groups & (1 << g) != 0
    }
}

impl Default for Tuning {
    fn default() -> Self {
        Tuning::DEFAULT
    }
}

/// Words that carry no intent in a tool request. Verbs and quantifiers that *do* carry
/// intent ("get", "all", "new", "open", "show") are deliberately absent.
const STOP_WORDS: &[&str] = &[
    "a", "about", "also", "am", "an", "and", "any", "are", "as", "at", "be", "been", "but", "by",
    "can", "could", "did", "do", "does", "for", "from", "had", "has", "have", "he", "her", "here",
    "him", "his", "how", "i", "if", "in", "into", "is", "it", "its", "just", "let", "lets", "me",
    "mine", "my", "need", "of", "off", "on", "onto", "or", "our", "ours", "please", "she",
    "should", "so", "some", "than", "that", "the", "their", "them", "then", "there", "these",
    "they", "this", "those", "to", "up", "us", "via", "want", "was", "we", "were", "what", "when",
    "where", "which", "who", "why", "will", "with", "would", "you", "your",
];

/// Whether a thesaurus group names actions or things. Only the verb-object bonus
/// cares: a verb group can match a name's verb, any other word its object.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Verb,
    Noun,
}

/// The thesaurus: groups of interchangeable words (phrases allowed) that tool catalogs
/// and their users use for the same action or thing, in any domain. A word may sit in
/// several groups ("open" creates a ticket but also opens a page). Synonyms are one hop
/// only. Issue 19 dropped the groups and members that only served the fixture's own
/// queries (worklog/timesheet, coupon/promo, slow/expensive, …); the evaluation's
/// tune/test split showed what they were worth elsewhere.
// One group per line reads as a table; rustfmt would put every word on its own line.
#[rustfmt::skip]
const THESAURUS: &[(Kind, &[&str])] = &[
    // Actions.
    (Kind::Verb, &["delete", "remove", "drop", "erase", "destroy", "discard", "purge"]),
    (Kind::Verb, &["list", "enumerate", "all", "browse", "show", "get"]),
    (Kind::Verb, &["search", "find", "lookup", "look up", "query", "locate"]),
    (Kind::Verb, &["update", "edit", "modify", "change", "set", "alter", "adjust", "patch"]),
    (Kind::Verb, &["send", "post", "deliver", "notify"]),
    (Kind::Verb, &["stop", "cancel", "abort", "halt", "kill", "terminate"]),
    (Kind::Verb, &["upload", "push", "publish"]),
    (Kind::Verb, &["download", "export", "save"]),
    (Kind::Verb, &["write", "save", "store", "overwrite"]),
    (Kind::Verb, &["move", "rename", "relocate"]),
    (Kind::Verb, &["rollback", "roll back", "undo", "revert"]),
    (Kind::Verb, &["link", "associate", "connect", "attach"]),
    (Kind::Verb, &["click", "press", "tap"]),
    (Kind::Verb, &["select", "pick", "choose"]),
    (Kind::Verb, &["convert", "transform"]),
    (Kind::Verb, &["navigate", "go", "visit", "open"]),
    (Kind::Verb, &["calculate", "compute", "estimate"]),
    // Things.
    (Kind::Noun, &["issue", "ticket", "bug"]),
    (Kind::Noun, &["pr", "pull request"]),
    (Kind::Noun, &["mr", "merge request"]),
    (Kind::Noun, &["repo", "repository"]),
    (Kind::Noun, &["directory", "folder", "dir"]),
    (Kind::Noun, &["file", "document", "doc"]),
    (Kind::Noun, &["docs", "documentation", "manual"]),
    (Kind::Noun, &["user", "member", "person", "profile", "account"]),
    (Kind::Noun, &["message", "msg", "chat"]),
    (Kind::Noun, &["email", "mail"]),
    (Kind::Noun, &["event", "meeting", "appointment"]),
    (Kind::Noun, &["image", "picture", "photo"]),
    (Kind::Noun, &["database", "db"]),
    (Kind::Noun, &["kubernetes", "k8s"]),
    (Kind::Noun, &["statistics", "stats"]),
    (Kind::Noun, &["label", "tag"]),
    (Kind::Noun, &["spreadsheet", "sheet"]),
    (Kind::Noun, &["error", "exception", "failure"]),
    (Kind::Noun, &["url", "link", "address"]),
    (Kind::Noun, &["page", "webpage"]),
    (Kind::Noun, &["commit", "revision"]),
    (Kind::Noun, &["record", "row", "entry"]),
    (Kind::Noun, &["field", "column", "attribute", "property"]),
    (Kind::Noun, &["customer", "client"]),
    (Kind::Noun, &["order", "purchase"]),
    (Kind::Noun, &["invoice", "bill"]),
    (Kind::Noun, &["secret", "credential", "password"]),
    (Kind::Noun, &["workflow", "pipeline"]),
    (Kind::Noun, &["thread", "conversation"]),
    (Kind::Noun, &["log", "logs"]),
    (Kind::Noun, &["history", "changelog"]),
    (Kind::Noun, &["now", "current", "present"]),
    (Kind::Noun, &["code", "source"]),
];

/// The thesaurus's groups, each as its words (a phrase is one entry), in the order
/// [`Tuning::thesaurus_groups`] numbers them.
pub fn thesaurus_groups() -> Vec<&'static [&'static str]> {
    THESAURUS.iter().map(|(_, words)| *words).collect()
}

// `Tuning::thesaurus_groups` has one bit per group.
const _: () = assert!(THESAURUS.len() <= 64);

/// Splits, lower-cases, drops stop words and numbers, and stems `text`.
///
/// This is the normalisation both the index and the queries go through, exposed so
/// callers can see why two words meet (or do not).
///
/// ```
/// use iris_discovery::search::analyze;
/// assert_eq!(analyze("Creating new pullRequests"), ["creat", "new", "pull", "request"]);
/// assert_eq!(analyze("the repositories' README"), ["repository", "readm"]);
/// ```
pub fn analyze(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for_each_word(text, |word| {
        if let Some((term, _)) = normalize_word(word, Analysis::FULL) {
            out.push(term);
        }
    });
    out
}

/// Which normalisations a [`SearchIndex`] applies (from its [`Tuning`]).
#[derive(Clone, Copy)]
struct Analysis {
    stem: bool,
    stop: bool,
}

impl Analysis {
    /// What [`analyze`] applies: both.
    const FULL: Analysis = Analysis {
        stem: true,
        stop: true,
    };

    fn of(tuning: &Tuning) -> Analysis {
        Analysis {
            stem: tuning.stemming,
            stop: tuning.stop_words,
        }
    }
}

/// The prefix that keeps a word's surface form (lower-cased, not stemmed) apart from
/// the stems in one vocabulary; [`analyze`] never yields it.
const SURFACE_MARK: char = '=';

/// [`analyze`] into `stems`, and into `surfaces` the surface form (marked with
/// [`SURFACE_MARK`]) of every word the stemmer changed.
fn analyze_into(
    text: &str,
    stems: &mut Vec<String>,
    surfaces: &mut Vec<String>,
    analysis: Analysis,
) {
    for_each_word(text, |word| {
        if let Some((term, surface)) = normalize_word(word, analysis) {
            if let Some(surface) = surface {
                surfaces.push(surface);
            }
            stems.push(term);
        }
    });
}

/// Calls `f` with every raw word of `text`: maximal runs of letters and digits, further
/// split at camelCase humps ("pullRequest", "HTTPServer" → "HTTP", "Server").
fn for_each_word(text: &str, mut f: impl FnMut(&str)) {
    for run in text.split(|c: char| !c.is_alphanumeric()) {
        if run.is_empty() {
            continue;
        }
        let mut start = 0;
        // A window of (previous, current, next, the one after) over the run's chars.
        let mut chars = run.char_indices().peekable();
        let Some((_, mut prev)) = chars.next() else {
            continue;
        };
        while let Some((pos, c)) = chars.next() {
            let mut ahead = chars.clone();
            let next = ahead.next().map(|(_, n)| n);
            let after_next = ahead.next();
            // A pluralised acronym ("PRs", "URLs") ends in a lone "s": no hump there.
            let plural_acronym = next == Some('s') && after_next.is_none();
            // A hump starts at an upper-case letter after a lower-case letter or digit,
            // or at the last capital of an acronym followed by a lower-case letter.
            let hump = c.is_uppercase()
                && (prev.is_lowercase()
                    || prev.is_ascii_digit()
                    || (prev.is_uppercase()
                        && next.is_some_and(char::is_lowercase)
                        && !plural_acronym));
            if hump {
                f(&run[start..pos]);
                start = pos;
            }
            prev = c;
        }
        f(&run[start..]);
    }
}

/// Lower-cases and stems one word, with its marked surface form when stemming changed
/// it; `None` for stop words, single characters and numbers.
fn normalize_word(word: &str, analysis: Analysis) -> Option<(String, Option<String>)> {
    let lower = word.to_lowercase();
    if lower.chars().count() < 2 || lower.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    if analysis.stop && STOP_WORDS.binary_search(&lower.as_str()).is_ok() {
        return None;
    }
    if !analysis.stem {
        return Some((lower, None));
    }
    let stemmed = stem(lower.clone());
    let surface = (stemmed != lower).then(|| format!("{SURFACE_MARK}{lower}"));
    Some((stemmed, surface))
}

/// Words ending in "-er" that are not "someone who does": stripping would make them
/// another word ("custom-er", "contain-er", "serv-er") or no word at all. Sorted.
const KEEP_ER: &[&str] = &[
    "after",
    "answer",
    "better",
    "cluster",
    "container",
    "corner",
    "cover",
    "customer",
    "enter",
    "filter",
    "folder",
    "header",
    "layer",
    "letter",
    "master",
    "matter",
    "member",
    "never",
    "number",
    "order",
    "other",
    "over",
    "owner",
    "paper",
    "parameter",
    "power",
    "register",
    "server",
    "under",
    "water",
];

/// A small suffix-stripping stemmer for lower-case English words.
///
/// It is deliberately simple: it only has to map the forms tool metadata and requests
/// actually use onto one another, consistently. Three ordered steps strip a plural, an
/// inflection ("-ing", "-ed") and a derivation ("-ation", "-tion", "-er", "-ly"), so
/// "filters", "filtered" and "filtering" all meet "filter". Non-ASCII words are left
/// as they are.
fn stem(mut w: String) -> String {
    if !w.is_ascii() || w.len() < 3 {
        return w;
    }
    if w.len() == 3 {
        // Plurals of two-letter acronyms: "prs", "ids".
        if w.ends_with('s') && !(w.ends_with("ss") || w.ends_with("us") || w.ends_with("is")) {
            w.pop();
        }
        return w;
    }
    // Step 1: plurals.
    if w.ends_with("ies") && w.len() > 4 {
        w.truncate(w.len() - 3);
        w.push('y');
    } else if w.ends_with("sses") {
        w.truncate(w.len() - 2);
    } else if w.ends_with('s') && !(w.ends_with("ss") || w.ends_with("us") || w.ends_with("is")) {
        w.pop();
    }
    // Step 2: inflections, keeping at least three letters.
    let mut undouble = strip_suffix(&mut w, &[("ied", "y", 3), ("ing", "", 3), ("ed", "", 3)]);
    // Step 3: derivations. "-ly" needs a longer stem, so that "reply" and "apply" keep
    // theirs while "recently" loses it.
    if KEEP_ER.binary_search(&w.as_str()).is_err() {
        undouble |= strip_suffix(
            &mut w,
            &[
                ("ation", "ate", 3),
                ("tion", "te", 3),
                ("er", "", 3),
                ("ly", "", 5),
            ],
        );
    }
    // "running" → "runn" → "run"; "shopper" → "shopp" → "shop" ("installed" keeps "ll").
    if undouble && w.len() > 3 {
        let bytes = w.as_bytes();
        let (a, b) = (bytes[bytes.len() - 2], bytes[bytes.len() - 1]);
        if a == b && !matches!(b, b'a' | b'e' | b'i' | b'o' | b'u' | b'l' | b's' | b'z') {
            w.pop();
        }
    }
    // A silent final "e" ("create" and "creat|ing" meet at "creat").
    if w.len() > 3 && w.ends_with('e') {
        w.pop();
    }
    w
}

/// Strips the first matching `(suffix, replacement, minimal stem length)`; returns
/// whether it removed a suffix without replacing it (so a doubled consonant may remain).
fn strip_suffix(w: &mut String, rules: &[(&str, &str, usize)]) -> bool {
    for &(suffix, replacement, min_stem) in rules {
        if w.ends_with(suffix) && w.len() - suffix.len() >= min_stem {
            w.truncate(w.len() - suffix.len());
            w.push_str(replacement);
            return replacement.is_empty();
        }
    }
    false
}

/// The thesaurus after normalisation, built once per process.
struct Thesaurus {
    /// Each group's kind and members; a member is one or more normalised terms.
    groups: Vec<(Kind, Vec<Vec<String>>)>,
    /// Single-word member → the groups it belongs to.
    by_term: HashMap<String, Vec<usize>>,
}

/// The thesaurus normalised with or without stemming, each built once per process.
fn thesaurus(stemmed: bool) -> &'static Thesaurus {
    static STEMMED: OnceLock<Thesaurus> = OnceLock::new();
    static PLAIN: OnceLock<Thesaurus> = OnceLock::new();
    let cell = if stemmed { &STEMMED } else { &PLAIN };
    cell.get_or_init(|| {
        let mut groups = Vec::with_capacity(THESAURUS.len());
        let mut by_term: HashMap<String, Vec<usize>> = HashMap::new();
        for (g, (kind, words)) in THESAURUS.iter().enumerate() {
            let mut members = Vec::with_capacity(words.len());
            for word in *words {
                // Thesaurus words are normalised without the stop list, so that a
                // phrase member such as "look up" keeps both of its words.
                let mut terms = Vec::new();
                for_each_word(word, |w| {
                    let lower = w.to_lowercase();
                    terms.push(if stemmed { stem(lower) } else { lower });
                });
                if let [single] = terms.as_slice() {
                    let entry = by_term.entry(single.clone()).or_default();
                    if !entry.contains(&g) {
                        entry.push(g);
                    }
                }
                members.push(terms);
            }
            groups.push((*kind, members));
        }
        Thesaurus { groups, by_term }
    })
}

/// An index over tool definitions, built once and queried many times.
///
/// See the [module documentation](self) for the fields, weights and query expansion.
pub struct SearchIndex {
    /// Term → term id.
    vocabulary: HashMap<String, u32>,
    /// `(term, id)` sorted by term, for prefix completion.
    sorted_terms: Vec<(Box<str>, u32)>,
    /// Per term: `(doc, saturated BM25F term frequency)`, in doc order.
    postings: Vec<Vec<(u32, f64)>>,
    /// Per term: the verb groups of the thesaurus it belongs to.
    verb_groups: Vec<Vec<u16>>,
    /// Per doc: the first verb of the tool's own name, if any.
    name_verbs: Vec<Option<u32>>,
    /// Per doc: the head noun of the tool's own name (its last word), if any.
    name_heads: Vec<Option<u32>>,
    /// Per thesaurus group, per member: the ids of its indexed terms (empty when none
    /// is indexed), resolved once here instead of on every query.
    synonyms: Vec<Vec<Vec<u32>>>,
    /// Per doc: the distinct terms of the tool's own name.
    own_names: Vec<Vec<u32>>,
    /// Lower-cased full name and own name → the docs with it.
    names: HashMap<Box<str>, Vec<u32>>,
    docs: usize,
    /// The weights this index ranks with.
    tuning: Tuning,
}

impl std::fmt::Debug for SearchIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SearchIndex")
            .field("docs", &self.docs)
            .field("terms", &self.postings.len())
            .finish_non_exhaustive()
    }
}

/// The normalised fields of one definition.
struct DocFields {
    fields: [Vec<String>; FIELD_COUNT],
    /// Per field, the marked surface forms of the words stemming changed (see
    /// `Tuning::surface_weight`); they share their field's weight and length norm.
    surfaces: [Vec<String>; FIELD_COUNT],
    /// The tool's own name terms in order, aliases excluded.
    name: Vec<String>,
}

fn doc_fields(def: &ToolDefinition, analysis: Analysis) -> DocFields {
    let mut fields: [Vec<String>; FIELD_COUNT] = Default::default();
    let mut surfaces: [Vec<String>; FIELD_COUNT] = Default::default();
    // `mcp__server__tool`: the last segment is the tool's own name, the rest is
    // namespace and belongs with the group.
    let (namespace, own) = match def.name.rsplit_once("__") {
        Some((ns, own)) if !own.is_empty() => (ns, own),
        _ => ("", def.name.as_str()),
    };
    let mut name = Vec::new();
    analyze_into(
        own,
        &mut name,
        &mut surfaces[Field::Name as usize],
        analysis,
    );
    fields[Field::Name as usize].extend(name.iter().cloned());
    for alias in &def.aliases {
        analyze_into(
            alias,
            &mut fields[Field::Name as usize],
            &mut surfaces[Field::Name as usize],
            analysis,
        );
    }
    let group = &mut fields[Field::Group as usize];
    let (mut labels, mut unused) = (Vec::new(), Vec::new());
    analyze_into(&def.group, &mut labels, &mut unused, analysis);
    analyze_into(namespace, &mut labels, &mut unused, analysis);
    for term in labels {
        // The group is a label: each of its words counts once.
        if !group.contains(&term) {
            group.push(term);
        }
    }
    for tag in def.tags() {
        analyze_into(
            tag,
            &mut fields[Field::Tags as usize],
            &mut surfaces[Field::Tags as usize],
            analysis,
        );
    }
    analyze_into(
        &def.description,
        &mut fields[Field::Description as usize],
        &mut surfaces[Field::Description as usize],
        analysis,
    );
    let mut schema = SchemaText::default();
    collect_schema(&def.input_schema, &mut schema, 0, analysis);
    fields[Field::ArgName as usize] = schema.names;
    surfaces[Field::ArgName as usize] = schema.name_surfaces;
    fields[Field::ArgDescription as usize] = schema.descriptions;
    surfaces[Field::ArgDescription as usize] = schema.description_surfaces;
    DocFields {
        fields,
        surfaces,
        name,
    }
}

/// Where [`collect_schema`] puts what it reads: argument names and descriptions, and
/// their surface forms.
#[derive(Default)]
struct SchemaText {
    names: Vec<String>,
    name_surfaces: Vec<String>,
    descriptions: Vec<String>,
    description_surfaces: Vec<String>,
}

/// Collects property names and descriptions from a JSON Schema, recursing through
/// nested objects, array items, combinators and local definitions.
fn collect_schema(schema: &Value, out: &mut SchemaText, depth: usize, analysis: Analysis) {
    if depth > MAX_SCHEMA_DEPTH {
        return;
    }
    let Some(obj) = schema.as_object() else {
        return;
    };
    if let Some(Value::Object(props)) = obj.get("properties") {
        for (key, sub) in props {
            analyze_into(key, &mut out.names, &mut out.name_surfaces, analysis);
            if let Some(Value::String(d)) = sub.get("description") {
                analyze_into(
                    d,
                    &mut out.descriptions,
                    &mut out.description_surfaces,
                    analysis,
                );
            }
            collect_schema(sub, out, depth + 1, analysis);
        }
    }
    match obj.get("items") {
        Some(items @ Value::Object(_)) => collect_schema(items, out, depth + 1, analysis),
        Some(Value::Array(items)) => {
            for item in items {
                collect_schema(item, out, depth + 1, analysis);
            }
        }
        _ => {}
    }
    for key in ["anyOf", "oneOf", "allOf"] {
        if let Some(Value::Array(options)) = obj.get(key) {
            for option in options {
                collect_schema(option, out, depth + 1, analysis);
            }
        }
    }
    for key in ["$defs", "definitions"] {
        if let Some(Value::Object(defs)) = obj.get(key) {
            for sub in defs.values() {
                collect_schema(sub, out, depth + 1, analysis);
            }
        }
    }
}

/// A query ready to rank: its words and the docs it names.
struct PreparedQuery<'a> {
    terms: Vec<QueryTerm<'a>>,
    /// Docs whose name the query spells out (see [`SearchIndex::named_docs`]).
    named: Vec<u32>,
}

/// A query word with everything it may match.
struct QueryTerm<'a> {
    /// `(terms, weight)`: the word itself, its synonyms and its completions. An
    /// alternative of several terms (a phrase) needs all of them and scores as its
    /// weakest. The terms are borrowed from the index, so analysing a query allocates
    /// no id lists.
    alternatives: Vec<(&'a [u32], f64)>,
    /// Verb groups the word belongs to (empty when it is no verb).
    verb_groups: Vec<u16>,
    /// The word's own id, when indexed.
    id: Option<u32>,
    /// Whether the word can name an object (it is a noun or unknown to the thesaurus).
    object: bool,
}

impl SearchIndex {
    /// Indexes name, aliases, group, tags, description and argument names and
    /// descriptions of each definition, to rank with the shipped weights.
    pub fn new(defs: &[ToolDefinition]) -> Self {
        Self::with_tuning(defs, Tuning::DEFAULT)
    }

    /// [`SearchIndex::new`] with other weights (the evaluation's sweeps). A bonus below
    /// 1 counts as 1: the top-k selection relies on bonuses only raising a score.
    pub fn with_tuning(defs: &[ToolDefinition], mut tuning: Tuning) -> Self {
        tuning.verb_object_bonus = tuning.verb_object_bonus.max(1.0);
        tuning.full_name_bonus = tuning.full_name_bonus.max(1.0);
        let analysis = Analysis::of(&tuning);
        let docs: Vec<DocFields> = defs.iter().map(|d| doc_fields(d, analysis)).collect();
        let mut vocabulary: HashMap<String, u32> = HashMap::new();
        fn intern(term: &str, vocabulary: &mut HashMap<String, u32>) -> u32 {
            if let Some(&id) = vocabulary.get(term) {
                return id;
            }
            let id = u32::try_from(vocabulary.len()).unwrap_or(u32::MAX);
            vocabulary.insert(term.to_owned(), id);
            id
        }

        let mut avg_len = [0.0f64; FIELD_COUNT];
        for doc in &docs {
            for (f, terms) in doc.fields.iter().enumerate() {
                avg_len[f] += terms.len() as f64;
            }
        }
        for len in &mut avg_len {
            *len /= docs.len().max(1) as f64;
        }

        // Pseudo term frequency per (term, doc): Σ_f w_f · tf_f / norm_f.
        let mut postings: Vec<Vec<(u32, f64)>> = Vec::new();
        let mut name_terms: Vec<Vec<u32>> = Vec::with_capacity(docs.len());
        let mut group_terms: Vec<Vec<u32>> = Vec::with_capacity(docs.len());
        let mut per_doc: Vec<(u32, f64)> = Vec::new();
        for (d, doc) in docs.iter().enumerate() {
            per_doc.clear();
            for (f, terms) in doc.fields.iter().enumerate() {
                let (weight, b) = (tuning.field_weights[f], tuning.field_b[f]);
                if weight <= 0.0 {
                    continue;
                }
                let norm = if avg_len[f] > 0.0 {
                    1.0 - b + b * terms.len() as f64 / avg_len[f]
                } else {
                    1.0
                };
                for term in terms.iter().chain(&doc.surfaces[f]) {
                    let id = intern(term, &mut vocabulary);
                    per_doc.push((id, weight / norm));
                }
            }
            // Sorting by term id keeps the float sums in a fixed order.
            per_doc.sort_by_key(|&(id, _)| id);
            let doc_id = u32::try_from(d).unwrap_or(u32::MAX);
            let mut i = 0;
            while i < per_doc.len() {
                let id = per_doc[i].0;
                let mut tf = 0.0;
                while i < per_doc.len() && per_doc[i].0 == id {
                    tf += per_doc[i].1;
                    i += 1;
                }
                let id = id as usize;
                if postings.len() <= id {
                    postings.resize_with(id + 1, Vec::new);
                }
                postings[id].push((doc_id, tf));
            }
            name_terms.push(
                doc.name
                    .iter()
                    .filter_map(|t| vocabulary.get(t).copied())
                    .collect(),
            );
            group_terms.push(
                doc.fields[Field::Group as usize]
                    .iter()
                    .filter_map(|t| vocabulary.get(t).copied())
                    .collect(),
            );
        }
        postings.resize_with(vocabulary.len(), Vec::new);

        // Saturate once here; the idf is applied per query word, because a word and its
        // synonyms share one (see `search`).
        for list in &mut postings {
            for (_, tf) in list.iter_mut() {
                *tf = *tf * (tuning.k1 + 1.0) / (*tf + tuning.k1);
            }
        }

        let mut sorted_terms: Vec<(Box<str>, u32)> = vocabulary
            .iter()
            .filter(|(term, _)| !term.starts_with(SURFACE_MARK))
            .map(|(term, &id)| (term.as_str().into(), id))
            .collect();
        sorted_terms.sort();

        let thesaurus = thesaurus(tuning.stemming);
        let mut verb_groups: Vec<Vec<u16>> = vec![Vec::new(); vocabulary.len()];
        for (term, &id) in &vocabulary {
            if let Some(groups) = thesaurus.by_term.get(term) {
                verb_groups[id as usize] = groups
                    .iter()
                    .filter(|&&g| thesaurus.groups[g].0 == Kind::Verb && tuning.uses_group(g))
                    .filter_map(|&g| u16::try_from(g).ok())
                    .collect();
            }
        }

        // Tool names read "verb + compound noun" (`add_issue_comment` adds a comment),
        // so the pair is the first verb and the last word. The server's own name inside
        // a tool name ("jira" in `jira_create_issue`) is neither.
        let mut name_verbs = Vec::with_capacity(docs.len());
        let mut name_heads = Vec::with_capacity(docs.len());
        for (names, groups) in name_terms.iter().zip(&group_terms) {
            let own: Vec<u32> = names
                .iter()
                .copied()
                .filter(|t| !groups.contains(t))
                .collect();
            let verb_at = own
                .iter()
                .position(|&t| !verb_groups[t as usize].is_empty());
            let head_at = own
                .len()
                .checked_sub(1)
                .filter(|&last| Some(last) != verb_at);
            name_verbs.push(verb_at.map(|i| own[i]));
            name_heads.push(head_at.map(|i| own[i]));
        }

        let synonyms = thesaurus
            .groups
            .iter()
            .map(|(_, members)| {
                members
                    .iter()
                    .map(|member| {
                        member
                            .iter()
                            .filter_map(|t| vocabulary.get(t).copied())
                            .collect()
                    })
                    .collect()
            })
            .collect();

        let own_names = name_terms
            .iter()
            .map(|t| {
                let mut t = t.clone();
                t.sort_unstable();
                t.dedup();
                t
            })
            .collect();
        let mut names: HashMap<Box<str>, Vec<u32>> = HashMap::new();
        for (d, def) in defs.iter().enumerate() {
            let doc = u32::try_from(d).unwrap_or(u32::MAX);
            let full = def.name.to_lowercase();
            let own = full.rsplit("__").next().unwrap_or(&full).to_owned();
            for key in [full.clone(), own] {
                let docs = names.entry(key.into_boxed_str()).or_default();
                if !docs.contains(&doc) {
                    docs.push(doc);
                }
            }
        }
        Self {
            own_names,
            names,
            vocabulary,
            sorted_terms,
            postings,
            verb_groups,
            name_verbs,
            name_heads,
            synonyms,
            docs: docs.len(),
            tuning,
        }
    }

    /// Number of indexed definitions.
    pub fn len(&self) -> usize {
        self.docs
    }

    /// Whether no definition is indexed.
    pub fn is_empty(&self) -> bool {
        self.docs == 0
    }

    fn query_terms(&self, query: &str) -> Vec<QueryTerm<'_>> {
        let thesaurus = thesaurus(self.tuning.stemming);
        let (mut words, mut surfaces) = (Vec::new(), Vec::new());
        analyze_into(query, &mut words, &mut surfaces, Analysis::of(&self.tuning));
        let mut seen = Vec::with_capacity(words.len());
        words.retain(|w| {
            let fresh = !seen.contains(w);
            if fresh {
                seen.push(w.clone());
            }
            fresh
        });
        words.truncate(MAX_QUERY_TERMS);

        let mut terms: Vec<QueryTerm<'_>> = words
            .iter()
            .map(|word| {
                let entry = self.vocabulary.get(word);
                let id = entry.copied();
                let mut alternatives: Vec<(&[u32], f64)> = Vec::new();
                match entry {
                    Some(id) => alternatives.push((std::slice::from_ref(id), 1.0)),
                    None if word.len() >= 3 && self.tuning.prefix_weight > 0.0 => {
                        let start = self
                            .sorted_terms
                            .partition_point(|(t, _)| t.as_ref() < word.as_str());
                        alternatives.extend(
                            self.sorted_terms[start..]
                                .iter()
                                .take_while(|(t, _)| t.starts_with(word.as_str()))
                                .take(MAX_PREFIX_EXPANSIONS)
                                .map(|(_, id)| {
                                    (std::slice::from_ref(id), self.tuning.prefix_weight)
                                }),
                        );
                    }
                    None => {}
                }
                let groups: Vec<usize> = thesaurus
                    .by_term
                    .get(word)
                    .map_or(&[][..], Vec::as_slice)
                    .iter()
                    .copied()
                    .filter(|&g| self.tuning.uses_group(g))
                    .collect();
                let expand = self.tuning.synonym_weight > 0.0;
                let mut verb_groups = Vec::new();
                let mut object = groups.is_empty();
                for g in groups {
                    match thesaurus.groups[g].0 {
                        Kind::Verb => verb_groups.extend(u16::try_from(g).ok()),
                        Kind::Noun => object = true,
                    }
                    // The word itself, when a member, resolves to its own id (already
                    // the first alternative) or to nothing, so the duplicate check
                    // skips it.
                    for ids in self.synonyms[g].iter().filter(|_| expand) {
                        let ids = ids.as_slice();
                        if !ids.is_empty() && !alternatives.iter().any(|&(a, _)| a == ids) {
                            alternatives.push((ids, self.tuning.synonym_weight));
                        }
                    }
                }
                QueryTerm {
                    alternatives,
                    verb_groups,
                    id,
                    object,
                }
            })
            .collect();
        // A word the stemmer changed also counts as typed, on top of its stem, where a
        // tool has that very form: "buckets" favours "List all buckets" over "Create a
        // bucket". It is neither verb nor object, and never a tool-name word.
        let mut seen_surfaces: Vec<u32> = Vec::new();
        for surface in surfaces.iter().filter(|_| self.tuning.surface_weight > 0.0) {
            if terms.len() >= MAX_QUERY_TERMS {
                break;
            }
            let Some(id) = self.vocabulary.get(surface) else {
                continue;
            };
            if seen_surfaces.contains(id) {
                continue;
            }
            seen_surfaces.push(*id);
            terms.push(QueryTerm {
                alternatives: vec![(std::slice::from_ref(id), self.tuning.surface_weight)],
                verb_groups: Vec::new(),
                id: Some(*id),
                object: false,
            });
        }
        terms
    }

    /// Whether the doc's name pairs a verb and an object of the query, through two
    /// different query words.
    fn verb_object_match(&self, doc: usize, terms: &[QueryTerm]) -> bool {
        let (Some(verb), Some(head)) = (self.name_verbs[doc], self.name_heads[doc]) else {
            return false;
        };
        let verb_groups = &self.verb_groups[verb as usize];
        let (mut verb_mask, mut object_mask) = (0u64, 0u64);
        for (i, q) in terms.iter().enumerate() {
            let bit = 1u64 << i;
            if Some(verb) == q.id || verb_groups.iter().any(|g| q.verb_groups.contains(g)) {
                verb_mask |= bit;
            }
            if q.object && q.alternatives.iter().any(|(ids, _)| ids.contains(&head)) {
                object_mask |= bit;
            }
        }
        verb_mask != 0
            && object_mask != 0
            && !(verb_mask == object_mask && verb_mask.count_ones() == 1)
    }

    /// The best `limit` hits for a query, best first; ties keep candidate order.
    ///
    /// A query that normalises to nothing (empty, or only stop words) has no hits.
    pub fn search(&self, query: &str, limit: usize) -> Vec<SearchHit> {
        if limit == 0 || self.docs == 0 {
            return Vec::new();
        }
        let query = self.prepare(query);
        SCRATCH.with(|cell| match cell.try_borrow_mut() {
            Ok(mut scratch) => self.rank(&query, limit, &mut scratch),
            // Only a re-entrant call on this thread (a search from inside a search)
            // finds the buffers taken; it pays for fresh ones instead of failing.
            Err(_) => self.rank(&query, limit, &mut Scratch::default()),
        })
    }

    /// A query's words with their alternatives, and the docs it names outright.
    fn prepare<'a>(&'a self, query: &str) -> PreparedQuery<'a> {
        PreparedQuery {
            terms: self.query_terms(query),
            named: if self.tuning.named_tier {
                self.named_docs(query)
            } else {
                Vec::new()
            },
        }
    }

    /// Scores every doc the query words reach and keeps the best `limit`.
    fn rank(
        &self,
        query: &PreparedQuery<'_>,
        limit: usize,
        scratch: &mut Scratch,
    ) -> Vec<SearchHit> {
        let terms = &query.terms;
        scratch.prepare(self.docs);
        let Scratch {
            slots,
            touched,
            matched,
            scored,
            hits,
            dirty,
        } = scratch;
        let n = self.docs as f64;
        let idf = |df: f64| (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
        for term in terms {
            for &(ids, weight) in &term.alternatives {
                let is_direct = term.id.is_some() && ids.len() == 1 && Some(ids[0]) == term.id;
                if let [id] = ids {
                    // One word: a doc occurs at most once in its posting list, so it
                    // matches right away, with no phrase bookkeeping.
                    for &(doc, tf) in &self.postings[*id as usize] {
                        let slot = &mut slots[doc as usize];
                        if slot.direct == 0.0 && slot.expanded == 0.0 {
                            matched.push(doc);
                        }
                        let best = if is_direct {
                            &mut slot.direct
                        } else {
                            &mut slot.expanded
                        };
                        *best = best.max(weight * tf);
                    }
                    continue;
                }
                // A phrase matches a doc only where all of its words occur, as strongly
                // as its weakest word.
                let words = u32::try_from(ids.len()).unwrap_or(u32::MAX);
                for &id in ids {
                    for &(doc, tf) in &self.postings[id as usize] {
                        let slot = &mut slots[doc as usize];
                        if slot.hits == 0 {
                            touched.push(doc);
                            slot.alt = tf;
                        } else {
                            slot.alt = slot.alt.min(tf);
                        }
                        slot.hits += 1;
                    }
                }
                for &doc in touched.iter() {
                    let slot = &mut slots[doc as usize];
                    if slot.hits == words {
                        if slot.direct == 0.0 && slot.expanded == 0.0 {
                            matched.push(doc);
                        }
                        let best = if is_direct {
                            &mut slot.direct
                        } else {
                            &mut slot.expanded
                        };
                        *best = best.max(weight * slot.alt);
                    }
                    slot.alt = 0.0;
                    slot.hits = 0;
                }
                touched.clear();
            }
            // The typed word keeps its own idf. Its synonyms and completions share the
            // idf of the whole concept (every doc any alternative matched), so a rare
            // synonym cannot outweigh the word the user actually wrote.
            let own_idf = term
                .id
                .map_or(0.0, |id| idf(self.postings[id as usize].len() as f64));
            let concept_idf = idf(matched.len() as f64);
            for &doc in matched.iter() {
                let slot = &mut slots[doc as usize];
                if slot.total == 0.0 {
                    scored.push(doc);
                }
                slot.total += (own_idf * slot.direct).max(concept_idf * slot.expanded);
                slot.direct = 0.0;
                slot.expanded = 0.0;
            }
            matched.clear();
        }

        hits.clear();
        for &doc in scored.iter() {
            let slot = &mut slots[doc as usize];
            if slot.total > 0.0 {
                hits.push(SearchHit {
                    index: doc as usize,
                    score: slot.total,
                });
            }
            slot.total = 0.0;
        }
        scored.clear();
        // Every slot is zero again: the next query may reuse the buffers as they are.
        *dirty = false;
        self.top(hits, terms, &query.named, limit)
    }

    /// The best `limit` of `hits` (base scores, any order) after the bonuses and the
    /// exact-name tier, best first, ties by candidate order: exactly what sorting every
    /// hit would give, without sorting or checking the bonuses of every hit.
    fn top(
        &self,
        hits: &mut Vec<SearchHit>,
        terms: &[QueryTerm],
        exact: &[u32],
        limit: usize,
    ) -> Vec<SearchHit> {
        let is_exact = |doc: usize| exact.binary_search(&(doc as u32)).is_ok();
        // Named tools first (all kept: their tier lifts them), then the others.
        let mut named = 0;
        for i in 0..hits.len() {
            if is_exact(hits[i].index) {
                hits.swap(i, named);
                named += 1;
            }
        }
        let others = &mut hits[named..];
        if others.len() > limit {
            // Among the others, the `limit`-th best base score bounds the `limit`-th
            // best final score from below, since the bonuses only raise a score. One
            // that stays below that bound even with both bonuses is beaten by at least
            // `limit` others; its bonuses cannot matter. The best other is always kept,
            // so the named tools' tier is what the full ranking would give.
            others.select_nth_unstable_by(limit - 1, rank_order);
            let bound = others[limit - 1].score;
            let mut kept = named;
            for i in named..hits.len() {
                let most = self.tuning.verb_object_bonus * self.tuning.full_name_bonus;
                if hits[i].score * most >= bound {
                    hits.swap(i, kept);
                    kept += 1;
                }
            }
            hits.truncate(kept);
        }
        for hit in hits.iter_mut() {
            if self.verb_object_match(hit.index, terms) {
                hit.score *= self.tuning.verb_object_bonus;
            }
            if self.full_name_match(hit.index, terms) {
                hit.score *= self.tuning.full_name_bonus;
            }
        }
        if !exact.is_empty() {
            // A tool the query names outright outranks every tool it does not name,
            // however many synonyms those match: its score is raised by the best
            // score of the others.
            let others = hits
                .iter()
                .filter(|h| !is_exact(h.index))
                .map(|h| h.score)
                .fold(0.0, f64::max);
            for hit in hits.iter_mut().filter(|h| is_exact(h.index)) {
                hit.score += others;
            }
        }
        if hits.len() > limit {
            hits.select_nth_unstable_by(limit - 1, rank_order);
            hits.truncate(limit);
        }
        // Candidate indices are distinct, so this order is total and the result is the
        // same whichever selection ran before.
        hits.sort_unstable_by(rank_order);
        hits.clone()
    }

    /// Whether the query contains, as typed (no synonym, no completion), every word of
    /// the doc's own name.
    fn full_name_match(&self, doc: usize, terms: &[QueryTerm]) -> bool {
        let own = &self.own_names[doc];
        !own.is_empty() && own.iter().all(|&t| terms.iter().any(|q| q.id == Some(t)))
    }

    /// Docs whose full name or own name (lower-cased) the query spells out as one
    /// token (`create_issue`, `mcp__github__create_issue`), in doc order.
    fn named_docs(&self, query: &str) -> Vec<u32> {
        let mut out = Vec::new();
        for token in query.split(|c: char| !(c.is_alphanumeric() || c == '_')) {
            if token.len() < 2 {
                continue;
            }
            if let Some(docs) = self.names.get(token.to_lowercase().as_str()) {
                for &doc in docs {
                    if !out.contains(&doc) {
                        out.push(doc);
                    }
                }
            }
        }
        out.sort_unstable();
        out
    }
}

/// Best first: higher score, then lower candidate index.
fn rank_order(a: &SearchHit, b: &SearchHit) -> std::cmp::Ordering {
    b.score.total_cmp(&a.score).then(a.index.cmp(&b.index))
}

/// Per-doc accumulators of one query, all zero between queries.
#[derive(Clone, Copy, Default)]
struct Slot {
    /// Sum over the finished query words.
    total: f64,
    /// For the current query word: the typed word's saturated frequency.
    direct: f64,
    /// For the current query word: the best weighted synonym or completion.
    expanded: f64,
    /// For the current alternative: the weakest frequency of its words seen so far.
    alt: f64,
    /// For the current alternative: how many of its words the doc has.
    hits: u32,
}

/// Reusable buffers for [`SearchIndex::search`], one set per thread.
///
/// A 10,000-tool query would otherwise allocate and zero per-doc arrays of 10,000
/// entries each time; the buffers here are zeroed lazily (only the slots a query
/// touched), and a [`SearchIndex`] stays `Send + Sync` because it owns none of them.
#[derive(Default)]
struct Scratch {
    slots: Vec<Slot>,
    /// Docs touched by the current alternative.
    touched: Vec<u32>,
    /// Docs matched by the current query word.
    matched: Vec<u32>,
    /// Docs with a non-zero total.
    scored: Vec<u32>,
    hits: Vec<SearchHit>,
    /// Set while a query runs; still set at the next start only if a query was
    /// interrupted (a panic), leaving slots it had touched non-zero.
    dirty: bool,
}

impl Scratch {
    /// Makes room for `docs` docs, with every slot and list clean.
    fn prepare(&mut self, docs: usize) {
        if self.dirty {
            self.slots.fill(Slot::default());
            self.touched.clear();
            self.matched.clear();
            self.scored.clear();
        }
        if self.slots.len() < docs {
            self.slots.resize(docs, Slot::default());
        }
        self.dirty = true;
    }
}

// The per-thread buffers must not make the index itself thread-bound: `tool_search`
// shares one index across tasks. This fails to compile if it ever does.
const _: fn() = || {
    fn shareable<T: Send + Sync>() {}
    shareable::<SearchIndex>();
};

thread_local! {
    static SCRATCH: std::cell::RefCell<Scratch> = std::cell::RefCell::new(Scratch::default());
}

/// The SDK's local search over a view's deferred candidates (the Python reference's
/// `view.search_deferred`), as an extension of [`ToolRegistryView`].
pub trait SearchDeferred {
    /// Deferred, not yet active candidates of the view ranked by relevance over name,
    /// tags, group, description and argument names, at most `limit`.
    ///
    /// `include_groups`: `None` does not narrow; an empty set admits no group.
    /// `allowed_names`: `None` does not narrow.
    fn search_deferred(
        &self,
        query: &str,
        include_groups: Option<&BTreeSet<String>>,
        limit: usize,
        allowed_names: Option<&BTreeSet<String>>,
    ) -> Vec<ToolDefinition>;
}

impl SearchDeferred for ToolRegistryView {
    fn search_deferred(
        &self,
        query: &str,
        include_groups: Option<&BTreeSet<String>>,
        limit: usize,
        allowed_names: Option<&BTreeSet<String>>,
    ) -> Vec<ToolDefinition> {
        let active: BTreeSet<String> = self
            .active_tools()
            .iter()
            .map(|t| t.definition().name.clone())
            .collect();
        let candidates: Vec<ToolDefinition> = self
            .available_tools()
            .iter()
            .map(|t| t.definition())
            .filter(|d| d.deferred && !active.contains(&d.name))
            .filter(|d| include_groups.is_none_or(|g| g.contains(&d.group)))
            .filter(|d| allowed_names.is_none_or(|n| n.contains(&d.name)))
            .cloned()
            .collect();
        let index = SearchIndex::new(&candidates);
        index
            .search(query, limit)
            .into_iter()
            .map(|hit| candidates[hit.index].clone())
            .collect()
    }
}

/// The evaluation scaffolding the integration tests and benches share, for the unit
/// tests below (it names this crate `iris_discovery`, see `lib.rs`).
#[cfg(test)]
#[path = "../tests/eval/mod.rs"]
mod eval;

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)] // Tests fail loudly on purpose.

    use super::*;

    const CATALOG: &str = include_str!("../tests/fixtures/mcp_catalog.json");
    const QUERIES: &str = include_str!("../tests/fixtures/mcp_queries.json");

    /// The fixture catalog twice over, so that every hit has an exact tie (its copy)
    /// and tie order is exercised on every query.
    fn doubled_catalog() -> Vec<ToolDefinition> {
        let base = eval::load_catalog(CATALOG).unwrap();
        base.iter().chain(&base).cloned().collect()
    }

    /// The bounded selection must return exactly the first `limit` hits of the full
    /// ranking (every hit, fully sorted), scores included.
    fn check(index: &SearchIndex, query: &str, limit: usize) {
        let full = index.search(query, usize::MAX);
        let expect = &full[..full.len().min(limit)];
        assert_eq!(
            index.search(query, limit),
            expect,
            "{query:?} limit {limit}"
        );
        // The fresh-buffer path (a re-entrant search) ranks identically.
        let prepared = index.prepare(query);
        let fresh = index.rank(&prepared, limit, &mut Scratch::default());
        assert_eq!(fresh, expect, "{query:?} limit {limit}, fresh buffers");
    }

    #[test]
    fn bounded_selection_matches_the_full_ranking() {
        let single = SearchIndex::new(&eval::load_catalog(CATALOG).unwrap());
        let doubled = SearchIndex::new(&doubled_catalog());
        let queries = eval::load_queries(QUERIES).unwrap();
        assert!(queries.len() >= 150);
        // Alternating a larger and a smaller index on one thread also checks that the
        // shared buffers come back clean whatever size the last query used.
        for q in &queries {
            for limit in [1, 2, 3, 5, 10, 50] {
                check(&doubled, &q.query, limit);
                check(&single, &q.query, limit);
            }
        }
    }

    #[test]
    fn dirty_buffers_are_cleaned_before_use() {
        let index = SearchIndex::new(&eval::load_catalog(CATALOG).unwrap());
        let query = "open a ticket for the login bug";
        let expect = index.search(query, 5);
        assert!(!expect.is_empty());
        // What an interrupted query would leave behind.
        let mut scratch = Scratch::default();
        scratch.prepare(index.len());
        scratch.slots.fill(Slot {
            total: 9.0,
            direct: 1.0,
            expanded: 1.0,
            alt: 1.0,
            hits: 3,
        });
        scratch.scored.push(0);
        let prepared = index.prepare(query);
        assert_eq!(index.rank(&prepared, 5, &mut scratch), expect);
        // Afterwards the buffers are clean again and need no sweep.
        assert!(!scratch.dirty);
        assert!(scratch.slots.iter().all(|s| s.total == 0.0 && s.hits == 0));
    }
}
