//! Admission of heavy requests (search, check, insert, overlap, compare): a turn among
//! `--max-concurrent`, and the memory the request may need at most while it is worked on and
//! answered, from `--max-memory-mb`. Both are waited for in one queue (`--max-queued`, each
//! for at most [`crate::HEAVY_WAIT`]); a request that could need more memory than the whole
//! budget is refused at once (413), naming the budget and what to send instead.
//!
//! What a request may need is reckoned from its size before any work is done: the texts it
//! brings, the matches its answer may hold (documents times `top_k`, each with up to the
//! largest metadata the collection holds or a request admitted to store brought), the passage
//! check's text. The factors are measured peaks (BENCHMARKS.md, "the service's worst
//! requests"), rounded up. The reservation is held until the answer is written.

use std::sync::atomic::AtomicUsize;

use futures_util::StreamExt;
use tokio::sync::{OwnedSemaphorePermit, TryAcquireError};

use super::*;

/// A turn of a heavy request; given back when dropped. It moves into the blocking work it
/// guards, so a client that goes away does not free the turn while its work still runs.
pub(super) type Turn = OwnedSemaphorePermit;

/// Memory reserved for a request, given back when dropped. A handler gives it to its answer
/// ([`Reserved::until_sent`]), so that it is held until the answer is written: a slow reader
/// keeps its answer in memory, and that memory stays counted.
#[derive(Debug)]
pub(crate) struct Reserved {
    _permit: OwnedSemaphorePermit,
}

impl Reserved {
    /// The answer, holding this reservation until its body is written (or the client went
    /// away and the body was dropped).
    pub(super) fn until_sent(self, answer: ApiResult) -> ApiResult {
        hold_until_sent(answer, self)
    }

    /// More memory for an answer that grew past what its request reserved (documents with
    /// larger metadata were stored while it waited), taken at once if it is free, else `None`.
    pub(super) fn more(state: &AppState, bytes: usize) -> Option<Reserved> {
        let kib = u32::try_from(bytes.div_ceil(1 << 10).max(1)).ok()?;
        state.memory.clone().try_acquire_many_owned(kib).ok().map(|p| Reserved { _permit: p })
    }
}

/// The answer, holding `held` (reservations of memory) until its body is written or dropped.
pub(super) fn hold_until_sent(answer: ApiResult, held: impl Send + Sync + 'static) -> ApiResult {
    let (parts, body) = answer?.into_parts();
    let body = body.into_data_stream().map(move |chunk| {
        let _ = &held;
        chunk
    });
    Ok(Response::from_parts(parts, axum::body::Body::from_stream(body)))
}

/// Bytes a document may take while it is sketched, per byte of its text (the normalized text,
/// tokens, features and their hashes, at their peak).
const SKETCH_BYTES_PER_BYTE: usize = 24;
/// Bytes kept per document of a batch until it is written (its sketch and copies of its id).
const BYTES_PER_DOC: usize = 2048;
/// Bytes of one match of an answer besides its metadata (the id, at most 512 bytes, and keys).
const BYTES_PER_MATCH: usize = 640;
/// Bytes the passage check of a text may take, per byte of it: the request's body, the text
/// parsed and its copy (3), its units, k-grams, hits and alignments (the library's peak, 26 on
/// texts of a small vocabulary, the worst kind), and the answer.
const OVERLAP_BYTES_PER_BYTE: usize = 36;

/// What a request may need at most, and what to tell its client if that is too much.
pub(super) struct Need {
    bytes: usize,
    what: &'static str,
    advice: &'static str,
}

impl Need {
    /// Sketching documents of these lengths on `threads` threads at once, keeping each one's
    /// sketch and a copy of its text.
    pub(super) fn sketching(lens: impl IntoIterator<Item = usize>) -> usize {
        let threads = rayon::current_num_threads().max(1);
        let (mut total, mut n, mut largest) = (0usize, 0usize, 0usize);
        for len in lens {
            total = total.saturating_add(len);
            largest = largest.max(len);
            n += 1;
        }
        total.saturating_mul(2).saturating_add(n.saturating_mul(BYTES_PER_DOC)).saturating_add(
            n.min(threads).saturating_mul(largest).saturating_mul(SKETCH_BYTES_PER_BYTE),
        )
    }

    /// An answer of `queries` lists of up to `top_k` matches of collection `c`, each with up
    /// to the largest metadata the collection holds or may soon hold
    /// ([`Collection::may_store_metadata`]: a request announces what it brings before it is
    /// admitted, so the documents it stores itself count too).
    pub(super) fn matches(c: &Collection, queries: usize, top_k: usize) -> usize {
        queries.saturating_mul(top_k).saturating_mul(Need::per_match(c))
    }

    /// The bytes one match of collection `c` may take in an answer.
    pub(super) fn per_match(c: &Collection) -> usize {
        c.largest_metadata.load(Ordering::Relaxed).saturating_add(BYTES_PER_MATCH)
    }

    /// The passage check of a text of `len` bytes.
    pub(super) fn overlap(len: usize) -> usize {
        len.saturating_mul(OVERLAP_BYTES_PER_BYTE).saturating_add(1 << 20)
    }

    pub(super) fn new(bytes: usize, what: &'static str, advice: &'static str) -> Need {
        Need { bytes, what, advice }
    }
}

/// Takes a turn and the memory `need` may take: at once if both are free, else after waiting
/// in a queue of at most `max_queued` for at most [`crate::HEAVY_WAIT`]; past either, 503
/// `busy` with `Retry-After`. A need over the whole memory budget is 413 `request_too_large`.
/// Called once the request is read and checked, so a refused request never waits, and a slow
/// client cannot hold a turn by sending its body slowly.
pub(super) async fn admit(state: &AppState, need: Need) -> Result<(Turn, Reserved), ApiError> {
    let limits = &state.limits;
    let kib = need.bytes.div_ceil(1 << 10).max(1);
    if kib > limits.max_memory_bytes >> 10 {
        return Err(ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "request_too_large",
            format!(
                "{} may need {} MiB while it is worked on and answered, over the {} MiB that \
                 requests may hold at once (--max-memory-mb): {}",
                need.what,
                need.bytes.div_ceil(1 << 20),
                limits.max_memory_bytes >> 20,
                need.advice
            ),
        ));
    }
    let kib = u32::try_from(kib).unwrap_or(u32::MAX);
    let busy = |why: String| ApiError {
        retry_after: Some(1),
        ..ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "busy", format!("{why}; retry later"))
    };
    let closed = || ApiError::internal("the admission semaphores are closed");
    // At once, when both are free.
    match state.memory.clone().try_acquire_many_owned(kib) {
        Ok(memory) => match state.turns.clone().try_acquire_owned() {
            Ok(turn) => return Ok((turn, Reserved { _permit: memory })),
            Err(TryAcquireError::Closed) => return Err(closed()),
            Err(TryAcquireError::NoPermits) => {}
        },
        Err(TryAcquireError::Closed) => return Err(closed()),
        Err(TryAcquireError::NoPermits) => {}
    }
    /// Counts a waiting request for as long as it waits (a cancelled wait included).
    struct Waiting<'a>(&'a AtomicUsize);
    impl Drop for Waiting<'_> {
        fn drop(&mut self) {
            self.0.fetch_sub(1, Ordering::SeqCst);
        }
    }
    let ahead = state.waiting.fetch_add(1, Ordering::SeqCst);
    let _waiting = Waiting(&state.waiting);
    if ahead >= limits.max_queued {
        return Err(busy(format!(
            "all {} turns for heavy requests are taken or their memory is in use, and {ahead} \
             requests wait (--max-concurrent, --max-memory-mb, --max-queued)",
            limits.max_concurrent
        )));
    }
    // Memory first, then the turn, in every request: no two can hold one each and wait for
    // the other's.
    let deadline = tokio::time::Instant::now() + crate::HEAVY_WAIT;
    let memory =
        match tokio::time::timeout_at(deadline, state.memory.clone().acquire_many_owned(kib)).await
        {
            Ok(Ok(m)) => m,
            Ok(Err(_)) => return Err(closed()),
            Err(_) => {
                return Err(busy(format!(
                "{} needs {} MiB, and not that much of the {} MiB for requests (--max-memory-mb) \
                 came free in {} s",
                need.what,
                need.bytes.div_ceil(1 << 20),
                limits.max_memory_bytes >> 20,
                crate::HEAVY_WAIT.as_secs()
            )))
            }
        };
    match tokio::time::timeout_at(deadline, state.turns.clone().acquire_owned()).await {
        Ok(Ok(turn)) => Ok((turn, Reserved { _permit: memory })),
        Ok(Err(_)) => Err(closed()),
        Err(_) => Err(busy(format!(
            "no turn for search, check, insert, overlap or compare came in {} s \
             (--max-concurrent {})",
            crate::HEAVY_WAIT.as_secs(),
            limits.max_concurrent
        ))),
    }
}
