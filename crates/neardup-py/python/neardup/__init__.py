"""neardup: near-duplicate text detection and similar-text search.

The same Rust engine as the ``neardup`` command line: one ``PipelineSpec``, the same presets and
options, the same answers. Batch functions release the GIL and run on every core.

>>> import neardup
>>> p = neardup.Pipeline("default")
>>> fp = p.fingerprint("the quick brown fox jumps over the lazy dog")
>>> result = neardup.dedup(["a b c d e f g h", "a b c d e f g h!", "something else"], threshold=0.8)
>>> result.kept_ids()
[0, 2]

Modules: :mod:`neardup.datasketch` (a drop-in for datasketch's MinHash, LeanMinHash and
MinHashLSH), :mod:`neardup.profiles` (other systems' fingerprints, bit for bit) and
:mod:`neardup.spark` (corpus dedup on Apache Spark, with ``pip install "neardup[spark]"``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Iterable, NamedTuple, Optional, Sequence

import numpy as np

from . import _neardup
from ._neardup import (
    DEFAULT_RECALL,
    FORMAT_VERSION,
    MAX_NUM_PERM,
    Fingerprint,
    FingerprintBatch,
    Index,
    Pipeline,
    __version__,
    compare,
    presets,
)
from ._input import as_texts

__all__ = [
    "Pipeline",
    "Fingerprint",
    "FingerprintBatch",
    "Index",
    "Cluster",
    "DedupResult",
    "compare",
    "dedup",
    "presets",
    "DEFAULT_RECALL",
    "FORMAT_VERSION",
    "MAX_NUM_PERM",
    "__version__",
]


class Cluster(NamedTuple):
    """A cluster of two or more near-duplicates."""

    members: list
    """The members' ids, in input order."""
    keep: Any
    """The id of the kept member."""
    similarity: float
    """The weakest verified similarity that joined the cluster."""


class DedupResult:
    """The result of :func:`dedup`, with documents named by their ids (positions by default)."""

    def __init__(self, native: Any, ids: Optional[Sequence[Any]]) -> None:
        self._native = native
        self._ids = ids

    def _id(self, position: int) -> Any:
        return int(position) if self._ids is None else self._ids[position]

    @property
    def documents(self) -> int:
        """The number of documents."""
        return self._native.documents

    @property
    def keep_mask(self) -> np.ndarray:
        """Whether each document is kept (numpy bool array, in input order)."""
        return self._native.keep_mask

    @property
    def cluster_of(self) -> np.ndarray:
        """Each document's cluster index in :attr:`clusters`, or -1 when it is alone."""
        return self._native.cluster_of

    @property
    def clusters(self) -> list[Cluster]:
        """The clusters of two or more documents, in order of their first member."""
        return [
            Cluster([self._id(m) for m in members], self._id(keep), similarity)
            for members, keep, similarity in self._native.clusters
        ]

    def pair_arrays(self, compact: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every pair at or above the threshold as numpy arrays ``(a, b, similarity)`` of
        positions with ``a < b``, copies of the same text included; ``compact=True`` gives the
        compact form (pairs between first copies, and each copy with its first copy)."""
        return self._native.pairs(compact)

    @property
    def pairs(self) -> list[tuple[Any, Any, float]]:
        """Every pair at or above the threshold as ``(id_a, id_b, similarity)``, copies included
        (``n`` copies of one text give ``n(n-1)/2`` pairs: see :attr:`pair_count`)."""
        a, b, s = self._native.pairs(False)
        return [(self._id(x), self._id(y), float(z)) for x, y, z in zip(a, b, s)]

    @property
    def pair_count(self) -> int:
        """How many pairs :attr:`pairs` holds."""
        return self._native.pair_count

    def kept_ids(self) -> list:
        """The ids of the kept documents, in input order."""
        return [self._id(i) for i in np.flatnonzero(self._native.keep_mask)]

    def dropped_ids(self) -> list:
        """The ids of the dropped documents, in input order."""
        return [self._id(i) for i in np.flatnonzero(~self._native.keep_mask)]

    @property
    def dropped(self) -> int:
        """Documents dropped."""
        return self._native.dropped

    @property
    def candidates(self) -> int:
        """Candidate pairs checked."""
        return self._native.candidates

    @property
    def verified(self) -> int:
        """Pairs verified between distinct texts."""
        return self._native.verified

    @property
    def exact_duplicates(self) -> int:
        """Documents merged into an earlier exact copy before the search."""
        return self._native.exact_duplicates

    @property
    def banding(self) -> Optional[tuple[int, int]]:
        """The LSH ``(bands, rows)`` (MinHash)."""
        return self._native.banding

    @property
    def candidate_probability(self) -> Optional[float]:
        """The probability that a pair exactly at the threshold becomes a candidate."""
        return self._native.candidate_probability

    def summary(self) -> dict:
        """The counts ``neardup dedup`` prints."""
        return {
            "documents": self.documents,
            "clusters": len(self._native.clusters),
            "dropped": self.dropped,
            "kept": self.documents - self.dropped,
            "candidates": self.candidates,
            "verified": self.verified,
            "exact_duplicates": self.exact_duplicates,
            "pairs": self.pair_count,
            "banding": self.banding,
            "candidate_probability": self.candidate_probability,
            "verification": self._native.verification,
        }

    def __repr__(self) -> str:
        return (
            f"DedupResult(documents={self.documents}, clusters={len(self._native.clusters)}, "
            f"dropped={self.dropped})"
        )


def dedup(
    docs: Iterable[str] | Mapping[Any, str] | Any,
    threshold: float = 0.8,
    method: Optional[str] = None,
    hamming: Optional[int] = None,
    verify: Optional[str] = None,
    keep: str = "first",
    ids: Optional[Sequence[Any]] = None,
    pipeline: Optional[Pipeline] = None,
    recall: Optional[float] = None,
    bands: Optional[int] = None,
    rows: Optional[int] = None,
) -> DedupResult:
    """Near-duplicate clusters of ``docs``, as ``neardup dedup`` finds them.

    Args:
        docs: a list or iterable of str, a pandas Series, a pyarrow string array (read in place),
            or a mapping of id -> text (a dict): its keys are then the ids, in its order, and
            ``ids`` must not be given. Anything else (a single str, a DataFrame or Table, a
            value that is not iterable) is a ``TypeError`` that names it.
        threshold: the Jaccard (or cosine) threshold, in (0, 1].
        method: ``"minhash"`` (LSH bands, the default), ``"simhash"`` (every pair within
            ``hamming`` bits) or ``"both"``.
        hamming: the largest SimHash Hamming distance (implies ``method="simhash"``).
        verify: ``"jaccard"`` (exact, the default for minhash), ``"cosine"``, ``"hamming"`` or
            ``"estimate"`` (no exact check).
        keep: which document of a cluster is kept: ``"first"``, ``"longest"`` or ``"shortest"``.
        ids: the documents' ids (default: their positions, or the keys of a mapping).
        pipeline: the :class:`Pipeline` (default: the ``default`` preset).
        recall: the probability that a pair exactly at the threshold becomes a candidate (the
            bands are the cheapest that reach it; default 0.99).
        bands, rows: the LSH banding, instead of ``recall``.
    """
    if isinstance(docs, Mapping):
        if ids is not None:
            raise ValueError(
                "ids given together with a mapping of documents: the mapping's keys are the ids"
            )
        ids = list(docs.keys())
        texts = list(docs.values())
        for key, text in zip(ids, texts):
            if not isinstance(text, str):
                raise TypeError(f"document {key!r} is {type(text).__name__}, not str")
    else:
        texts = as_texts(docs)
    n = len(texts)
    if ids is not None:
        ids = list(ids)
        if len(ids) != n:
            raise ValueError(f"{len(ids)} ids for {n} documents")
    native = _neardup.dedup_texts(
        texts, threshold, method, hamming, verify, keep, recall, bands, rows, pipeline
    )
    return DedupResult(native, ids)
