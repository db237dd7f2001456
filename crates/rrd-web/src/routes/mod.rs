//! The HTTP routes, one module per family of GrowthForecast's API:
//! [`api`] (posting numbers), [`json`] (metadata: read, list, create,
//! edit, delete), [`graph`] (pictures and numbers over time) and
//! [`vrule`] (GF's vertical rules).
//!
//! Route patterns name the first variable segment `{service}` even where
//! it holds an id (`/json/graph/{service}` is `/json/graph/:id`): the
//! router needs one name per position to tell `/x/:id` from `/x/:s/:sec/:g`.

pub mod api;
pub mod graph;
pub mod json;
pub mod vrule;

/// `/:service/:section/:graph`, as extracted.
pub type Names = axum::extract::Path<(String, String, String)>;

/// An id segment: digits only (anything else is a 404, as GF's lookup
/// finds nothing).
pub fn parse_id(s: &str) -> Option<i64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}
