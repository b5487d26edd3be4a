"""Batches of texts for the extension: lists of str as they are, Arrow string arrays (pyarrow,
or pandas backed by pyarrow) as their buffers without copying, anything else iterated once.
What cannot be a batch of texts (a single str, a mapping, a table, a value that is not
iterable) is a ``TypeError`` that says what was given and what is taken."""

from __future__ import annotations

from .errors import InputTypeError

from collections.abc import Mapping
from typing import Any, Optional

ACCEPTED = (
    "a list of str, a tuple of str, a pandas Series, a pyarrow string array, a 1-D numpy array "
    "of str, another iterable of str, or a table (a pandas or polars DataFrame, a pyarrow "
    "Table) with its text in text_col"
)


class ArrowTexts:
    """The buffers of an Arrow string array (offsets, data, validity, as numpy views), which
    the extension reads in place. A type of its own, so that no object a user passes (a dict,
    say) is ever taken for one."""

    __slots__ = ("offsets", "data", "valid")

    def __init__(self, offsets: Any, data: Any, valid: Optional[Any]) -> None:
        self.offsets = offsets
        self.data = data
        self.valid = valid

    def __len__(self) -> int:
        return len(self.offsets) - 1


def table_columns(
    docs: Any, text_col: str, id_col: Optional[str], keep_col: Optional[str] = None
) -> Optional[tuple[Any, Optional[list], Optional[list]]]:
    """The text column (as a batch :func:`as_texts` takes), the ids and the keep rule's values of
    a table: a pandas or polars DataFrame, or a pyarrow Table or RecordBatch; None for anything
    else. The ids are ``id_col``'s values, or, when it is None, those of a column named ``id``
    if there is one (else the documents are numbered); the keep values are ``keep_col``'s (the
    field of ``keep="max:FIELD"``), if given.

    A name is found as ``neardup dedup`` finds a field of a Parquet file: the column of that
    whole name, else a dotted path into struct columns (``meta.url``: the field ``url`` of a
    struct column ``meta``; in pandas also a column of dicts, as ``pandas.read_json`` makes of
    nested objects). A column that is not there, or a name two columns share, is an
    ``InputError`` naming the argument and the columns."""
    module = (type(docs).__module__ or "").split(".")[0]
    kind = type(docs).__name__
    if module == "pyarrow" and kind in ("Table", "RecordBatch"):
        columns = list(docs.column_names)
        find = _arrow_column
    elif module == "pandas" and kind == "DataFrame":
        columns = list(docs.columns)
        find = _pandas_column
    elif module == "polars" and kind == "DataFrame":
        columns = list(docs.columns)
        find = _polars_column
    else:
        return None
    from .errors import InputError

    def column(name: Any, what: str) -> Any:
        try:
            found = find(docs, name)
        except _Ambiguous as e:
            raise InputError(
                f"{what}: {e.count} columns of the {module} {kind} are named {name!r}: rename "
                f"them apart; its columns are {columns}"
            ) from None
        if found is None:
            dotted = (
                " (a dotted name reaches into a struct column: no such column and field)"
                if isinstance(name, str) and "." in name
                else ""
            )
            raise InputError(
                f"no column {name!r} ({what}) in the {module} {kind}{dotted}; its columns are "
                f"{columns}"
            )
        return found

    text = column(text_col, "text_col")
    ids = column(id_col, "id_col") if id_col is not None else None
    if id_col is None and "id" in [str(c) for c in columns]:
        ids = column("id", "id_col")
    keep = (
        column(keep_col, f"of keep='max:{keep_col}' or 'min:{keep_col}'")
        if keep_col is not None
        else None
    )
    return (
        _column_texts(text),
        _column_values(ids) if ids is not None else None,
        _column_values(keep) if keep is not None else None,
    )


class _Ambiguous(Exception):
    """A name several columns of a table share."""

    def __init__(self, count: int) -> None:
        self.count = count


def _split(name: Any) -> Optional[tuple[str, str]]:
    """``(head, rest)`` of a dotted name, or None."""
    if isinstance(name, str) and "." in name:
        head, rest = name.split(".", 1)
        return head, rest
    return None


def _arrow_column(table: Any, name: Any) -> Any:
    """A pyarrow Table's column of the whole name, else the dotted path into its struct
    columns (the CLI's rule for Parquet); None when there is none."""
    if not isinstance(name, str):
        return None
    found = table.schema.get_all_field_indices(name)
    if len(found) > 1:
        raise _Ambiguous(len(found))
    if found:
        return table.column(found[0])
    split = _split(name)
    if split is None:
        return None
    head, rest = split
    found = table.schema.get_all_field_indices(head)
    if len(found) > 1:
        raise _Ambiguous(len(found))
    return _arrow_field(table.column(found[0]), rest) if found else None


def _arrow_field(column: Any, name: str) -> Any:
    """The field of a struct column by its whole name, else by its dotted path; None when it is
    not a struct or has no such field. A row whose struct is null has a null field."""
    import pyarrow as pa
    import pyarrow.compute as pc

    t = column.type
    if not pa.types.is_struct(t):
        return None
    i = t.get_field_index(name)
    if i >= 0:
        return pc.struct_field(column, [i])
    split = _split(name)
    if split is None:
        return None
    i = t.get_field_index(split[0])
    return _arrow_field(pc.struct_field(column, [i]), split[1]) if i >= 0 else None


def _pandas_column(df: Any, name: Any) -> Any:
    """A pandas DataFrame's column by its label (or the label's text: ``"0"`` names the column
    0), else the dotted path into a struct column (Arrow-backed) or a column of dicts."""
    labels = [c for c in df.columns if c == name] or [c for c in df.columns if str(c) == name]
    if len(labels) > 1:
        raise _Ambiguous(len(labels))
    if labels:
        series = df[labels[0]]
        if getattr(series, "ndim", 1) != 1:  # the label repeats
            raise _Ambiguous(series.shape[1])
        return series
    split = _split(name)
    if split is None:
        return None
    head = _pandas_column(df, split[0])
    return _pandas_field(head, split[1]) if head is not None else None


def _pandas_field(series: Any, name: str) -> Any:
    """The field of a pandas struct column (Arrow-backed: a pyarrow array) or of a column of
    dicts (a list, None where a row has no such field); None when no row has it."""
    import pyarrow as pa

    dtype = getattr(series, "dtype", None)
    arrow_type = getattr(dtype, "pyarrow_dtype", None)
    if arrow_type is not None and pa.types.is_struct(arrow_type):
        return _arrow_field(pa.array(series.array), name)
    values = [_dict_field(v, name) for v in series.tolist()]
    if all(v is _MISSING for v in values):
        return None
    return [None if v is _MISSING else v for v in values]


_MISSING = object()


def _dict_field(value: Any, name: str) -> Any:
    """The value at a dotted path in a dict: the key of the whole remaining name, else its first
    segment and the rest (the library's rule for a JSON record); ``_MISSING`` when absent."""
    if not isinstance(value, Mapping):
        return _MISSING
    if name in value:
        return value[name]
    split = _split(name)
    if split is None or split[0] not in value:
        return _MISSING
    return _dict_field(value[split[0]], split[1])


def _polars_column(df: Any, name: Any) -> Any:
    """A polars DataFrame's column of the whole name, else the dotted path into its struct
    columns."""
    if not isinstance(name, str):
        return None
    if name in df.columns:
        return df[name]
    split = _split(name)
    if split is None or split[0] not in df.columns:
        return None
    return _polars_field(df[split[0]], split[1])


def _polars_field(series: Any, name: str) -> Any:
    import polars as pl

    if not isinstance(series.dtype, pl.Struct):
        return None
    fields = [f.name for f in series.dtype.fields]
    if name in fields:
        return series.struct.field(name)
    split = _split(name)
    if split is None or split[0] not in fields:
        return None
    return _polars_field(series.struct.field(split[0]), split[1])


def _column_texts(column: Any) -> Any:
    """A found column as a batch of texts (:func:`as_texts` reads pandas and pyarrow)."""
    if (type(column).__module__ or "").split(".")[0] == "polars":
        return column.to_arrow()
    return column


def _column_values(column: Any) -> list:
    """A found column's values as a list."""
    if isinstance(column, list):
        return column
    module = (type(column).__module__ or "").split(".")[0]
    if module == "pyarrow":
        return column.to_pylist()
    if module == "polars":
        return column.to_list()
    return column.tolist()


def id_texts(ids: list) -> list[Optional[str]]:
    """Each id's text by the library's rule (``neardup::id``: a str stands for its value, a
    number for its text, so ``"7"`` and ``7`` are one id), for the library to note repeats;
    None for a value that is no id (None, NaN, a bool, another type), which repeats nothing."""
    import json
    import math

    import numpy as np

    out: list[Optional[str]] = []
    for v in ids:
        if isinstance(v, np.generic):
            v = v.item()
        if isinstance(v, str):
            out.append(v if _encodes(v) else json.dumps(v))  # a lone surrogate, escaped
        elif isinstance(v, int) and not isinstance(v, bool):
            out.append(str(v))
        elif isinstance(v, float) and math.isfinite(v):
            out.append(json.dumps(v))
        else:
            out.append(None)
    return out


def _encodes(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def check_utf8(text: str, what: str) -> None:
    """An InputError naming ``what`` (an argument and its place) when ``text`` holds a lone
    surrogate, which UTF-8 cannot encode (the extension's message for texts, said here for ids
    before they reach it)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as e:
        from .errors import InputError

        excerpt = text[max(0, e.start - 20): e.start + 21]
        raise InputError(
            f"{what} is not valid Unicode: a lone surrogate U+{ord(text[e.start]):04X} at "
            f"character {e.start} ({excerpt!r}), which UTF-8 cannot encode (decode the bytes "
            f'with errors="replace", or clean the text: text.encode("utf-8", "replace").decode())'
        ) from None


def keep_field(keep: Optional[str]) -> Optional[str]:
    """The field a keep rule reads (``max:FIELD``, ``min:FIELD``), or None."""
    if isinstance(keep, str):
        rule, _, field = keep.partition(":")
        if rule in ("max", "min") and field.strip():
            return field
    return None


def rank_json(values: list, field: str) -> list[str]:
    """Each value of a keep rule's column as JSON text for the library, which reads numbers and
    ISO 8601 dates (a date or datetime is written as its ISO form; None and NaN are no value).
    A value of another type is a TypeError naming its row."""
    import datetime
    import json
    import math

    out = []
    for row, v in enumerate(values):
        if hasattr(v, "item") and not isinstance(v, (str, bytes)):
            v = v.item()  # a numpy scalar
        if v is None or type(v).__name__ == "NaTType" or (isinstance(v, float) and math.isnan(v)):
            out.append("null")  # pandas writes a missing value as NaN or NaT
        elif isinstance(v, (bool, int, float, str)):
            out.append(json.dumps(v))  # a bool, or an infinity, is refused by the library
        elif isinstance(v, (datetime.date, datetime.datetime)) or hasattr(v, "isoformat"):
            out.append(json.dumps(v.isoformat()))
        else:
            raise InputTypeError(
                f"row {row}: column {field!r} (of keep) holds {type(v).__name__}: expected "
                "numbers or dates"
            )
    return out


def not_taken(docs: Any, hint: str = "") -> TypeError:
    """The error for `docs` that cannot be a batch of texts."""
    module = (type(docs).__module__ or "").split(".")[0]
    kind = type(docs).__name__
    if module in ("pandas", "pyarrow", "numpy"):
        kind = f"{module} {kind}"
    return InputTypeError(f"expected the documents as {ACCEPTED}; got {kind}{hint}")


def _arrow_buffers(arr: Any) -> ArrowTexts:
    """The offsets, data and validity of a pyarrow string array, as numpy views (no copy)."""
    import numpy as np
    import pyarrow as pa

    if isinstance(arr, pa.ChunkedArray):
        arr = arr.chunks[0] if arr.num_chunks == 1 else arr.combine_chunks()
    t = arr.type
    if pa.types.is_dictionary(t):
        arr = arr.cast(t.value_type)
        t = arr.type
    if pa.types.is_string_view(t) if hasattr(pa.types, "is_string_view") else False:
        arr = arr.cast(pa.large_string())
        t = arr.type
    if pa.types.is_string(t):
        dtype, width = np.int32, 4
    elif pa.types.is_large_string(t):
        dtype, width = np.int64, 8
    else:
        raise InputTypeError(f"expected the documents as {ACCEPTED}; got an Arrow array of type {t}")
    validity, offsets_buf, data_buf = arr.buffers()[:3]
    n = len(arr)
    offsets = np.frombuffer(offsets_buf, dtype=dtype, count=n + 1, offset=arr.offset * width)
    data = np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None else np.zeros(0, np.uint8)
    valid = None
    if arr.null_count:
        valid = arr.is_valid().to_numpy(zero_copy_only=False)
    return ArrowTexts(offsets, data, valid)


def as_texts(docs: Any) -> Any:
    """`docs` as a list (or tuple) of str, or an :class:`ArrowTexts`.

    Accepts a list or tuple of str, a pandas Series (its Arrow buffers when it is backed by
    pyarrow), a pyarrow Array or ChunkedArray of strings, a 1-D numpy array of str, or any other
    iterable of str. Items that are not str are reported by the extension with their position;
    anything else is a ``TypeError`` naming what was given.
    """
    if isinstance(docs, (list, tuple, ArrowTexts)):
        return docs
    if isinstance(docs, (str, bytes, bytearray, memoryview)):
        raise not_taken(
            docs, f": a single {type(docs).__name__} is one document, not a collection of them"
        )
    if isinstance(docs, Mapping):
        raise not_taken(
            docs,
            " (a mapping iterates over its keys): pass list(d.values()), or give neardup.dedup "
            "the mapping itself (its keys become the ids)",
        )
    module = (type(docs).__module__ or "").split(".")[0]
    if module == "pyarrow":
        import pyarrow as pa

        if isinstance(docs, (pa.Array, pa.ChunkedArray)):
            return _arrow_buffers(docs)
        raise not_taken(docs, ": pass one string column, e.g. table.column('text')")
    if module == "pandas":
        if getattr(docs, "ndim", 1) != 1 or not hasattr(docs, "tolist"):
            raise not_taken(docs, ": pass one column, e.g. df['text']")
        array = getattr(docs, "array", None)
        if array is not None and hasattr(array, "__arrow_array__"):
            try:
                import pyarrow as pa

                return _arrow_buffers(pa.array(array))
            except (ImportError, TypeError):
                pass
        return docs.tolist()
    if module == "numpy" and hasattr(docs, "ndim"):
        if docs.ndim != 1:
            raise not_taken(docs, f" of {docs.ndim}-D: pass a 1-D array of str")
        return docs.tolist()
    try:
        items = iter(docs)
    except TypeError:
        raise not_taken(docs) from None
    return list(items)
