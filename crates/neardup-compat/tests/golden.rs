//! Every vector in tests/golden/ as a named test (`cargo test -p neardup-compat --test golden`;
//! filter by name, e.g. `-- lucene/es/`). The vectors came from running the original
//! implementations (see tests/golden/README.md).

use std::path::PathBuf;

use libtest_mimic::{Arguments, Failed, Trial};
use neardup_compat::datasketch::{self, Permutations, Scheme};
use neardup_compat::lucene::{self, MinHashParams};
use neardup_compat::{recipes, yanyiwu};
use serde_json::Value;

fn golden(name: &str) -> Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/golden").join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn u64_of(v: &Value) -> u64 {
    match v {
        Value::Number(n) => n.as_u64().expect("unsigned"),
        Value::String(s) => {
            s.parse::<u64>().or_else(|_| s.parse::<i64>().map(|i| i as u64)).expect("integer")
        }
        other => panic!("not an integer: {other}"),
    }
}

fn check(cond: bool, msg: impl FnOnce() -> String) -> Result<(), Failed> {
    if cond {
        Ok(())
    } else {
        Err(msg().into())
    }
}

fn datasketch_trials(trials: &mut Vec<Trial>) {
    let d = golden("datasketch_minhash.json");
    for (field, bits) in [("sha1_hash32", 32), ("sha1_hash64", 64)] {
        for (token, expected) in d[field].as_object().expect("map") {
            let (token, expected) = (token.clone(), u64_of(expected));
            trials.push(Trial::test(format!("datasketch/{field}/{token:?}"), move || {
                let got = if bits == 32 {
                    u64::from(datasketch::sha1_hash32(token.as_bytes()))
                } else {
                    datasketch::sha1_hash64(token.as_bytes())
                };
                check(got == expected, || format!("got {got}, expected {expected}"))
            }));
        }
    }
    for (key, params) in d["permutations_seed1"].as_object().expect("map") {
        let parts: Vec<&str> = key.split('/').collect();
        let scheme: Scheme = parts[0].parse().expect("scheme");
        let num_perm: usize = parts[1].trim_start_matches("num_perm=").parse().expect("num_perm");
        let a: Vec<u64> = params["a"].as_array().expect("a").iter().map(u64_of).collect();
        let b: Vec<u64> = params["b"].as_array().expect("b").iter().map(u64_of).collect();
        trials.push(Trial::test(format!("datasketch/permutations/{key}"), move || {
            let p = Permutations::new(num_perm, 1, scheme);
            check(p.a() == a.as_slice(), || "a differs".into())?;
            check(p.b() == b.as_slice(), || "b differs".into())
        }));
    }
    for v in d["minhash_vectors"].as_array().expect("list") {
        let scheme: Scheme = v["scheme"].as_str().expect("scheme").parse().expect("scheme");
        let num_perm = v["num_perm"].as_u64().expect("num_perm") as usize;
        let seed = v["seed"].as_u64().expect("seed") as u32;
        let tokens: Vec<String> = v["tokens"]
            .as_array()
            .expect("tokens")
            .iter()
            .map(|t| t.as_str().expect("str").to_string())
            .collect();
        let expected: Vec<u64> =
            v["hashvalues"].as_array().expect("values").iter().map(u64_of).collect();
        let name = format!(
            "datasketch/minhash/{}/{num_perm}/seed{seed}/{}",
            scheme.name(),
            v["set"].as_str().expect("set")
        );
        trials.push(Trial::test(name, move || {
            let got = Permutations::new(num_perm, seed, scheme)
                .hash_values(tokens.iter().map(String::as_bytes));
            let first = got.iter().zip(&expected).position(|(g, e)| g != e);
            check(got.len() == expected.len() && first.is_none(), || {
                format!("first difference at {first:?}")
            })
        }));
    }
    for v in d["lsh_optimal_params"].as_array().expect("list") {
        let t = v["threshold"].as_f64().expect("threshold");
        let k = v["num_perm"].as_u64().expect("num_perm") as usize;
        let w = v["weights"].as_array().expect("weights");
        let weights = (w[0].as_f64().expect("w"), w[1].as_f64().expect("w"));
        let (b, r) = (v["b"].as_u64().expect("b") as usize, v["r"].as_u64().expect("r") as usize);
        let accepted = v["MinHashLSH_constructor"].as_str() == Some("ok");
        trials.push(Trial::test(
            format!("datasketch/lsh/t{t}/k{k}/w{}-{}", weights.0, weights.1),
            move || {
                let p = neardup_sketch::optimal_params(t, k, weights).map_err(|e| e.to_string())?;
                check((p.bands, p.rows) == (b, r), || {
                    format!("got ({}, {}), expected ({b}, {r})", p.bands, p.rows)
                })?;
                check((p.bands >= 2) == accepted, || "constructor acceptance differs".into())
            },
        ));
    }
    for v in d["jaccard_estimates"].as_array().expect("list") {
        let scheme: Scheme = v["scheme"].as_str().expect("scheme").parse().expect("scheme");
        let num_perm = v["num_perm"].as_u64().expect("num_perm") as usize;
        let seed = v["seed"].as_u64().expect("seed") as u32;
        let (sa, sb) =
            (v["a"].as_str().expect("a").to_string(), v["b"].as_str().expect("b").to_string());
        let expected = v["estimate"].as_f64().expect("estimate");
        let sets = d["minhash_vectors"].clone();
        trials.push(Trial::test(
            format!("datasketch/jaccard/{}/{num_perm}/{sa}~{sb}", scheme.name()),
            move || {
                let tokens = |set: &str| -> Vec<String> {
                    sets.as_array()
                        .expect("list")
                        .iter()
                        .find(|v| v["set"] == set)
                        .map(|v| {
                            v["tokens"]
                                .as_array()
                                .expect("tokens")
                                .iter()
                                .map(|t| t.as_str().expect("str").to_string())
                                .collect()
                        })
                        .unwrap_or_else(|| panic!("set {set} not in the vectors"))
                };
                let p = Permutations::new(num_perm, seed, scheme);
                let a = p.hash_values(tokens(&sa).iter().map(String::as_bytes));
                let b = p.hash_values(tokens(&sb).iter().map(String::as_bytes));
                let got = datasketch::jaccard(&a, &b).expect("same length");
                check(got == expected, || format!("got {got}, expected {expected}"))
            },
        ));
    }
}

fn lucene_trials(trials: &mut Vec<Trial>) {
    let d = golden("lucene_minhash.json");
    for v in d["murmur3_x64_128_utf16le"].as_array().expect("list") {
        let text = v["text"].as_str().expect("text").to_string();
        let (e1, e2) = (u64_of(&v["val1"]), u64_of(&v["val2"]));
        trials.push(Trial::test(format!("lucene/murmur3/{text:?}"), move || {
            let bytes: Vec<u8> = text.encode_utf16().flat_map(u16::to_le_bytes).collect();
            let got = neardup_sketch::murmur3_x64_128(&bytes, 0);
            check(got == (e1, e2), || format!("got {got:?}, expected ({e1}, {e2})"))
        }));
    }
    for v in d["vectors"].as_array().expect("list").iter().cloned() {
        let id = v["id"].as_str().expect("id").to_string();
        trials.push(Trial::test(format!("lucene/{id}"), move || lucene_vector(&v)));
    }
}

fn lucene_vector(v: &Value) -> Result<(), Failed> {
    let e = &v["effective"];
    let params = MinHashParams {
        hash_count: e["hash_count"].as_u64().expect("hash_count") as u32,
        bucket_count: e["bucket_count"].as_u64().expect("bucket_count") as u32,
        hash_set_size: e["hash_set_size"].as_u64().expect("hash_set_size") as u32,
        with_rotation: e["with_rotation"].as_bool().expect("with_rotation"),
    };
    let expected_input: Vec<String> = v["input_tokens"]
        .as_array()
        .expect("input")
        .iter()
        .map(|t| t.as_str().expect("str").to_string())
        .collect();
    let out = &v["output"];
    let tokens = match v["tokenizer"].as_str() {
        Some("whitespace") => {
            let text = v["input_text"].as_str().expect("text");
            let k = v["shingle_size"].as_u64().expect("shingle_size") as usize;
            let tokens = lucene::shingles(&lucene::whitespace_tokenize(text), k);
            let got: Vec<String> =
                tokens.iter().map(|t| String::from_utf16_lossy(&t.units)).collect();
            check(got == expected_input, || format!("token stream {got:?} != {expected_input:?}"))?;
            check(
                lucene::utf16_len(text) as u64
                    == out["final_offset_after_end"].as_u64().expect("final"),
                || "final offset differs".into(),
            )?;
            tokens
        }
        _ => {
            // A fixed token list, laid out as Lucene's test does: one token after another.
            let mut end = 0;
            expected_input
                .iter()
                .map(|t| {
                    let units: Vec<u16> = t.encode_utf16().collect();
                    end += units.len();
                    lucene::InputToken { units, end_offset: end }
                })
                .collect()
        }
    };
    let got = lucene::min_hash(&tokens, &params).map_err(Failed::from)?;
    let hex: Vec<String> = got.tokens.iter().map(|t| lucene::units_hex(t)).collect();
    let expected_hex: Vec<&str> = out["tokens_utf16_hex"]
        .as_array()
        .expect("hex")
        .iter()
        .map(|t| t.as_str().expect("str"))
        .collect();
    check(hex.len() == out["count"].as_u64().expect("count") as usize, || {
        format!("{} tokens", hex.len())
    })?;
    let first = hex.iter().zip(&expected_hex).position(|(g, e)| g != e);
    check(hex.len() == expected_hex.len() && first.is_none(), || {
        format!("{} tokens vs {}; first difference at {first:?}", hex.len(), expected_hex.len())
    })?;
    let utf8: Vec<String> = got
        .tokens
        .iter()
        .map(|t| lucene::indexed_utf8(t).iter().map(|b| format!("{b:02x}")).collect())
        .collect();
    let expected_utf8: Vec<&str> = out["indexed_utf8_hex"]
        .as_array()
        .expect("utf8")
        .iter()
        .map(|t| t.as_str().expect("str"))
        .collect();
    check(utf8 == expected_utf8, || "indexed UTF-8 differs".into())?;
    if v["tokenizer"].as_str() == Some("whitespace") && !got.tokens.is_empty() {
        check(got.end_offset as u64 == out["end_offset"].as_u64().expect("end"), || {
            format!("end offset {} != {}", got.end_offset, out["end_offset"])
        })?;
    }
    Ok(())
}

fn hex_bytes(hex: &str) -> Vec<u8> {
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).expect("hex"))
        .collect()
}

fn yanyiwu_trials(trials: &mut Vec<Trial>) {
    let d = golden("yanyiwu_simhash.json");
    for (i, v) in d["jenkins64_vectors"].as_array().expect("list").iter().enumerate() {
        // Vectors over upstream's test files name the file instead of holding the bytes.
        let Some(hex) = v["utf8_hex"].as_str() else { continue };
        let bytes = hex_bytes(hex);
        let expected = u64_of(&v["jenkins64"]);
        let label = v["text"].as_str().map_or_else(|| format!("#{i}"), |t| format!("{i}:{t:?}"));
        let name = format!("yanyiwu/jenkins64/{label}");
        trials.push(Trial::test(name, move || {
            let got = neardup_sketch::jenkins64(&bytes);
            check(got == expected, || format!("got {got}, expected {expected}"))
        }));
    }
    // jiebaR 0.11 (no single-character filter) is not a reproduced configuration.
    for (config, flavor) in [
        ("yanyiwu_simhash", yanyiwu::Flavor::Yanyiwu),
        ("jiebaR_legacy_0.9", yanyiwu::Flavor::JiebaR09),
    ] {
        for v in d["vectors"].as_array().expect("list") {
            let Some(r) = v["results"].get(config).cloned() else { continue };
            let Some(hex) = v["text_utf8_hex"].as_str() else { continue };
            let text = hex_bytes(hex);
            let topn = v["topn"].as_u64().expect("topn") as usize;
            let id = v["id"].as_str().expect("id").to_string();
            trials.push(Trial::test(format!("yanyiwu/{config}/{id}"), move || {
                let s = yanyiwu::simhasher_for(flavor);
                if let Some(cut) = r.get("cut").and_then(Value::as_array) {
                    let expected: Vec<&str> =
                        cut.iter().map(|w| w.as_str().expect("word")).collect();
                    let got: Vec<String> = s
                        .cut(&text)
                        .unwrap_or_default()
                        .iter()
                        .map(|w| String::from_utf8_lossy(w).into_owned())
                        .collect();
                    check(got == expected, || format!("cut {got:?}\n != {expected:?}"))?;
                }
                let got = s.simhash(&text, topn);
                let expected: Vec<(String, f64, u64)> = r["keywords"]
                    .as_array()
                    .expect("keywords")
                    .iter()
                    .map(|k| {
                        (
                            k["word"].as_str().expect("word").to_string(),
                            k["weight"].as_f64().expect("weight"),
                            u64_of(&k["jenkins64"]),
                        )
                    })
                    .collect();
                let got_keywords: Vec<(String, f64, u64)> = got
                    .keywords
                    .iter()
                    .map(|k| (k.text(), k.weight, neardup_sketch::jenkins64(&k.word)))
                    .collect();
                check(got_keywords == expected, || {
                    format!("keywords {got_keywords:?}\n != {expected:?}")
                })?;
                for (k, e) in got.keywords.iter().zip(r["keywords"].as_array().expect("keywords")) {
                    let printed = e["weight_printed"].as_str().expect("printed");
                    check(k.weight_printed() == printed, || {
                        format!("printed {} != {printed}", k.weight_printed())
                    })?;
                }
                let simhash = u64_of(&r["simhash"]);
                check(got.simhash == simhash, || format!("simhash {} != {simhash}", got.simhash))
            }));
        }
    }
}

fn golden_lines(name: &str) -> Vec<Value> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/golden").join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{}: {e}", path.display())))
        .collect()
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array().expect("list").iter().map(|w| w.as_str().expect("str").to_string()).collect()
}

/// A field that the vector files hold as a list or as the Python repr of one.
fn list(v: &Value) -> Vec<Value> {
    match v {
        Value::Array(a) => a.clone(),
        Value::String(s) => {
            let json = s.replace('\'', "\"");
            serde_json::from_str::<Vec<Value>>(&json).unwrap_or_else(|e| panic!("{e}: {s}"))
        }
        other => panic!("not a list: {other}"),
    }
}

/// Recipe A (Python jieba + MD5) and recipe B (gojieba + FNV): every vector in
/// tests/golden/recipes/ as a named test.
fn recipe_trials(trials: &mut Vec<Trial>) {
    let a = golden_lines("recipes/recipe_a.jsonl");
    let first_occurrence: std::collections::HashMap<u64, (Option<String>, bool)> = a
        .iter()
        .map(|v| {
            let bits = v["bits_first_occurrence"].as_str().map(String::from);
            (
                v["id"].as_u64().expect("id"),
                (bits, v["hash_seed_sensitive"].as_bool() == Some(true)),
            )
        })
        .collect();
    for v in a {
        let id = v["id"].as_u64().expect("id");
        trials.push(Trial::test(format!("recipes/jieba-md5/{id}"), move || {
            let text = v["text"].as_str().expect("text");
            let cut: Vec<String> = recipes::han_words(&recipes::jieba_cut(text))
                .into_iter()
                .map(String::from)
                .collect();
            let expected_cut: Vec<String> =
                list(&v["cut"]).iter().map(|w| w.as_str().expect("word").to_string()).collect();
            check(cut == expected_cut, || format!("cut {cut:?}\n != {expected_cut:?}"))?;
            let got = recipes::jieba_md5_simhash(text);
            let Some(bits) = v["bits"].as_str() else {
                return check(got.is_err(), || format!("expected an error, got {got:?}"));
            };
            let got = got.map_err(|e| Failed::from(e.to_string()))?;
            let words: Vec<(String, f64)> = list(&v["words"])
                .iter()
                .map(|w| (w[0].as_str().expect("w").to_string(), w[1].as_f64().expect("weight")))
                .collect();
            check(got.words == words, || {
                let i = got.words.iter().zip(&words).position(|(g, e)| g != e);
                let show =
                    |v: &[(String, f64)]| i.map(|i| format!("{:?}", &v[i..(i + 3).min(v.len())]));
                format!(
                    "{} words vs {}; first difference at {i:?}: {:?} != {:?}",
                    got.words.len(),
                    words.len(),
                    show(&got.words),
                    show(&words)
                )
            })?;
            let bfo = v["bits_first_occurrence"].as_str().expect("bits_first_occurrence");
            check(got.bits == bfo, || format!("bits {} != first-occurrence {bfo}", got.bits))?;
            if v["hash_seed_sensitive"].as_bool() == Some(false) {
                check(got.bits == bits, || format!("bits {} != {bits}", got.bits))?;
            }
            check(format!("{:032b}", got.value) == got.bits, || "value differs from bits".into())
        }));
    }
    for p in golden_lines("recipes/pairs.jsonl") {
        let (ia, ib) = (p["a"].as_u64().expect("a"), p["b"].as_u64().expect("b"));
        let fo = first_occurrence.clone();
        let a_text = golden_lines("recipes/recipe_a.jsonl");
        trials.push(Trial::test(format!("recipes/jieba-md5/pair/{ia}-{ib}"), move || {
            let text = |id: u64| {
                a_text.iter().find(|v| v["id"] == id).expect("id")["text"]
                    .as_str()
                    .expect("t")
                    .to_string()
            };
            let fa =
                recipes::jieba_md5_simhash(&text(ia)).map_err(|e| Failed::from(e.to_string()))?;
            let fb =
                recipes::jieba_md5_simhash(&text(ib)).map_err(|e| Failed::from(e.to_string()))?;
            let d = recipes::bit_distance(&fa.bits, &fb.bits).expect("same width");
            let (ea, sa) = &fo[&ia];
            let (eb, sb) = &fo[&ib];
            let expected_fo =
                recipes::bit_distance(ea.as_deref().expect("bits"), eb.as_deref().expect("bits"));
            check(Some(d) == expected_fo, || format!("distance {d} != {expected_fo:?}"))?;
            if !sa && !sb {
                let h = p["hamming"].as_u64().expect("hamming") as u32;
                check(d == h, || format!("distance {d} != {h}"))?;
            }
            Ok(())
        }));
    }
    let b = golden_lines("recipes/recipe_b.jsonl");
    let b_texts: Vec<(u64, String)> = b
        .iter()
        .map(|v| (v["id"].as_u64().expect("id"), v["text"].as_str().expect("text").to_string()))
        .collect();
    for v in b {
        let (id, topk) = (v["id"].as_u64().expect("id"), v["topk"].as_u64().expect("topk"));
        trials.push(Trial::test(format!("recipes/gojieba/{id}/topk{topk}"), move || {
            let text = v["text"].as_str().expect("text");
            let got = recipes::gojieba_simhash(text.as_bytes(), topk as usize);
            let words: Vec<String> =
                list(&v["words"]).iter().map(|w| w[0].as_str().expect("w").to_string()).collect();
            let got_words: Vec<String> = got.keywords.iter().map(|k| k.text()).collect();
            check(got_words == words, || format!("keywords {got_words:?}\n != {words:?}"))?;
            let weights = strings(&v["weight_f64_hex"]);
            let got_weights: Vec<String> =
                got.keywords.iter().map(|k| format!("{:016x}", k.weight.to_bits())).collect();
            check(got_weights == weights, || format!("weights {got_weights:?} != {weights:?}"))?;
            let hashes = strings(&v["fnv64a_hex"]);
            let got_hashes: Vec<String> = got
                .keywords
                .iter()
                .map(|k| format!("{:016x}", recipes::fnv1a64(&k.word)))
                .collect();
            check(got_hashes == hashes, || "FNV-1a hashes differ".into())?;
            let strs: Vec<String> =
                list(&v["hash_strs"]).iter().map(|s| s.as_str().expect("s").to_string()).collect();
            let got_strs: Vec<String> = got
                .keywords
                .iter()
                .map(|k| recipes::go_binary(recipes::fnv1a64(&k.word)))
                .collect();
            check(got_strs == strs, || "%064b strings differ".into())?;
            let bits = v["bits"].as_str().expect("bits");
            check(got.bits == bits, || format!("bits {}\n  != {bits}", got.bits))?;
            check(format!("{:064b}", got.value) == got.bits, || "value differs from bits".into())
        }));
    }
    for p in golden_lines("recipes/pairs_b.jsonl") {
        let (ia, ka) = (p["a"].as_u64().expect("a"), p["a_topk"].as_u64().expect("k") as usize);
        let (ib, kb) = (p["b"].as_u64().expect("b"), p["b_topk"].as_u64().expect("k") as usize);
        let h = p["hamming"].as_u64().expect("hamming") as u32;
        let texts = b_texts.clone();
        trials.push(Trial::test(format!("recipes/gojieba/pair/{ia}@{ka}-{ib}@{kb}"), move || {
            let text = |id: u64| &texts.iter().find(|(i, _)| *i == id).expect("id").1;
            let fa = recipes::gojieba_simhash(text(ia).as_bytes(), ka);
            let fb = recipes::gojieba_simhash(text(ib).as_bytes(), kb);
            let d = recipes::bit_distance(&fa.bits, &fb.bits).expect("same width");
            check(d == h, || format!("distance {d} != {h}"))
        }));
    }
}

fn main() {
    let args = Arguments::from_args();
    let mut trials = Vec::new();
    datasketch_trials(&mut trials);
    lucene_trials(&mut trials);
    yanyiwu_trials(&mut trials);
    recipe_trials(&mut trials);
    libtest_mimic::run(&args, trials).exit();
}
