//! The page `neardup serve` shows at `/`: the service's health, its collections with their
//! sizes and settings, and a box to search or check a text, with the hits side by side with it
//! when the collection stores texts, or to find the passages of the text copied from a
//! collection that keeps passages. The page is static: its script calls the public HTTP API
//! of the origin that served it (and asks for a bearer token when the service wants one).

use std::sync::OnceLock;

use crate::html::{Network, Page, SHARED_JS};

const SERVICE_HTML: &str = include_str!("../assets/service.html");
const SERVICE_JS: &str = include_str!("../assets/service.js");
/// The passage check's view, shared with the report of `neardup overlap`.
pub(crate) const OVERLAP_JS: &str = include_str!("../assets/overlap.js");

fn page_of() -> Page<'static> {
    Page {
        title: "neardup",
        body: SERVICE_HTML.to_string(),
        data: None,
        scripts: &[SHARED_JS, OVERLAP_JS, SERVICE_JS],
        css: "",
        network: Network::SameOrigin,
    }
}

/// The page, built once.
pub fn page() -> &'static str {
    static PAGE: OnceLock<String> = OnceLock::new();
    PAGE.get_or_init(|| page_of().render())
}

/// The Content Security Policy to send with [`page`] as an HTTP header: the one in the page,
/// plus what only a header can say (no framing).
pub fn content_security_policy() -> &'static str {
    static POLICY: OnceLock<String> = OnceLock::new();
    POLICY.get_or_init(|| format!("{}; frame-ancestors 'none'", page_of().policy()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_allows_only_its_own_script_style_and_origin() {
        let policy = content_security_policy();
        assert!(policy.contains("connect-src 'self'"));
        assert!(policy.contains("frame-ancestors 'none'"));
        assert!(!policy.contains("unsafe"));
        assert!(page().contains("id=\"collections\""));
        assert!(page().contains("connect-src &#39;self&#39;"));
    }
}
