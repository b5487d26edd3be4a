//! `--profile`: reproduce another system's fingerprints exactly.

use clap::{Args, ValueEnum};
use neardup::compat::datasketch::{Permutations, Scheme};
use neardup::compat::lucene::{self, InputToken, MinHashParams};
use neardup::compat::yanyiwu;
use neardup::{Document, Pipeline, Scratch};
use serde_json::{json, Value};

use crate::args::PipelineArgs;
use crate::input::Body;

/// Compatibility profile options.
#[derive(Debug, Args, Clone)]
#[command(next_help_heading = "Compatibility profiles")]
pub struct ProfileArgs {
    /// Reproduce another system bit for bit. yanyiwu: the SimHash of yanyiwu/simhash (cppjieba
    /// segmentation, TF-IDF keywords, Jenkins hashes); jiebar: the same as jiebaR 0.9's
    /// worker("simhash", topn) computes it (jiebaRD's user dictionary, CppJieba 5.0's ASCII
    /// rules); pipeline options do not apply. lucene (alias elasticsearch): Lucene's MinHashFilter,
    /// Elasticsearch's `min_hash` token filter, behind Lucene's whitespace tokenizer and an
    /// optional shingle filter; pipeline options do not apply. datasketch: datasketch's
    /// MinHash(num_perm, seed) over the pipeline's features (by default the words of Python's
    /// text.split()), hashed with SHA-1.
    #[arg(long, value_enum, value_name = "NAME")]
    pub profile: Option<ProfileArg>,

    /// yanyiwu: keywords voted (topn). Default as upstream: max(5, min(200, bytes / 120)).
    #[arg(long, value_name = "N")]
    pub topn: Option<usize>,

    /// yanyiwu: first replace every character outside [\u2e80-\u3000\u3021-\ufe4fa-zA-Z0-9] by a
    /// space, as jiebaR's R function simhash() does with symbol = FALSE.
    #[arg(long)]
    pub strip_symbols: bool,

    /// lucene: hash functions (`hash_count`).
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub hash_count: u32,

    /// lucene: buckets per hash function (`bucket_count`).
    #[arg(long, default_value_t = 512, value_name = "N")]
    pub bucket_count: u32,

    /// lucene: minima kept per bucket (`hash_set_size`).
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub hash_set_size: u32,

    /// lucene: fill empty buckets from the next non-empty one (`with_rotation`; only with
    /// hash_set_size 1).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, value_name = "BOOL")]
    pub with_rotation: bool,

    /// lucene: word k-shingles (joined by one space, no unigrams) before the filter; 1 for none.
    #[arg(long, default_value_t = 1, value_name = "K")]
    pub shingle_size: usize,

    /// lucene: also print the UTF-8 bytes Elasticsearch indexes for each token (`min_hash_utf8`).
    #[arg(long)]
    pub utf8: bool,

    /// datasketch: the hashing scheme. legacy is datasketch before 2.0 (most stored data);
    /// affine32 is the 2.0 default.
    #[arg(long, value_enum, default_value = "legacy", value_name = "SCHEME")]
    pub scheme: SchemeArg,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ProfileArg {
    Yanyiwu,
    Jiebar,
    #[value(alias = "elasticsearch")]
    Lucene,
    Datasketch,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum SchemeArg {
    Legacy,
    Affine32,
    Affine64,
}

/// A compiled profile.
pub enum Profile {
    Yanyiwu { flavor: yanyiwu::Flavor, topn: Option<usize>, strip_symbols: bool },
    Lucene { params: MinHashParams, shingle_size: usize, utf8: bool },
    Datasketch { permutations: Permutations },
}

impl Profile {
    /// Builds the profile named in `args`, if any.
    pub fn build(
        args: &ProfileArgs,
        pipeline: &PipelineArgs,
    ) -> Result<Option<Profile>, crate::Failure> {
        let usage = |m: String| crate::Failure::Usage(anyhow::anyhow!(m));
        match args.profile {
            None => Ok(None),
            Some(p @ (ProfileArg::Yanyiwu | ProfileArg::Jiebar)) => {
                let flavor = if p == ProfileArg::Jiebar {
                    yanyiwu::Flavor::JiebaR09
                } else {
                    yanyiwu::Flavor::Yanyiwu
                };
                // Build the dictionaries now, not inside the first parallel batch.
                let _ = yanyiwu::simhasher_for(flavor);
                Ok(Some(Profile::Yanyiwu {
                    flavor,
                    topn: args.topn,
                    strip_symbols: args.strip_symbols,
                }))
            }
            Some(ProfileArg::Lucene) => {
                let params = MinHashParams {
                    hash_count: args.hash_count,
                    bucket_count: args.bucket_count,
                    hash_set_size: args.hash_set_size,
                    with_rotation: args.with_rotation,
                };
                params.validate().map_err(usage)?;
                if args.shingle_size == 0 {
                    return Err(usage("--shingle-size must be at least 1".into()));
                }
                Ok(Some(Profile::Lucene {
                    params,
                    shingle_size: args.shingle_size,
                    utf8: args.utf8,
                }))
            }
            Some(ProfileArg::Datasketch) => {
                let num_perm = pipeline.num_perm.unwrap_or(128);
                let seed = pipeline.seed.unwrap_or(1);
                let seed = u32::try_from(seed)
                    .map_err(|_| usage(format!("datasketch seeds are below 2^32, not {seed}")))?;
                if num_perm == 0 {
                    return Err(usage("--num-perm must be at least 1".into()));
                }
                let scheme = match args.scheme {
                    SchemeArg::Legacy => Scheme::Legacy,
                    SchemeArg::Affine32 => Scheme::Affine32,
                    SchemeArg::Affine64 => Scheme::Affine64,
                };
                Ok(Some(Profile::Datasketch {
                    permutations: Permutations::new(num_perm, seed, scheme),
                }))
            }
        }
    }

    /// The preset a profile starts from when no --preset is given.
    pub fn default_preset(args: &ProfileArgs) -> &'static str {
        match args.profile {
            Some(ProfileArg::Datasketch) => "datasketch",
            _ => "default",
        }
    }

    /// The output object of one document; `pipeline` makes the datasketch profile's features.
    pub fn fingerprint(
        &self,
        pipeline: &Pipeline,
        id: &Value,
        body: &Body,
        scratch: &mut Scratch,
    ) -> Value {
        match self {
            Profile::Yanyiwu { flavor, topn, strip_symbols } => {
                let s = yanyiwu::simhasher_for(*flavor);
                let result = match body {
                    Body::Text(text) => {
                        let text = if *strip_symbols {
                            yanyiwu::strip_symbols(text)
                        } else {
                            text.clone()
                        };
                        let n = topn.unwrap_or_else(|| yanyiwu::default_topn(text.len()));
                        s.simhash(text.as_bytes(), n)
                    }
                    Body::Tokens(words) => {
                        let bytes: Vec<&[u8]> = words.iter().map(|w| w.as_bytes()).collect();
                        let len = bytes.iter().map(|w| w.len()).sum();
                        s.simhash_words(&bytes, topn.unwrap_or_else(|| yanyiwu::default_topn(len)))
                    }
                };
                let keywords: Vec<Value> = result
                    .keywords
                    .iter()
                    .map(|k| json!({"word": k.text(), "weight": k.weight, "weight_printed": k.weight_printed()}))
                    .collect();
                json!({
                    "id": id,
                    "simhash": format!("{:016x}", result.simhash),
                    "simhash_u64": result.simhash,
                    "keywords": keywords,
                })
            }
            Profile::Lucene { params, shingle_size, utf8 } => {
                let tokens = match body {
                    Body::Text(text) => {
                        lucene::shingles(&lucene::whitespace_tokenize(text), *shingle_size)
                    }
                    Body::Tokens(list) => {
                        // Given tokens reach the filter as they are, laid end to end.
                        let mut end = 0;
                        list.iter()
                            .map(|t| {
                                let units: Vec<u16> = t.encode_utf16().collect();
                                end += units.len();
                                InputToken { units, end_offset: end }
                            })
                            .collect()
                    }
                };
                let out = lucene::min_hash(&tokens, params).expect("parameters validated at build");
                let hex: Vec<String> = out.tokens.iter().map(|t| lucene::units_hex(t)).collect();
                let mut obj = json!({"id": id, "min_hash_tokens": hex, "count": out.tokens.len()});
                if *utf8 {
                    let bytes: Vec<String> = out
                        .tokens
                        .iter()
                        .map(|t| {
                            lucene::indexed_utf8(t).iter().map(|b| format!("{b:02x}")).collect()
                        })
                        .collect();
                    obj["min_hash_utf8"] = json!(bytes);
                }
                obj
            }
            Profile::Datasketch { permutations } => {
                let mut features: Vec<String> = Vec::new();
                match body {
                    // datasketch hashes exactly the bytes it is given.
                    Body::Tokens(list) => features.clone_from(list),
                    Body::Text(text) => {
                        pipeline.for_each_feature(Document::Text(text), scratch, |f| {
                            features.push(f.to_string())
                        })
                    }
                }
                let values = permutations.hash_values(features.iter().map(String::as_bytes));
                features.sort_unstable();
                features.dedup();
                json!({"id": id, "minhash": values, "features": features.len()})
            }
        }
    }
}
