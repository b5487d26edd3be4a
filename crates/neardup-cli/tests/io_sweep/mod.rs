//! The input and output items of the hostile sweep (issue 32), each through the surface where it
//! was found, each test named after what broke.

use serde_json::Value;

use super::{json_lines, run, stderr};

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
