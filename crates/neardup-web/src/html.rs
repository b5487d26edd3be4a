//! Escaping, number formatting, and the assembly of a page with its Content Security Policy.

use std::fmt::Write as _;

use base64::Engine as _;
use sha2::{Digest, Sha256};

/// The CSS every page shares.
pub(crate) const PAGE_CSS: &str = include_str!("../assets/page.css");
/// The shared-passage highlighter and side-by-side view every page shares.
pub(crate) const SHARED_JS: &str = include_str!("../assets/shared.js");

/// `text` escaped for HTML text and attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 8);
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A JSON value as the content of a `<script type="application/json">` block: `<`, `>` and
/// `&` become `\u003c`, `\u003e` and `\u0026` (they can only occur inside JSON strings, where
/// those escapes mean the same characters), so no text can close the block or open a comment.
pub(crate) fn json_block<T: serde::Serialize>(value: &T) -> String {
    // Serializing plain data (strings, numbers, options, vectors) cannot fail.
    let json = serde_json::to_string(value).unwrap_or_else(|_| "null".into());
    let mut out = String::with_capacity(json.len() + 64);
    for c in json.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            c => out.push(c),
        }
    }
    out
}

/// `n` with thousands separators: 1234567 -> "1,234,567".
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn sha256_source(text: &str) -> String {
    let digest = Sha256::digest(text.as_bytes());
    format!("'sha256-{}'", base64::engine::general_purpose::STANDARD.encode(digest))
}

/// Whether a page's scripts may call back to the origin that served it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Network {
    /// None at all: a file opened from disk.
    None,
    /// Its own origin only (`connect-src 'self'`): the service's page.
    SameOrigin,
}

/// A page: its title, its body (HTML already escaped), its data block and its scripts.
pub(crate) struct Page<'a> {
    pub title: &'a str,
    pub body: String,
    /// `(element id, JSON)` of the data block, if any.
    pub data: Option<(&'a str, String)>,
    /// Scripts, run in order as one inline script.
    pub scripts: &'a [&'a str],
    /// Extra CSS after the shared sheet.
    pub css: &'a str,
    pub network: Network,
}

impl Page<'_> {
    /// The page's Content Security Policy: its inline script and style by hash, nothing else.
    pub fn policy(&self) -> String {
        let (script, style) = (self.script(), self.style());
        let mut policy = format!(
            "default-src 'none'; script-src {}; style-src {}; img-src data:; base-uri 'none'; \
             form-action 'none'",
            sha256_source(&script),
            sha256_source(&style)
        );
        if self.network == Network::SameOrigin {
            policy.push_str("; connect-src 'self'");
        }
        policy
    }

    fn script(&self) -> String {
        self.scripts.join("\n")
    }

    fn style(&self) -> String {
        if self.css.is_empty() {
            PAGE_CSS.to_string()
        } else {
            format!("{PAGE_CSS}\n{}", self.css)
        }
    }

    /// The whole document.
    pub fn render(&self) -> String {
        let (script, style) = (self.script(), self.style());
        let mut out = String::with_capacity(self.body.len() + script.len() + style.len() + 1024);
        let _ = write!(
            out,
            "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
             <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
             <meta http-equiv=\"Content-Security-Policy\" content=\"{}\">\n\
             <meta name=\"referrer\" content=\"no-referrer\">\n\
             <meta name=\"generator\" content=\"neardup {}\">\n\
             <title>{}</title>\n<style>{style}</style>\n</head>\n<body>\n",
            escape(&self.policy()),
            env!("CARGO_PKG_VERSION"),
            escape(self.title)
        );
        out.push_str(&self.body);
        if let Some((id, json)) = &self.data {
            let _ = write!(out, "\n<script type=\"application/json\" id=\"{}\">", escape(id));
            out.push_str(json);
            out.push_str("</script>");
        }
        let _ = write!(out, "\n<script>{script}</script>\n</body>\n</html>\n");
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_covers_markup_and_quotes() {
        assert_eq!(
            escape("<a href='x'>\"&\"</a>"),
            "&lt;a href=&#39;x&#39;&gt;&quot;&amp;&quot;&lt;/a&gt;"
        );
        assert_eq!(escape("中文 text"), "中文 text");
    }

    #[test]
    fn json_block_cannot_close_its_script() {
        let v = serde_json::json!({"text": "</script><script>alert(1)</script><!-- &amp;"});
        let block = json_block(&v);
        assert!(!block.contains('<') && !block.contains('>') && !block.contains('&'));
        let back: serde_json::Value = serde_json::from_str(&block).expect("still JSON");
        assert_eq!(back, v);
    }

    #[test]
    fn thousands_groups_digits() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(1234567), "1,234,567");
    }

    #[test]
    fn policy_hashes_the_inline_script_and_style() {
        let page = Page {
            title: "t",
            body: String::new(),
            data: None,
            scripts: &["console.log(1)"],
            css: "",
            network: Network::None,
        };
        let policy = page.policy();
        assert!(policy.starts_with("default-src 'none'; script-src 'sha256-"));
        assert!(!policy.contains("unsafe"));
        assert!(!policy.contains("connect-src"));
        // The hash of the script as it appears in the page.
        assert!(policy.contains(&sha256_source("console.log(1)")));
        assert!(page.render().contains("<script>console.log(1)</script>"));
    }
}
