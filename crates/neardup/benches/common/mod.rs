//! The documents of the throughput benchmarks, shared with the examples that measure the same
//! thing another way (`examples/zh_ratio.rs` includes this file by path).

use std::path::Path;

/// Splits text into documents of about `size` bytes at whitespace (or character) boundaries.
pub fn documents(text: &str, size: usize) -> Vec<String> {
    let mut docs = Vec::new();
    let mut start = 0;
    while start < text.len() {
        let mut end = (start + size).min(text.len());
        while !text.is_char_boundary(end) {
            end += 1;
        }
        if let Some(space) = text[end..].find(char::is_whitespace) {
            end = (end + space).min(text.len());
        }
        docs.push(text[start..end].to_string());
        start = end;
    }
    docs
}

/// The bundled example texts of one language (`examples/data/LANG`), joined by line breaks.
pub fn bundled(lang: &str) -> String {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/data").join(lang);
    let mut names: Vec<_> =
        std::fs::read_dir(&dir).expect("examples").flatten().map(|e| e.path()).collect();
    names.sort();
    names
        .iter()
        .map(|p| std::fs::read_to_string(p).expect("example"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The Chinese documents of the `zh` benchmarks.
pub fn chinese() -> Vec<String> {
    // About 64 KB of real Chinese prose, cut into ~1 KB documents.
    let text = bundled("zh").repeat(16);
    documents(&text, 1024)
}
