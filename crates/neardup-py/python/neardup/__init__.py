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


import functools
import inspect
import json
import os
import warnings
from collections.abc import Mapping
from typing import Any, Iterable, NamedTuple, Optional, Sequence, Union

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
from ._input import as_texts, check_utf8, id_texts, keep_field, rank_json, table_columns
from . import errors
from .errors import (
    Error,
    FileError,
    IndexFileError,
    InputError,
    InputTypeError,
    OptionError,
    PipelineMismatchError,
    RepeatedIdWarning,
    UnknownOptionError,
)

__all__ = [
    "options",
    "Pipeline",
    "Fingerprint",
    "FingerprintBatch",
    "Index",
    "Cluster",
    "DedupResult",
    "compare",
    "dedup",
    "overlap",
    "presets",
    "DEFAULT_RECALL",
    "FORMAT_VERSION",
    "MAX_NUM_PERM",
    "__version__",
    *errors.__all__,
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
        """The counts ``neardup dedup`` prints: the library's summary (documents, bytes, empty,
        clusters, dropped, kept, method, bands, rows, candidate_probability, threshold, hamming,
        verification, candidates, verified, exact_duplicates, ...), plus ``pairs`` (every pair
        at or above the threshold) and ``banding``."""
        s = json.loads(self._native.summary_json())
        s.update({"pairs": self.pair_count, "banding": self.banding})
        return s

    def summary_text(self) -> str:
        """The summary as ``neardup dedup`` prints it."""
        return self._native.summary_text()

    def __repr__(self) -> str:
        return (
            f"DedupResult(documents={self.documents}, clusters={len(self._native.clusters)}, "
            f"dropped={self.dropped})"
        )


def options() -> list[dict[str, Any]]:
    """The option table: every option of the pipeline, the search, the passage check and one
    search or check, each a dict ``{"name", "group", "kind", "default", "min", "max",
    "choices", "takes", "doc", "cli", "python", "http", "spark"}`` (a surface's spelling, or
    ``None`` where it lacks the option): the rows ``neardup options --json`` prints, from the
    one table in the library."""
    return json.loads(_neardup.option_table_json())


def _keywords(fn):
    """Unknown keyword arguments raise :class:`UnknownOptionError` (a ``TypeError``) naming the
    likeliest meant and every one the function takes, instead of Python's bare message."""
    sig = inspect.signature(fn)
    takes = [p.name for p in sig.parameters.values()
             if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        errors.check_keywords(fn.__name__, kwargs, takes)
        return fn(*args, **kwargs)

    return wrapper


@_keywords
def dedup(
    docs: Iterable[str] | Mapping[Any, str] | Any,
    threshold: Optional[float] = None,
    method: Optional[str] = None,
    hamming: Optional[int] = None,
    verify: Optional[str] = None,
    keep: Optional[str] = None,
    ids: Optional[Sequence[Any]] = None,
    pipeline: Union[Pipeline, str, None] = None,
    recall: Optional[float] = None,
    bands: Optional[int] = None,
    rows: Optional[int] = None,
    lsh_weights: Optional[tuple[float, float]] = None,
    max_bucket: Optional[int] = None,
    star_width: Optional[int] = None,
    text_col: str = "text",
    id_col: Optional[str] = None,
    progress: Optional[bool] = None,
) -> DedupResult:
    """Near-duplicate clusters of ``docs``, as ``neardup dedup`` finds them.

    Args:
        docs: a list or iterable of str, a pandas Series, a pyarrow string array (read in place),
            a mapping of id -> text (a dict: its keys are then the ids, in its order, and
            ``ids`` must not be given), or a table (a pandas or polars DataFrame, a pyarrow
            Table) whose ``text_col`` holds the texts. Anything else (a single str, a value
            that is not iterable) is a ``TypeError`` that names it.
        threshold: the Jaccard (or cosine) threshold, in (0, 1] (default 0.8).
        method: ``"minhash"`` (LSH bands, the default), ``"simhash"`` (every pair within
            ``hamming`` bits) or ``"both"``.
        hamming: the largest SimHash Hamming distance (implies ``method="simhash"``).
        verify: ``"jaccard"`` (exact, the default for minhash), ``"cosine"``, ``"hamming"`` or
            ``"estimate"`` (no exact check).
        keep: which document of a cluster is kept: ``"first"``, ``"longest"``, ``"shortest"``,
            or by a column of a table: ``"max:fetched_at"`` (the largest number, the newest
            date; numbers, ISO 8601 strings or datetimes) or ``"min:COLUMN"``. Ties, and rows
            with no value, go to the first.
        ids: the documents' ids (default: their positions, or the keys of a mapping). Ids
            that repeat (``"7"`` and ``7`` are one id) stay separate documents, as in ``neardup
            dedup``: the summary counts them (``repeated_ids``) and a ``RepeatedIdWarning``
            says so.
        pipeline: the :class:`Pipeline` (default: the ``default`` preset).
        recall: the probability that a pair exactly at the threshold becomes a candidate (the
            bands are the cheapest that reach it; default 0.99).
        bands, rows: the LSH banding, instead of ``recall``.
        lsh_weights: ``(false positive, false negative)`` weights of datasketch's banding
            choice, instead of ``recall``.
        max_bucket, star_width: the skew guard: a candidate bucket of more than ``max_bucket``
            documents (default 2,000) pairs only its first ``star_width`` (2) with the others.
        text_col, id_col: a table's columns of texts and ids (default: ``"text"``, and ``"id"``
            when the table has one, else the positions). A dotted name (``"meta.url"``) reaches
            into a struct column (or, in pandas, a column of dicts) when no column has the
            whole name, as ``neardup dedup --id-field meta.url`` reads Parquet; so does the
            column of ``keep="max:meta.fetched_at"``.
        progress: draw a progress line on stderr (default: when stderr is a terminal).

    Ctrl-C interrupts it (``KeyboardInterrupt``) within a fraction of a second.

    Every default and rule is the library's (``neardup dedup`` applies the same): an option
    left at None is not given.
    """
    field = keep_field(keep)
    ranks = None
    table = table_columns(docs, text_col, id_col, field)
    if table is not None:
        if ids is not None:
            raise InputError("ids given together with a table: name its id column with id_col")
        column, ids, values = table
        texts = as_texts(column)
        if field is not None:
            ranks = rank_json(values, field)
    elif field is not None:
        raise InputError(
            f"keep={keep!r} reads the column {field!r} of a table (a pandas or polars DataFrame, "
            f"a pyarrow Table); these documents have no columns"
        )
    elif isinstance(docs, Mapping):
        if ids is not None:
            raise InputError(
                "ids given together with a mapping of documents: the mapping's keys are the ids"
            )
        ids, texts = _mapping_texts(docs, "")
    else:
        texts = as_texts(docs)
    n = len(texts)
    if ids is not None:
        ids = list(ids)
        if len(ids) != n:
            raise InputError(f"{len(ids)} ids for {n} documents")
    options = {
        "threshold": threshold, "method": method, "hamming": hamming, "verify": verify,
        "keep": keep, "recall": recall, "bands": bands, "rows": rows, "lsh_weights": lsh_weights,
        "max_bucket": max_bucket, "star_width": star_width,
    }
    native = _neardup.dedup_texts(
        texts, {k: v for k, v in options.items() if v is not None}, pipeline, progress, ranks,
        None if ids is None else id_texts(ids),
    )
    result = DedupResult(native, ids)
    if result.summary()["repeated_ids"]:
        # What `neardup dedup` says of the same records: kept apart, and said.
        said = [line.strip() for line in native.summary_text().splitlines() if "duplicate id" in line]
        warnings.warn(f"neardup.dedup: {said[0]}", RepeatedIdWarning, stacklevel=2)
    return result


def _mapping_texts(docs: Mapping[Any, Any], what: str) -> tuple[list[Any], list[str]]:
    """The keys and values of a mapping of id -> text; a value that is not a str is a
    TypeError naming its key."""
    ids = list(docs.keys())
    texts = list(docs.values())
    for key, text in zip(ids, texts):
        if not isinstance(text, str):
            raise InputTypeError(f"{what}document {key!r} is {type(text).__name__}, not str")
    return ids, texts


def _documents(docs: Any, what: str) -> tuple[list[Any], Any]:
    """The ids and texts of a batch: a mapping's keys and values, or positions and the texts."""
    if isinstance(docs, Mapping):
        ids, texts = _mapping_texts(docs, f"{what}: ")
    else:
        texts = as_texts(docs)
        ids = list(range(len(texts)))
    for key in ids:
        if isinstance(key, bool) or not isinstance(key, (str, int)):
            raise InputTypeError(f"{what}: id {key!r} is {type(key).__name__}: ids are str or int")
        if isinstance(key, str):
            check_utf8(key, f"{what}: the id {key!r}")
    return ids, texts


def _json_id(key: Any) -> str:
    """An id as the command line writes it: a string quoted, a number as written."""
    return json.dumps(key, ensure_ascii=False)


@_keywords
def overlap(
    queries: Union[str, Iterable[str], Mapping[Any, str], Any],
    against: Union[Iterable[str], Mapping[Any, str], "os.PathLike[str]", None] = None,
    *,
    exclude_source: Sequence[Any] = (),
    save_index: Union[str, "os.PathLike[str]", None] = None,
    add: bool = False,
    remove: bool = False,
    as_table: bool = False,
    min_units: Optional[int] = None,
    max_gap: Optional[int] = None,
    min_similarity: Optional[float] = None,
    seed_units: Optional[int] = None,
    window: Optional[int] = None,
    max_sources: Optional[int] = None,
    keep_quotes: bool = False,
    zh_script: Optional[str] = None,
    min_density: Optional[float] = None,
    max_quote_chars: Optional[int] = None,
    min_anchor_chars: Optional[int] = None,
) -> Any:
    """Which passages of each query are copied from which documents, and how much of each query
    that is: ``neardup overlap`` (the thesis check, 论文查重) on texts in memory.

    Args:
        queries: one text (``str``), a batch (list, pandas Series, pyarrow string array: ids are
            positions) or a mapping of id -> text. A query given with an id never has the
            collection's document of that id as a source (its own earlier version).
        against: the collection: a batch or mapping as ``queries``, or a ``pathlib.Path`` of a
            passage index saved by ``neardup overlap --save-index`` (or ``Index.save`` of an
            index with ``passages=True``). Without it, the queries are checked against each
            other (a stretch several hold goes to the earliest).
        exclude_source: ids of documents never counted as sources (the author's own work).
        save_index: a directory to save the passage index of the collection to (``against``,
            or without it the queries), for later ``against=pathlib.Path(...)`` or ``neardup
            overlap --against``. Queries checked against a collection are not added to it
            unless ``add=True``.
        add: with ``against`` and ``save_index``, add the queries to the saved index under
            their ids (so ``queries`` must then be a mapping), as ``neardup overlap --add``.
        remove: without ``against``, give each query's text without the passages it repeats
            from earlier queries, the first holder keeping each (substring dedup, as ``neardup
            overlap -o`` writes it): the keys ``without_repeats`` (the text) and
            ``removed_chars``.
        as_table: for a batch, return ``(passages, summary)`` as two ``pyarrow.Table`` with the
            columns of ``neardup overlap --passages`` and ``--summary``.
        min_units, max_gap, min_similarity, seed_units, window, max_sources, keep_quotes,
            zh_script, min_density, max_quote_chars, min_anchor_chars: the options of ``neardup
            overlap`` of the same names (``neardup overlap --help``); ``zh_script`` is
            ``"simplified"`` (default), ``"traditional"``, ``"mainland"`` or ``"keep"``.

    Returns:
        For one text, a dict: the record of ``neardup overlap --summary`` (``chars``,
        ``copied_chars``, ``copied`` (the copied share, each character counted once, quotations
        left out), ``copied_with_quotations``, ``excluded_chars``, ``sources`` (``[{"id",
        "chars", "copied", "quoted_chars"}]``, most copied first)), ``passages`` (the records of
        ``--passages``: ``[{"query", "start", "end", "source", "source_start", "source_end",
        "similarity", "evidence", "start_byte", "end_byte", "source_start_byte",
        "source_end_byte", "also", "quotation", "exclusion"}]``: code point offsets are Python
        string indices, end exclusive) and ``excluded`` (quotations and references: the same
        records with ``quotation`` true). Ids are text (``7`` and ``"7"`` name one document)
        and are given back as they were given. For a batch, a list of those dicts, each with
        its ``query`` id.
    """
    single = isinstance(queries, str)
    query_ids, query_texts = _documents([queries] if single else queries, "queries")
    # Queries given without ids (one text, a list) are numbered by position; against a
    # collection those numbers are not documents' ids, so they neither exclude a source of the
    # same number nor can join a saved index.
    own_ids = isinstance(queries, Mapping) or against is None
    against_ids: list[Any] = []
    against_texts = None
    index_dir = None
    if isinstance(against, os.PathLike):
        index_dir = os.fspath(against)
    elif isinstance(against, (str, bytes)):
        raise InputTypeError(
            "against: give the collection as a list of texts or a mapping of id -> text, or a "
            "saved passage index as a pathlib.Path (a str is ambiguous)"
        )
    elif against is not None:
        against_ids, against_texts = _documents(against, "against")
    options = {
        key: value
        for key, value in [
            ("min_units", min_units),
            ("max_gap", max_gap),
            ("min_similarity", min_similarity),
            ("seed_units", seed_units),
            ("window", window),
            ("max_sources", max_sources),
            ("zh_script", zh_script),
            ("min_density", min_density),
            ("max_quote_chars", max_quote_chars),
            ("min_anchor_chars", min_anchor_chars),
        ]
        if value is not None
    }
    if keep_quotes:
        options["keep_quotes"] = True
    for i, key in enumerate(exclude_source):
        if isinstance(key, str):
            check_utf8(key, f"exclude_source[{i}]: the id {key!r}")
    if add and (save_index is None or against is None):
        raise InputError(
            "add: adds the queries checked against a collection to its saved index: give "
            "against and save_index"
        )
    if remove and (against is not None or as_table):
        raise InputError(
            "remove: removes the passages a query repeats from earlier queries of one input: "
            "give it without against (and without as_table)"
        )
    if add and not own_ids:
        raise InputError(
            "add: the queries join the saved index under their ids: give them as a mapping of "
            "id -> text"
        )
    found = _neardup.overlap_texts(
        [_json_id(k) for k in query_ids],
        query_texts,
        [_json_id(k) for k in against_ids],
        against_texts,
        index_dir,
        options,
        [_json_id(k) for k in exclude_source],
        None if save_index is None else os.fspath(save_index),
        own_ids,
        add,
        remove,
    )
    if single:
        only = found[0]
        del only["query"]
        for p in only["passages"] + only["excluded"]:
            p["query"] = None
        return only
    if as_table:
        return _overlap_tables(found)
    return found


_PASSAGE_COLUMNS = [
    "query",
    "start",
    "end",
    "source",
    "source_start",
    "source_end",
    "similarity",
    "evidence",
    "start_byte",
    "end_byte",
    "source_start_byte",
    "source_end_byte",
    "also",
    "quotation",
    "exclusion",
]


def _id_type(values: list[Any]) -> Any:
    """The Arrow type of an id column: int64 when every id is an int, else string."""
    import pyarrow as pa

    if values and all(isinstance(v, int) for v in values):
        return pa.int64()
    return pa.string()


def _overlap_tables(found: list[dict]) -> Any:
    """The passages and the summaries of a batch as two pyarrow tables, with the columns of
    ``neardup overlap --passages`` and ``--summary``."""
    import pyarrow as pa

    # As ``--passages``: counted and quoted passages alike, in query order.
    passages = [
        p
        for q in found
        for p in sorted(q["passages"] + q["excluded"], key=lambda p: (p["start"], p["end"]))
    ]
    query_type = _id_type([q["query"] for q in found])
    source_type = _id_type(
        [p["source"] for p in passages]
        + [a for p in passages for a in p["also"]]
        + [s["id"] for q in found for s in q["sources"]]
    )

    def ids(values: list[Any], kind: Any) -> Any:
        return pa.array(values if kind == pa.int64() else [str(v) for v in values], kind)

    def column(k: str) -> Any:
        values = [p[k] for p in passages]
        if k in ("query", "source"):
            return ids(values, query_type if k == "query" else source_type)
        if k == "also":
            return pa.array(
                [v if source_type == pa.int64() else [str(a) for a in v] for v in values],
                pa.list_(source_type),
            )
        if k == "quotation":
            return pa.array(values, pa.bool_())
        if k == "exclusion":
            return pa.array(values, pa.string())
        return pa.array(values, pa.float64() if k in ("similarity", "evidence") else pa.int64())

    columns = {k: column(k) for k in _PASSAGE_COLUMNS}
    source_struct = pa.struct(
        [
            ("id", source_type),
            ("chars", pa.int64()),
            ("copied", pa.float64()),
            ("quoted_chars", pa.int64()),
        ]
    )
    summary = pa.table(
        {
            "query": ids([q["query"] for q in found], query_type),
            "chars": pa.array([q["chars"] for q in found], pa.int64()),
            "copied_chars": pa.array([q["copied_chars"] for q in found], pa.int64()),
            "copied": pa.array([q["copied"] for q in found], pa.float64()),
            "copied_with_quotations": pa.array(
                [q["copied_with_quotations"] for q in found], pa.float64()
            ),
            "excluded_chars": pa.array([q["excluded_chars"] for q in found], pa.int64()),
            "sources": pa.array(
                [
                    [
                        dict(s, id=s["id"] if source_type == pa.int64() else str(s["id"]))
                        for s in q["sources"]
                    ]
                    for q in found
                ],
                pa.list_(source_struct),
            ),
        }
    )
    return pa.table(columns), summary
