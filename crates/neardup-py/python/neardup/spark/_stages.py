"""The stages Spark runs in its executors: the sketch of each Arrow batch of texts or lines, the
pairing of each bucket's members, and the exact check of candidate pairs, each by the Rust
extension (one sketcher per process, rebuilt only when the settings change)."""

from __future__ import annotations

import json  # noqa: F401
import time  # noqa: F401
from dataclasses import dataclass, field  # noqa: F401
from typing import Any, Iterator, Optional  # noqa: F401

from ..errors import InputError, InputTypeError, OptionError  # noqa: F401


# The per-process sketcher, rebuilt only when the settings change (executors reuse it across
# batches and tasks).
_SKETCHER: dict = {}


def _sketcher(job: str) -> Any:
    """The sketcher of a job (the library's ``JobSpec`` as JSON, made on the driver)."""
    import neardup

    sk = _SKETCHER.get(job)
    if sk is None:
        sk = neardup._neardup.Sketcher(job)
        _SKETCHER.clear()
        _SKETCHER[job] = sk
    return sk


def _max_doc_bytes(value: Optional[int]) -> int:
    """``max_doc_bytes`` as the CLI takes ``--max-doc-bytes``: None is its default (32 MiB), and
    a value must be from 1 to 2 GiB."""
    from neardup import _neardup

    if value is None:
        return _neardup.DEFAULT_MAX_DOC_BYTES
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputTypeError(f"max_doc_bytes must be an int, not {type(value).__name__}")
    if not 1 <= value <= _neardup.MAX_DOC_BYTES:
        raise OptionError(f"max_doc_bytes must be between 1 and {_neardup.MAX_DOC_BYTES} (2 GiB), not {value}")
    return value


def _binary_array(offsets: Any, data: Any) -> Any:
    import pyarrow as pa

    return pa.Array.from_buffers(
        pa.large_binary(), len(offsets) - 1, [None, pa.py_buffer(offsets), pa.py_buffer(data)]
    )


def _rank_keys(keys: Any, kinds: Any) -> Any:
    """The extension's sort keys (n x 20 bytes) as a binary column, null where there is no
    value (kind 0): Spark orders binary values byte by byte, unsigned, which is the keys' order,
    the values' exact order (a double column tied integers past 2**53 and nanosecond instants,
    which ``neardup dedup`` tells apart)."""
    import numpy as np
    import pyarrow as pa

    n = len(kinds)
    fixed = pa.FixedSizeBinaryArray.from_buffers(
        pa.binary(20), n, [pa.array(np.asarray(kinds) != 0).buffers()[1],
                           pa.py_buffer(np.ascontiguousarray(keys))],
    )
    return fixed.cast(pa.binary())


def _rank_columns(batch: Any, field: str) -> tuple[Any, Any]:
    """The keep rule's values of a batch (its `rank_src` column) as the library reads them:
    their sort keys (binary, null for none: :func:`_rank_keys`) and kinds (0 none, 1 number,
    2 date). A value it cannot read is an InputError naming its position."""
    import numpy as np
    import pyarrow as pa

    from neardup import _neardup
    from neardup._input import rank_json

    values = batch.column("rank_src").to_pylist()
    try:
        keys, kinds = _neardup.rank_values(rank_json(values, field), field, 0)
    except (InputError, InputTypeError):
        # Say which document: the first value that fails alone.
        for pos, v in zip(batch.column("pos").to_pylist(), values):
            try:
                _neardup.rank_values(rank_json([v], field), field, 0)
            except (InputError, InputTypeError) as e:
                raise InputError(f"the document at position {pos}: {str(e).split(': ', 1)[-1]}") from None
        raise
    return _rank_keys(keys, kinds), pa.array(kinds)


def _sketch_output(out: dict, n: int) -> tuple[list, list]:
    """The sketch columns of a batch from the extension's arrays."""
    import numpy as np
    import pyarrow as pa

    b = out["buckets"].shape[1]
    buckets = pa.ListArray.from_arrays(
        pa.array(np.arange(0, n * b + 1, b, dtype=np.int32)), pa.array(out["buckets"].reshape(-1))
    )
    exact = pa.FixedSizeBinaryArray.from_buffers(
        pa.binary(16), n, [None, pa.py_buffer(np.ascontiguousarray(out["exact"]))]
    )
    columns = [
        pa.array(out["len"]),
        pa.array(out["empty"]),
        exact.cast(pa.binary()),
        buckets,
        _binary_array(out["sketch_offsets"], out["sketch_data"]),
    ]
    return columns, ["len", "empty", "exact", "buckets", "sketch"]


# The sketch stage's columns after (pos, status, error[, id]): status 0 is a document, 1 a line
# that is no record (blank), 2 a bad one (its error says why).
_SKETCH_SCHEMA = "len long, empty boolean, exact binary, buckets array<long>, sketch binary"
_RANK_SCHEMA = ", rank binary, rank_kind byte"


def _sketch_batches(settings: str, max_doc_bytes: int, keep_field: Optional[str] = None):
    """The function `mapInArrow` runs on each partition of a DataFrame: (pos, text[, rank_src])
    -> (pos, status, error, sketch columns[, rank, rank_kind]); a null text, or one of more than
    `max_doc_bytes` bytes, is a bad row (not sketched), as `neardup dedup` reads a Parquet row."""

    def run(batches: Iterator) -> Iterator:
        import pyarrow as pa
        import pyarrow.compute as pc

        from neardup._input import as_texts

        sk = _sketcher(settings)
        for batch in batches:
            n = batch.num_rows
            if n == 0:
                continue
            text = batch.column("text")
            missing = pc.fill_null(text.is_null(), True)
            large = pc.fill_null(pc.greater(pc.binary_length(text), max_doc_bytes), False)
            bad = pc.or_(missing, large)
            if pc.any(bad).as_py():
                text = pc.if_else(bad, pa.scalar("", text.type), text)
            columns, names = _sketch_output(sk.sketch(as_texts(text)), n)
            status = pc.if_else(bad, pa.scalar(2, pa.int8()), pa.scalar(0, pa.int8()))
            error = pc.if_else(
                missing, pa.scalar("null text"),
                pc.if_else(large, pa.scalar(f"document is larger than --max-doc-bytes {max_doc_bytes}"),
                           pa.scalar(None, pa.string())),
            )
            columns = [batch.column("pos"), status, error] + columns
            names = ["pos", "status", "error"] + names
            if keep_field is not None:
                columns.extend(_rank_columns(batch, keep_field))
                names.extend(["rank", "rank_kind"])
            yield pa.RecordBatch.from_arrays(columns, names=names)

    return run


def _large_binary_buffers(arr: Any) -> tuple[Any, Any]:
    """The (int64 offsets, uint8 data) numpy views of a string or binary Arrow array."""
    import numpy as np
    import pyarrow as pa

    if not pa.types.is_large_binary(arr.type):
        arr = arr.cast(pa.large_binary())
    _, offsets, data = arr.buffers()[:3]
    o = np.frombuffer(offsets, dtype=np.int64, count=len(arr) + 1, offset=arr.offset * 8)
    d = np.frombuffer(data, dtype=np.uint8) if data is not None else np.zeros(0, np.uint8)
    return np.ascontiguousarray(o), d


def _sketch_lines(settings: str, fields: dict):
    """The function `mapInArrow` runs on each partition of JSON Lines: (pos, line) -> (pos,
    status, error, id, sketch columns[, rank, rank_kind]), each line read by the library's rule
    for a record (as `neardup dedup` reads a file's lines)."""

    def run(batches: Iterator) -> Iterator:
        import numpy as np
        import pyarrow as pa

        sk = _sketcher(settings)
        for batch in batches:
            n = batch.num_rows
            if n == 0:
                continue
            line = batch.column("line")
            offsets, data = _large_binary_buffers(line)
            out = sk.sketch_records(offsets, data, **fields)
            columns, names = _sketch_output(out, n)
            errors: list = [None] * n if out["errors"] else []
            for row, message in out["errors"]:
                shown = bytes(data[offsets[row]:offsets[row + 1]][:160]).decode("utf-8", "replace")
                errors[row] = f"{message}; the line begins {shown!r}"
            error = pa.array(errors, pa.string()) if errors else pa.nulls(n, pa.string())
            valid = out["id_valid"]
            ids = pa.Array.from_buffers(
                pa.large_string(), n,
                [pa.array(valid).buffers()[1], pa.py_buffer(out["id_offsets"]), pa.py_buffer(out["id_data"])],
                null_count=int(n - np.count_nonzero(valid)),
            )
            columns = [batch.column("pos"), pa.array(out["status"]).cast(pa.int8()), error, ids] + columns
            names = ["pos", "status", "error", "id"] + names
            if fields.get("keep_field") is not None:
                kinds = out["rank_kind"]
                columns += [_rank_keys(out["rank"], kinds), pa.array(kinds).cast(pa.int8())]
                names += ["rank", "rank_kind"]
            yield pa.RecordBatch.from_arrays(columns, names=names)

    return run


def _bucket_batches(settings: str):
    """The function `mapInArrow` runs on each partition of (bucket, pos) rows shuffled by
    bucket: every row of the partition gathered, then its candidate pairs by the library's rule
    (the skew guard included) as (a, b, null); a partition whose guard limited buckets adds one
    row (partition, null, count)."""

    def run(batches: Iterator) -> Iterator:
        import numpy as np
        import pyarrow as pa
        from pyspark import TaskContext

        buckets, positions = [], []
        for batch in batches:
            if batch.num_rows:
                buckets.append(batch.column("bucket").to_numpy())
                positions.append(batch.column("pos").to_numpy())
        if not buckets:
            return
        sk = _sketcher(settings)
        (a, b), capped = sk.bucket_candidates(np.concatenate(buckets), np.concatenate(positions))
        step = 1 << 20
        for i in range(0, len(a), step):
            yield pa.RecordBatch.from_arrays(
                [pa.array(a[i:i + step]), pa.array(b[i:i + step]), pa.nulls(len(a[i:i + step]), pa.int64())],
                names=["a", "b", "capped"],
            )
        if capped:
            yield pa.RecordBatch.from_arrays(
                [pa.array([TaskContext.get().partitionId()], pa.int64()), pa.nulls(1, pa.int64()),
                 pa.array([capped], pa.int64())],
                names=["a", "b", "capped"],
            )

    return run


def _verify_batches(settings: str):
    """The function `mapInArrow` runs on candidate pairs: (a, b, sa, sb) -> verified pairs."""

    def run(batches: Iterator) -> Iterator:
        import numpy as np
        import pyarrow as pa

        sk = _sketcher(settings)
        for batch in batches:
            if batch.num_rows == 0:
                continue
            sims = sk.verify(*_large_binary_buffers(batch.column("sa")), *_large_binary_buffers(batch.column("sb")))
            keep = ~np.isnan(sims)
            if not keep.any():
                continue
            idx = pa.array(np.flatnonzero(keep))
            yield pa.RecordBatch.from_arrays(
                [batch.column("a").take(idx), batch.column("b").take(idx), pa.array(sims[keep])],
                names=["a", "b", "similarity"],
            )

    return run
