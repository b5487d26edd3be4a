//! `--profile`: reproduce another system's fingerprints exactly.

use clap::{Args, ValueEnum};
use neardup::compat::datasketch::Scheme;
use neardup::compat::lucene::{self, MinHashParams};
use neardup::compat::yanyiwu;
use neardup::profile::{self, ProfileError, ProfileFingerprint};
use neardup::{Pipeline, Scratch};
use serde_json::json;
use serde_json::value::RawValue;

use crate::args::PipelineArgs;
use neardup_corpus::read::Body;

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
    /// text.split()), hashed with SHA-1. gojieba: the Go recipe of gojieba v1.4.7's
    /// ExtractWithWeight(text, topn) keywords, FNV-1a 64 and Go's signed `%064b` bit strings
    /// (64 bits). jieba-md5: the Python recipe of jieba's Han words, term-frequency weights and
    /// MD5 hex-digit bits (32 bits).
    #[arg(long, value_enum, value_name = "NAME")]
    pub profile: Option<ProfileArg>,

    /// yanyiwu, jiebar: keywords voted (topn, at most 10,000; default as upstream: max(5,
    /// min(200, bytes / 120))). gojieba: the topk passed to ExtractWithWeight (required).
    #[arg(long, value_name = "N")]
    pub topn: Option<usize>,

    /// yanyiwu: first replace every character outside [\u2e80-\u3000\u3021-\ufe4fa-zA-Z0-9] by a
    /// space, as jiebaR's R function simhash() does with symbol = FALSE.
    #[arg(long)]
    pub strip_symbols: bool,

    /// lucene: hash functions (`hash_count`, 1 to 1024) [default: 1].
    #[arg(long, value_name = "N")]
    pub hash_count: Option<u32>,

    /// lucene: buckets per hash function (`bucket_count`, 1 to 65536) [default: 512].
    #[arg(long, value_name = "N")]
    pub bucket_count: Option<u32>,

    /// lucene: minima kept per bucket (`hash_set_size`, 1 to 1024) [default: 1]. The three
    /// counts multiplied may not pass 2^20 tokens per document.
    #[arg(long, value_name = "N")]
    pub hash_set_size: Option<u32>,

    /// lucene: fill empty buckets from the next non-empty one (`with_rotation`; only with
    /// hash_set_size 1) [default: true].
    #[arg(long, action = clap::ArgAction::Set, value_name = "BOOL")]
    pub with_rotation: Option<bool>,

    /// lucene: word k-shingles (joined by one space, no unigrams) before the filter; 1 for none
    /// (at most 64) [default: 1].
    #[arg(long, value_name = "K")]
    pub shingle_size: Option<usize>,

    /// lucene: also print the UTF-8 bytes Elasticsearch indexes for each token (`min_hash_utf8`).
    #[arg(long)]
    pub utf8: bool,

    /// datasketch: the hashing scheme. affine32 is datasketch 2.0's default (and the Python
    /// drop-in's); legacy is datasketch before 2.0 (signatures stored by older versions);
    /// affine64 is 2.0's 64-bit scheme [default: affine32].
    #[arg(long, value_enum, value_name = "SCHEME")]
    pub scheme: Option<SchemeArg>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ProfileArg {
    Yanyiwu,
    Jiebar,
    #[value(alias = "elasticsearch")]
    Lucene,
    Datasketch,
    Gojieba,
    JiebaMd5,
}

impl ProfileArg {
    /// The name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            ProfileArg::Yanyiwu => "yanyiwu",
            ProfileArg::Jiebar => "jiebar",
            ProfileArg::Lucene => "lucene",
            ProfileArg::Datasketch => "datasketch",
            ProfileArg::Gojieba => "gojieba",
            ProfileArg::JiebaMd5 => "jieba-md5",
        }
    }
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum SchemeArg {
    Legacy,
    Affine32,
    Affine64,
}

/// A compiled profile: the library's, and whether to print Lucene's tokens as UTF-8 too.
#[derive(Debug)]
pub struct Profile {
    inner: profile::Profile,
    utf8: bool,
}

/// A profile's parameter error, with the parameter named as its flag (`--topn`, `--hash-count`).
fn profile_usage(e: ProfileError) -> crate::Failure {
    let message = match &e {
        ProfileError::Parameter { name, message } => {
            let flags: Vec<String> =
                name.split(" x ").map(|n| format!("--{}", n.replace('_', "-"))).collect();
            format!("{} {message}", flags.join(" x "))
        }
        _ => e.to_string(),
    };
    crate::Failure::Usage(anyhow::anyhow!(message))
}

impl ProfileArgs {
    /// The profile options that were given, each with the profiles it belongs to.
    fn given(&self) -> Vec<(&'static str, &'static [ProfileArg])> {
        use ProfileArg::*;
        const YANYIWU: &[ProfileArg] = &[Yanyiwu, Jiebar, Gojieba];
        const STRIP: &[ProfileArg] = &[Yanyiwu, Jiebar];
        const LUCENE: &[ProfileArg] = &[Lucene];
        const DATASKETCH: &[ProfileArg] = &[Datasketch];
        [
            (self.topn.is_some(), "--topn", YANYIWU),
            (self.strip_symbols, "--strip-symbols", STRIP),
            (self.hash_count.is_some(), "--hash-count", LUCENE),
            (self.bucket_count.is_some(), "--bucket-count", LUCENE),
            (self.hash_set_size.is_some(), "--hash-set-size", LUCENE),
            (self.with_rotation.is_some(), "--with-rotation", LUCENE),
            (self.shingle_size.is_some(), "--shingle-size", LUCENE),
            (self.utf8, "--utf8", LUCENE),
            (self.scheme.is_some(), "--scheme", DATASKETCH),
        ]
        .into_iter()
        .filter(|(given, _, _)| *given)
        .map(|(_, name, profiles)| (name, profiles))
        .collect()
    }
}

impl Profile {
    /// Builds the profile named in `args`, if any. Options that do not apply to the chosen
    /// profile (or to no profile) are usage errors, never silently ignored: `pipeline` options
    /// with yanyiwu, jiebar or lucene (which keep their own analysis), `--minhash` or
    /// `--explain` where the profile outputs neither, another profile's options.
    pub fn build(
        args: &ProfileArgs,
        pipeline: &PipelineArgs,
        minhash: bool,
        explain: bool,
    ) -> Result<Option<Profile>, crate::Failure> {
        let usage = |m: String| crate::Failure::Usage(anyhow::anyhow!(m));
        let profile_name = |p: ProfileArg| p.name();
        for (option, profiles) in args.given() {
            if !args.profile.is_some_and(|p| profiles.contains(&p)) {
                let names: Vec<&str> = profiles.iter().map(|&p| profile_name(p)).collect();
                return Err(usage(format!(
                    "{option} applies only to --profile {}",
                    names.join(" or ")
                )));
            }
        }
        if let Some(p) = args.profile {
            let own_analysis = p != ProfileArg::Datasketch;
            let given = pipeline.given();
            if own_analysis && !given.is_empty() {
                return Err(usage(format!(
                    "--profile {} reproduces its own text analysis; pipeline options ({}) do not apply to it",
                    profile_name(p),
                    given.join(", ")
                )));
            }
            if minhash && own_analysis {
                return Err(usage(format!(
                    "--minhash does not apply to --profile {}: it has its own output",
                    profile_name(p)
                )));
            }
            if explain {
                return Err(usage(format!(
                    "--explain does not apply to --profile {}: it has its own output",
                    profile_name(p)
                )));
            }
        }
        let inner = match args.profile {
            None => return Ok(None),
            Some(ProfileArg::Gojieba) => {
                let topn = args.topn.ok_or_else(|| {
                    usage(
                        "--profile gojieba needs --topn K: the topk its program passed to \
                         ExtractWithWeight"
                            .into(),
                    )
                })?;
                profile::Profile::gojieba(topn)
            }
            Some(ProfileArg::JiebaMd5) => Ok(profile::Profile::jieba_md5()),
            Some(p @ (ProfileArg::Yanyiwu | ProfileArg::Jiebar)) => {
                let flavor = if p == ProfileArg::Jiebar {
                    yanyiwu::Flavor::JiebaR09
                } else {
                    yanyiwu::Flavor::Yanyiwu
                };
                profile::Profile::yanyiwu(flavor, args.topn, args.strip_symbols)
            }
            Some(ProfileArg::Lucene) => {
                let d = MinHashParams::default();
                let params = MinHashParams {
                    hash_count: args.hash_count.unwrap_or(d.hash_count),
                    bucket_count: args.bucket_count.unwrap_or(d.bucket_count),
                    hash_set_size: args.hash_set_size.unwrap_or(d.hash_set_size),
                    with_rotation: args.with_rotation.unwrap_or(d.with_rotation),
                };
                profile::Profile::lucene(params, args.shingle_size.unwrap_or(1))
            }
            Some(ProfileArg::Datasketch) => {
                let scheme = match args.scheme.unwrap_or(SchemeArg::Affine32) {
                    SchemeArg::Legacy => Scheme::Legacy,
                    SchemeArg::Affine32 => Scheme::Affine32,
                    SchemeArg::Affine64 => Scheme::Affine64,
                };
                profile::Profile::datasketch(
                    pipeline.num_perm.unwrap_or(128),
                    pipeline.seed.unwrap_or(1),
                    scheme,
                )
            }
        }
        .map_err(profile_usage)?;
        Ok(Some(Profile { inner, utf8: args.utf8 }))
    }

    /// The preset a profile starts from when no --preset is given.
    pub fn default_preset(args: &ProfileArgs) -> &'static str {
        match args.profile {
            Some(ProfileArg::Datasketch) => "datasketch",
            _ => "default",
        }
    }

    /// The library's fingerprint of one document; `pipeline` makes the datasketch profile's
    /// features. An error is a document the profile cannot fingerprint (jieba-md5 without a Han
    /// word).
    pub fn fingerprint_of(
        &self,
        pipeline: &Pipeline,
        body: &Body,
        scratch: &mut Scratch,
    ) -> Result<ProfileFingerprint, String> {
        self.inner
            .fingerprint(body.as_document(), Some((pipeline, scratch)))
            .map_err(|e| e.to_string())
    }

    /// The output object of one fingerprint.
    pub fn json(&self, id: &RawValue, fp: &ProfileFingerprint) -> serde_json::Value {
        let words = |keywords: &[yanyiwu::Keyword]| -> Vec<serde_json::Value> {
            keywords.iter().map(|k| json!({"word": k.text(), "weight": k.weight})).collect()
        };
        match fp {
            ProfileFingerprint::Gojieba(f) => json!({
                "id": id,
                "bits": f.bits,
                "simhash": format!("{:016x}", f.value),
                "simhash_u64": f.value,
                "keywords": words(&f.keywords),
            }),
            ProfileFingerprint::JiebaMd5(f) => {
                let words: Vec<serde_json::Value> =
                    f.words.iter().map(|(w, x)| json!({"word": w, "weight": x})).collect();
                json!({
                    "id": id,
                    "bits": f.bits,
                    "simhash": format!("{:08x}", f.value),
                    "simhash_u32": f.value,
                    "words": words,
                })
            }
            ProfileFingerprint::Yanyiwu(r) => {
                let keywords: Vec<serde_json::Value> = r
                    .keywords
                    .iter()
                    .map(|k| json!({"word": k.text(), "weight": k.weight, "weight_printed": k.weight_printed()}))
                    .collect();
                json!({
                    "id": id,
                    "simhash": format!("{:016x}", r.simhash),
                    "simhash_u64": r.simhash,
                    "keywords": keywords,
                })
            }
            ProfileFingerprint::Lucene(tokens) => {
                let hex: Vec<String> = tokens.iter().map(|t| lucene::units_hex(t)).collect();
                let mut obj = json!({"id": id, "min_hash_tokens": hex, "count": tokens.len()});
                if self.utf8 {
                    let bytes: Vec<String> = tokens
                        .iter()
                        .map(|t| {
                            lucene::indexed_utf8(t).iter().map(|b| format!("{b:02x}")).collect()
                        })
                        .collect();
                    obj["min_hash_utf8"] = json!(bytes);
                }
                obj
            }
            ProfileFingerprint::Datasketch { values, features } => {
                json!({"id": id, "minhash": values, "features": features})
            }
            other => json!({"id": id, "fingerprint": format!("{other:?}")}),
        }
    }

    /// The output object of one document.
    pub fn fingerprint(
        &self,
        pipeline: &Pipeline,
        id: &RawValue,
        body: &Body,
        scratch: &mut Scratch,
    ) -> Result<serde_json::Value, String> {
        Ok(self.json(id, &self.fingerprint_of(pipeline, body, scratch)?))
    }
}
