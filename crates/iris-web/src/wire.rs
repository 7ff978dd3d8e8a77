//! Tavily's documented wire format for `POST /search` and `POST /extract`.
//!
//! What the client sends (JSON, `Authorization: Bearer <key>`):
//!
//! | endpoint | body |
//! |---|---|
//! | `/search` | `query`, `search_depth: "basic"`, `max_results`, `time_range` (only when set), `include_domains`, `exclude_domains`, `include_answer: false` |
//! | `/extract` | `urls`, `extract_depth: "basic"`, `query` (only when set: Tavily then returns the chunks most relevant to it instead of the whole page) |
//!
//! Everything else keeps Tavily's default (`topic: "general"`, no raw content, no
//! images, markdown extraction, three chunks per source for a query). The depth is
//! always `basic` and search never asks for a generated answer: the model gets sources,
//! not a second model's summary.
//!
//! What the client reads: `/search` → `results[]` of `{title, url, content, score}`
//! (plus `request_id`); `/extract` → `results[]` of `{url, raw_content}` and
//! `failed_results[]` of `{url, error}`. Unknown fields are ignored and `null` strings
//! read as empty, so additions on Tavily's side do not break the client.

use serde::{Deserialize, Deserializer, Serialize};

/// How far back a search looks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TimeRange {
    /// The last day.
    Day,
    /// The last week.
    Week,
    /// The last month.
    Month,
    /// The last year.
    Year,
}

impl TimeRange {
    /// Every range, shortest first.
    pub const ALL: [TimeRange; 4] = [
        TimeRange::Day,
        TimeRange::Week,
        TimeRange::Month,
        TimeRange::Year,
    ];

    /// The wire name: `day`, `week`, `month`, `year`.
    pub fn as_str(self) -> &'static str {
        match self {
            TimeRange::Day => "day",
            TimeRange::Week => "week",
            TimeRange::Month => "month",
            TimeRange::Year => "year",
        }
    }

    /// The range with this wire name; `None` for anything else (names are lower case).
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|r| r.as_str() == name)
    }
}

/// One search, as the `web_search` tool asks for it.
///
/// ```
/// use iris_web::{SearchRequest, TimeRange};
/// let req = SearchRequest::new("rust 2024 edition").max_results(5).time_range(TimeRange::Year);
/// assert_eq!(req.max_results, 5);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchRequest {
    /// The query text.
    pub query: String,
    /// How many results to return.
    pub max_results: u32,
    /// Only results from this period, when set.
    pub time_range: Option<TimeRange>,
    /// Only results from these domains, when not empty.
    pub include_domains: Vec<String>,
    /// No results from these domains.
    pub exclude_domains: Vec<String>,
}

impl SearchRequest {
    /// A search with the tool's defaults: 10 results, any time, every domain.
    pub fn new(query: impl Into<String>) -> Self {
        Self {
            query: query.into(),
            max_results: crate::search::DEFAULT_MAX_RESULTS,
            time_range: None,
            include_domains: Vec::new(),
            exclude_domains: Vec::new(),
        }
    }

    /// Sets the number of results.
    #[must_use]
    pub fn max_results(mut self, n: u32) -> Self {
        self.max_results = n;
        self
    }

    /// Sets the period.
    #[must_use]
    pub fn time_range(mut self, range: TimeRange) -> Self {
        self.time_range = Some(range);
        self
    }

    /// Sets the domains to search in.
    #[must_use]
    pub fn include_domains<S: Into<String>>(
        mut self,
        domains: impl IntoIterator<Item = S>,
    ) -> Self {
        self.include_domains = domains.into_iter().map(Into::into).collect();
        self
    }

    /// Sets the domains to leave out.
    #[must_use]
    pub fn exclude_domains<S: Into<String>>(
        mut self,
        domains: impl IntoIterator<Item = S>,
    ) -> Self {
        self.exclude_domains = domains.into_iter().map(Into::into).collect();
        self
    }

    /// The JSON body sent to `/search`.
    pub(crate) fn body(&self) -> SearchBody<'_> {
        SearchBody {
            query: &self.query,
            search_depth: "basic",
            max_results: self.max_results,
            time_range: self.time_range,
            include_domains: &self.include_domains,
            exclude_domains: &self.exclude_domains,
            include_answer: false,
        }
    }
}

/// The `/search` body; field order is the order on the wire.
#[derive(Debug, Serialize)]
pub(crate) struct SearchBody<'a> {
    query: &'a str,
    search_depth: &'static str,
    max_results: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    time_range: Option<TimeRange>,
    include_domains: &'a [String],
    exclude_domains: &'a [String],
    include_answer: bool,
}

/// One extraction, as the `web_fetch` tool asks for it.
///
/// ```
/// use iris_web::ExtractRequest;
/// let req = ExtractRequest::new(["https://example.com/"]).query("pricing");
/// assert_eq!(req.query.as_deref(), Some("pricing"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExtractRequest {
    /// The pages to extract.
    pub urls: Vec<String>,
    /// `None` extracts each page whole; a query returns the excerpts relevant to it.
    pub query: Option<String>,
}

impl ExtractRequest {
    /// A whole-page extraction of these URLs.
    pub fn new<S: Into<String>>(urls: impl IntoIterator<Item = S>) -> Self {
        Self {
            urls: urls.into_iter().map(Into::into).collect(),
            query: None,
        }
    }

    /// Asks for the excerpts relevant to `query` instead of whole pages.
    #[must_use]
    pub fn query(mut self, query: impl Into<String>) -> Self {
        self.query = Some(query.into());
        self
    }

    /// The JSON body sent to `/extract`.
    pub(crate) fn body(&self) -> ExtractBody<'_> {
        ExtractBody {
            urls: &self.urls,
            extract_depth: "basic",
            query: self.query.as_deref(),
        }
    }
}

/// The `/extract` body; field order is the order on the wire.
#[derive(Debug, Serialize)]
pub(crate) struct ExtractBody<'a> {
    urls: &'a [String],
    extract_depth: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    query: Option<&'a str>,
}

/// Tavily's answer to a search.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchResponse {
    /// The hits, best first.
    pub results: Vec<SearchHit>,
    /// Tavily's request id, for support requests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
}

/// One search hit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchHit {
    /// The page title (may be empty).
    #[serde(default, deserialize_with = "nullable_string")]
    pub title: String,
    /// The page URL.
    pub url: String,
    /// A snippet of the page relevant to the query (may be empty).
    #[serde(default, deserialize_with = "nullable_string")]
    pub content: String,
    /// Tavily's relevance score, when sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub score: Option<f64>,
}

/// Tavily's answer to an extraction.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExtractResponse {
    /// The pages that were extracted.
    pub results: Vec<ExtractedPage>,
    /// The pages that were not.
    #[serde(default)]
    pub failed_results: Vec<FailedUrl>,
    /// Tavily's request id, for support requests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
}

/// One extracted page.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExtractedPage {
    /// The page URL.
    pub url: String,
    /// The extracted text (markdown): the whole page, or the relevant chunks for a query.
    #[serde(default, deserialize_with = "nullable_string")]
    pub raw_content: String,
}

/// One URL that could not be extracted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FailedUrl {
    /// The URL.
    pub url: String,
    /// Why it failed, as the server (or the client) said.
    #[serde(default, deserialize_with = "nullable_string")]
    pub error: String,
}

/// Reads a string that may be `null` as `""`.
fn nullable_string<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    Ok(Option::<String>::deserialize(d)?.unwrap_or_default())
}
