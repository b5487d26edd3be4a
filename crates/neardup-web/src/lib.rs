//! The pages of neardup, each one self-contained HTML: the report of a dedup run
//! ([`report`]), the report of a passage check ([`overlap`]), the comparison of two texts
//! ([`compare`]) and the page `neardup serve` shows at `/` ([`service`]).
//!
//! Every page carries its CSS and JavaScript inline and loads nothing: no fonts, no CDN, no
//! network (the service's page talks only to the service that served it). A Content Security
//! Policy says so to the browser: scripts and styles are allowed by their SHA-256 hashes only,
//! so nothing injected could run or phone home. Text from documents is escaped into the
//! static HTML, and the JavaScript inserts it only as text nodes (`textContent`); data reaches
//! the scripts in a JSON block (`<script type="application/json">`) whose `<`, `>` and `&` are
//! escaped, so a document holding `</script>` cannot close it. The summary and the charts are
//! static HTML and SVG, readable without JavaScript.
//!
//! This crate renders; it reads no files. The CLI gathers a run's figures and documents into a
//! [`report::Report`], and the server serves [`service::page`].

#![deny(missing_docs)]

mod charts;
pub mod compare;
mod html;
pub mod overlap;
pub mod report;
mod sections;
pub mod service;

pub use html::{escape, thousands};
