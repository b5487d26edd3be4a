//! The input and output items of the hostile sweep (issue 32), each through the surface where it
//! was found, each test named after what broke.

use std::path::Path;

use serde_json::Value;

use super::{json_lines, run, stderr, stdout};
use crate::common::tempdir;

fn p(path: &Path) -> String {
    path.display().to_string()
}

/// Two near-duplicate texts and an unrelated one.
const NEAR: [&str; 3] = [
    "the harbour authority said on monday that the new pier would open in spring after two years of building work",
    "the harbour authority said on monday that the new pier would open in spring after two years of building works",
    "a quiet village in the hills has voted to keep its only school open despite falling numbers of pupils",
];

#[test]
fn named_txt_files_were_parsed_as_json_lines() {
    let dir = tempdir("named-txt");
    let names = ["a.txt", "b.md", "c.rst"];
    for (name, text) in names.iter().zip(NEAR) {
        std::fs::write(dir.join(name), text).expect("write");
    }
    let files: Vec<String> = names.iter().map(|n| p(&dir.join(n))).collect();
    let mut args = vec!["dedup", "--clusters", "-"];
    args.extend(files.iter().map(String::as_str));
    let o = run(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    let clusters = json_lines(&o);
    assert_eq!(clusters.len(), 1, "{}", stdout(&o));
    assert_eq!(clusters[0]["cluster"], serde_json::json!([files[0], files[1]]));
    // --help says how a named file's format is decided.
    let help = stdout(&run(&["dedup", "--help"]));
    assert!(help.contains(".txt, .text, .md, .rst") && help.contains("first bytes"), "{help}");
}

#[test]
fn datasketch_profile_defaulted_to_the_pre_2_0_scheme() {
    let text = "the quick brown fox jumps over the lazy dog";
    let minhash = |extra: &[&str]| -> Value {
        let mut args = vec!["fingerprint", "--profile", "datasketch", "--text", text];
        args.extend(extra);
        let o = run(&args);
        assert!(o.status.success(), "{}", stderr(&o));
        json_lines(&o)[0]["minhash"].clone()
    };
    let default = minhash(&[]);
    assert_eq!(default, minhash(&["--scheme", "affine32"]), "the default is datasketch 2.0's");
    assert_ne!(default, minhash(&["--scheme", "legacy"]), "the old scheme is there by name");
}
