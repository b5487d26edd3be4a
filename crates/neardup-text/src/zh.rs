//! Chinese language data: the jieba segmenter and its IDF table.

use std::sync::OnceLock;

use jieba_rs::Jieba;

/// jieba's IDF table in `word idf` format: jieba-rs 0.11's `idf.txt` (MIT), from Python jieba.
pub const DEFAULT_IDF: &str = include_str!("../data/jieba_idf.txt");

/// The process-wide jieba instance with the bundled dictionary. Loading the dictionary takes
/// about a quarter of a second, so it is done once and shared by every pipeline.
pub fn jieba() -> &'static Jieba {
    static JIEBA: OnceLock<Jieba> = OnceLock::new();
    JIEBA.get_or_init(Jieba::new)
}
