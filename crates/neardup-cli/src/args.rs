//! Options shared by every command: the pipeline (preset plus overrides) and the input.

use neardup_corpus::read::Format;
use std::path::PathBuf;

use clap::Args;
use neardup::{PipelineOptions, PipelineSpec};

/// The most worker threads `-j` accepts.
pub const MAX_THREADS: i64 = 256;

/// The largest `--max-doc-bytes` (the library's bound): 2 GiB.
pub use neardup::MAX_DOC_BYTES;

/// Parses `--max-doc-bytes`: 1 to [`MAX_DOC_BYTES`].
fn doc_bytes(s: &str) -> Result<usize, String> {
    let n: u64 = s.parse().map_err(|e| format!("{e}"))?;
    if !(1..=MAX_DOC_BYTES).contains(&n) {
        return Err(format!("must be between 1 and {MAX_DOC_BYTES} (2 GiB)"));
    }
    usize::try_from(n).map_err(|e| e.to_string())
}

/// Sizes the global rayon pool to `-j N` (all cores when not given).
pub fn thread_pool(threads: Option<u16>) -> Result<(), crate::Failure> {
    if let Some(n) = threads {
        rayon::ThreadPoolBuilder::new()
            .num_threads(usize::from(n))
            .build_global()
            .map_err(anyhow::Error::from)?;
    }
    Ok(())
}

/// Pipeline options. A preset gives the starting spec; every other option overrides one field.
/// Their help comes from the library's option table (`cmd::options::with_table_help`).
#[derive(Debug, Args, Clone)]
#[command(next_help_heading = "Pipeline")]
pub struct PipelineArgs {
    #[arg(long, value_name = "NAME")]
    pub preset: Option<String>,

    /// A pipeline spec as JSON (as printed by `neardup spec`), used instead of the preset.
    #[arg(long, value_name = "FILE", conflicts_with = "preset")]
    pub spec: Option<PathBuf>,

    #[arg(long, value_name = "MODE")]
    pub segmenter: Option<String>,

    #[arg(long, value_name = "KIND")]
    pub features: Option<String>,

    #[arg(long, short = 'n', value_name = "N")]
    pub ngram: Option<usize>,

    #[arg(long, value_name = "N")]
    pub top_n: Option<usize>,

    #[arg(long, value_delimiter = ',', value_name = "LIST")]
    pub stop_words: Option<Vec<String>>,

    #[arg(long, value_name = "FILE")]
    pub stop_words_file: Option<PathBuf>,

    #[arg(long, conflicts_with_all = ["stop_words", "stop_words_file"])]
    pub no_stop_words: bool,

    #[arg(long)]
    pub keep_punct: bool,

    #[arg(long, value_name = "SCHEME")]
    pub weights: Option<String>,

    #[arg(long, value_name = "FILE")]
    pub idf: Option<PathBuf>,

    #[arg(long, value_name = "HASH")]
    pub hash: Option<String>,

    #[arg(long, value_name = "BITS")]
    pub bits: Option<String>,

    #[arg(long, value_name = "K")]
    pub num_perm: Option<usize>,

    #[arg(long, value_name = "SEED")]
    pub seed: Option<u64>,

    #[arg(long, value_name = "SCHEME")]
    pub minhash_scheme: Option<String>,

    #[arg(long, value_name = "WHICH")]
    pub keep_chars: Option<String>,

    #[arg(long)]
    pub no_nfkc: bool,

    #[arg(long)]
    pub no_case_fold: bool,

    #[arg(long)]
    pub no_collapse_whitespace: bool,

    #[arg(long, value_name = "SCRIPT")]
    pub zh_script: Option<String>,
}

impl PipelineArgs {
    /// The files these options name (read by the run; outputs may not overwrite them).
    pub fn files(&self) -> Vec<(String, PathBuf)> {
        [("--spec", &self.spec), ("--stop-words-file", &self.stop_words_file), ("--idf", &self.idf)]
            .into_iter()
            .filter_map(|(what, p)| p.clone().map(|p| (what.to_string(), p)))
            .collect()
    }

    /// The pipeline options that were given, by name (for refusing them where they do not
    /// apply).
    pub fn given(&self) -> Vec<&'static str> {
        let mut out = Vec::new();
        let flags = [
            (self.preset.is_some(), "--preset"),
            (self.spec.is_some(), "--spec"),
            (self.segmenter.is_some(), "--segmenter"),
            (self.features.is_some(), "--features"),
            (self.ngram.is_some(), "--ngram"),
            (self.top_n.is_some(), "--top-n"),
            (self.stop_words.is_some(), "--stop-words"),
            (self.stop_words_file.is_some(), "--stop-words-file"),
            (self.no_stop_words, "--no-stop-words"),
            (self.keep_punct, "--keep-punct"),
            (self.weights.is_some(), "--weights"),
            (self.idf.is_some(), "--idf"),
            (self.hash.is_some(), "--hash"),
            (self.bits.is_some(), "--bits"),
            (self.num_perm.is_some(), "--num-perm"),
            (self.seed.is_some(), "--seed"),
            (self.minhash_scheme.is_some(), "--minhash-scheme"),
            (self.keep_chars.is_some(), "--keep-chars"),
            (self.no_nfkc, "--no-nfkc"),
            (self.no_case_fold, "--no-case-fold"),
            (self.no_collapse_whitespace, "--no-collapse-whitespace"),
            (self.zh_script.is_some(), "--zh-script"),
        ];
        for (given, name) in flags {
            if given {
                out.push(name);
            }
        }
        out
    }

    /// The spec: the preset (or spec file, or `default_preset` when neither is given), then each
    /// given option, applied by the library's [`PipelineOptions`] (as every surface does).
    pub fn to_spec_from(&self, default_preset: &str) -> anyhow::Result<PipelineSpec> {
        let options = self.options()?;
        let spec = match &self.spec {
            Some(path) => {
                let text = std::fs::read_to_string(path).map_err(|e| {
                    anyhow::anyhow!("{}: {}", path.display(), neardup_corpus::read::io_message(&e))
                })?;
                let base = PipelineSpec::from_json(&text).map_err(|e| {
                    anyhow::anyhow!("{}: invalid pipeline spec: {e}", path.display())
                })?;
                options.apply(base)?
            }
            None => options.to_spec(default_preset)?,
        };
        Ok(spec)
    }

    /// The options as the library's [`PipelineOptions`]: each value given set by its name, as
    /// Python's keywords and the service's JSON are (the choices are the option table's, which
    /// the command line checked already).
    fn options(&self) -> anyhow::Result<PipelineOptions> {
        let mut o = PipelineOptions {
            preset: self.preset.clone(),
            ngram: self.ngram,
            top_n: self.top_n,
            stop_words_file: self.stop_words_file.clone(),
            no_stop_words: self.no_stop_words,
            keep_punct: self.keep_punct,
            idf: self.idf.clone(),
            num_perm: self.num_perm,
            seed: self.seed,
            nfkc: self.no_nfkc.then_some(false),
            case_fold: self.no_case_fold.then_some(false),
            collapse_whitespace: self.no_collapse_whitespace.then_some(false),
            ..PipelineOptions::default()
        };
        let named = [
            ("segmenter", &self.segmenter),
            ("features", &self.features),
            ("weights", &self.weights),
            ("hash", &self.hash),
            ("minhash_scheme", &self.minhash_scheme),
            ("keep_chars", &self.keep_chars),
            ("zh_script", &self.zh_script),
        ];
        for (name, value) in named {
            if let Some(v) = value {
                o.set(name, &serde_json::json!(v))?;
            }
        }
        if let Some(lists) = &self.stop_words {
            o.set("stop_words", &serde_json::json!(lists))?;
        }
        if let Some(bits) = &self.bits {
            let n: u64 =
                bits.parse().map_err(|_| anyhow::anyhow!("--bits: {bits} is not a width"))?;
            o.set("bits", &serde_json::json!(n))?;
        }
        Ok(o)
    }
}

/// Where documents come from and how bad input is handled.
#[derive(Debug, Args, Clone)]
#[command(next_help_heading = "Input")]
pub struct InputArgs {
    /// The format of the input files: jsonl (one object per line, text in --text-field or a
    /// token array in --tokens-field, id in --id-field), parquet or arrow (Arrow IPC; one
    /// record per row, the same names for columns, dotted into struct columns) or text (one
    /// document per file). [default: by each file's name: .jsonl, .ndjson and .json (also .gz,
    /// .zst) are JSON Lines, .parquet is Parquet, .arrow, .feather, .arrows and .ipc are Arrow,
    /// .txt, .text, .md and .rst one plain-text document; a file whose name says none by its
    /// first bytes (Parquet, Arrow), else as the command reads it]
    #[arg(long, value_enum, value_name = "FORMAT", conflicts_with = "jsonl")]
    pub format: Option<FormatArg>,

    /// Read JSON Lines whatever the files' names (--format jsonl).
    #[arg(long)]
    pub jsonl: bool,

    /// The field (JSONL) or column (Parquet, Arrow) holding the text; a dotted name
    /// (content.body) reaches into objects and struct columns.
    #[arg(long, default_value = "text", value_name = "NAME")]
    pub text_field: String,

    /// The field or column holding the id (a string or an integer; default: id); a dotted name
    /// (meta.url) reaches into objects. A record without it is named FILE:LINE; a field named
    /// here that no record of a file has is an error (even with --skip-bad).
    #[arg(long, value_name = "NAME")]
    pub id_field: Option<String>,

    /// JSONL field holding pre-tokenized text (an array of strings), used when the text field
    /// is absent; tokens skip segmentation.
    #[arg(long, default_value = "tokens", value_name = "NAME")]
    pub tokens_field: String,

    /// Replace invalid UTF-8 with U+FFFD (and count the replacements) instead of failing.
    /// Text in another encoding is detected first (see --encoding).
    #[arg(long)]
    pub lossy: bool,

    /// The encoding of text that is not UTF-8: a WHATWG label such as gb18030, gbk, big5,
    /// utf-16le, utf-16be, shift_jis, euc-kr, windows-1252. [default: UTF-8; other text is
    /// detected (a byte order mark, UTF-16, GB18030, Big5, Shift-JIS, EUC-KR) and said in the
    /// summary, or refused naming the encoding it looks like]
    #[arg(long, value_name = "NAME", value_parser = neardup_corpus::read::encoding_for_label)]
    pub encoding: Option<neardup_corpus::read::TextEncoding>,

    /// Skip bad records (malformed JSON, missing text field, invalid UTF-8, oversized
    /// documents), report each on stderr and how many were skipped, and exit 0.
    #[arg(long)]
    pub skip_bad: bool,

    /// Reject documents larger than this many bytes (at most 2 GiB). Sketching holds about 15
    /// to 30 times a document's size in memory at once (jieba's presets the most), so the
    /// default, 32 MiB, keeps one document under about 1 GB; raise it for larger documents on
    /// a machine with the memory. A JSONL line longer than three times this (plus 1 MiB for
    /// other fields) is refused without being held.
    #[arg(long, default_value_t = neardup_corpus::read::DEFAULT_MAX_DOC_BYTES, value_name = "BYTES", value_parser = doc_bytes)]
    pub max_doc_bytes: usize,
}

/// `--format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum FormatArg {
    /// JSON Lines.
    Jsonl,
    /// One plain-text document per file.
    Text,
    /// Parquet: one record per row.
    Parquet,
    /// Arrow IPC, file or stream: one record per row.
    Arrow,
}

impl InputArgs {
    /// The corpus reader's options these flags set; `fallback` is the command's format for
    /// standard input and files whose names do not say.
    pub fn read_options_or(&self, fallback: Format) -> neardup_corpus::ReadOptions {
        let format = match (self.jsonl, self.format) {
            (true, _) | (_, Some(FormatArg::Jsonl)) => Some(Format::Jsonl),
            (_, Some(FormatArg::Text)) => Some(Format::Text),
            (_, Some(FormatArg::Parquet)) => Some(Format::Parquet),
            (_, Some(FormatArg::Arrow)) => Some(Format::Arrow),
            (false, None) => None,
        };
        neardup_corpus::ReadOptions {
            format,
            fallback,
            text_field: self.text_field.clone(),
            id_field: self.id_field.clone().unwrap_or_else(|| "id".into()),
            id_field_named: self.id_field.is_some(),
            tokens_field: self.tokens_field.clone(),
            lossy: self.lossy,
            encoding: self.encoding,
            skip_bad: self.skip_bad,
            max_doc_bytes: self.max_doc_bytes,
            read_every_column: false,
            rank_field: None,
        }
    }

    /// The reader's options for a command that reads plain text unless told otherwise.
    pub fn read_options(&self) -> neardup_corpus::ReadOptions {
        self.read_options_or(Format::Text)
    }
}
