//! The service's request limits (`neardup serve --max-*`) and their upper bounds.

/// Request limits.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Largest request body in bytes.
    pub max_body_bytes: usize,
    /// Largest document (text or tokens) in bytes.
    pub max_doc_bytes: usize,
    /// Most documents in one batch.
    pub max_batch_docs: usize,
    /// Largest `top_k` of a search or check; a larger one is refused (400), never cut.
    pub max_top_k: usize,
    /// Longest request URI in bytes.
    pub max_uri_bytes: usize,
    /// Memory the store may use to cache its pages, in bytes (redb's cache; the operating
    /// system's page cache comes on top and is not counted in the server's resident memory).
    pub store_cache_bytes: usize,
    /// Largest metadata of one document, in bytes of JSON. With `max_top_k` it bounds a search
    /// answer: at most `max_top_k` hits of at most this much metadata each.
    pub max_metadata_bytes: usize,
    /// Heavy requests (search, check, insert, compare) that run at once: each may hold hundreds
    /// of times its text's size while it works (an 8 MB Chinese text compared: about 200 MB).
    pub max_concurrent: usize,
    /// Heavy requests that may wait for a turn (for at most [`HEAVY_WAIT`]); one more is
    /// answered 503 with `Retry-After` at once.
    pub max_queued: usize,
    /// Most documents a search or check below its collection's threshold scans, per request
    /// (a batch check scans once per document: its documents times the collection's); past it
    /// such a request is refused (400), never answered from the index in part.
    pub max_scan_docs: usize,
    /// The memory that heavy requests may hold at once, in bytes: each is admitted with what it
    /// may need at most, from its size (texts, documents times `top_k` times the collection's
    /// largest metadata, the passage check's text); one needing more than all of it is refused
    /// (413), one that finds too little free waits as for a turn (503 past the wait).
    pub max_memory_bytes: usize,
    /// Connections to the database a PostgreSQL store may hold at once (its pool); a request
    /// that finds none free waits for one, for at most ten seconds (then 503).
    pub store_connections: usize,
}

/// How long a heavy request waits for a turn before it is answered 503 with `Retry-After`.
pub const HEAVY_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_body_bytes: 64 << 20,
            max_doc_bytes: 8 << 20,
            max_batch_docs: 10_000,
            max_top_k: 1_000,
            max_uri_bytes: 8 << 10,
            store_cache_bytes: 64 << 20,
            max_metadata_bytes: 64 << 10,
            max_concurrent: Limits::concurrent_for(
                std::thread::available_parallelism().map_or(2, usize::from),
            ),
            max_queued: 64,
            max_scan_docs: neardup::DEFAULT_SCAN_LIMIT,
            max_memory_bytes: 1 << 30,
            store_connections: 16,
        }
    }
}

impl Limits {
    /// The requests served at once by default with `threads` workers: four turns per worker.
    /// A request also waits on the store (a group commit's fsync, page reads), and with one
    /// turn per core those waits left the cores idle (200,000 documents: check 13,609 -> 15,201
    /// req/s, p99 59 -> 3.8 ms).
    pub fn concurrent_for(threads: usize) -> usize {
        4 * threads
    }

    /// Checks every limit against its bound ([`bounds`]), and that a search answer (`max_top_k`
    /// hits of `max_metadata_bytes` each) stays within [`bounds::MAX_SEARCH_ANSWER_BYTES`];
    /// the message names the options as `neardup serve` spells them.
    pub fn validate(&self) -> Result<(), String> {
        use bounds::*;
        for (name, value, max) in [
            ("--max-body-bytes", self.max_body_bytes, MAX_BODY_BYTES),
            ("--max-doc-bytes", self.max_doc_bytes, MAX_DOC_BYTES),
            ("--max-batch-docs", self.max_batch_docs, MAX_BATCH_DOCS),
            ("--max-top-k", self.max_top_k, MAX_TOP_K),
            ("--max-metadata-bytes", self.max_metadata_bytes, MAX_METADATA_BYTES),
            ("--max-concurrent", self.max_concurrent, MAX_CONCURRENT),
            ("--max-queued", self.max_queued, MAX_QUEUED),
            ("--max-scan-docs", self.max_scan_docs, MAX_SCAN_DOCS),
            ("--store-cache-mb", self.store_cache_bytes >> 20, MAX_STORE_CACHE_MB),
            ("--max-memory-mb", self.max_memory_bytes >> 20, MAX_MEMORY_MB),
            ("--store-connections", self.store_connections, MAX_STORE_CONNECTIONS),
        ] {
            if !(1..=max).contains(&value) {
                return Err(format!("{name} {value}: must be between 1 and {max}"));
            }
        }
        let answer = self.max_top_k.saturating_mul(self.max_metadata_bytes);
        if answer > MAX_SEARCH_ANSWER_BYTES {
            return Err(format!(
                "--max-top-k {} with --max-metadata-bytes {} lets one search answer carry {:.1} \
                 GiB of metadata; keep their product at most {} (1 GiB)",
                self.max_top_k,
                self.max_metadata_bytes,
                answer as f64 / f64::from(1u32 << 30),
                MAX_SEARCH_ANSWER_BYTES
            ));
        }
        Ok(())
    }
}

/// The upper bounds of the configurable limits.
pub mod bounds {
    /// The largest `--max-body-bytes`: 1 GiB.
    pub const MAX_BODY_BYTES: usize = 1 << 30;
    /// The largest `--max-doc-bytes`: 256 MiB.
    pub const MAX_DOC_BYTES: usize = 256 << 20;
    /// The largest `--max-batch-docs`.
    pub const MAX_BATCH_DOCS: usize = 1_000_000;
    /// The largest `--max-top-k`.
    pub const MAX_TOP_K: usize = 100_000;
    /// The largest `--max-metadata-bytes`: 16 MiB.
    pub const MAX_METADATA_BYTES: usize = 16 << 20;
    /// The largest `--max-concurrent`.
    pub const MAX_CONCURRENT: usize = 1024;
    /// The largest `--max-queued`.
    pub const MAX_QUEUED: usize = 65_536;
    /// The largest search answer the limits may allow: `--max-top-k` hits of
    /// `--max-metadata-bytes` each, 1 GiB.
    pub const MAX_SEARCH_ANSWER_BYTES: usize = 1 << 30;
    /// The largest `--max-scan-docs`: ten million documents (seconds of verification).
    pub const MAX_SCAN_DOCS: usize = 10_000_000;
    /// The largest `--store-cache-mb`: 64 GiB.
    pub const MAX_STORE_CACHE_MB: usize = 64 << 10;
    /// The largest `--max-memory-mb`: 1 TiB.
    pub const MAX_MEMORY_MB: usize = 1 << 20;
    /// The largest `--store-connections` (PostgreSQL's own default `max_connections` is 100).
    pub const MAX_STORE_CONNECTIONS: usize = 1024;
}
