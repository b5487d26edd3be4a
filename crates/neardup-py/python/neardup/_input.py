"""Batches of texts for the extension: lists of str as they are, Arrow string arrays (pyarrow,
or pandas backed by pyarrow) as their buffers without copying, anything else iterated once."""

from __future__ import annotations

from typing import Any


def _arrow_buffers(arr: Any) -> dict:
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
        raise TypeError(f"expected an Arrow string array, got type {t}")
    validity, offsets_buf, data_buf = arr.buffers()[:3]
    n = len(arr)
    offsets = np.frombuffer(offsets_buf, dtype=dtype, count=n + 1, offset=arr.offset * width)
    data = np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None else np.zeros(0, np.uint8)
    valid = None
    if arr.null_count:
        valid = arr.is_valid().to_numpy(zero_copy_only=False)
    return {"offsets": offsets, "data": data, "valid": valid}


def as_texts(docs: Any) -> Any:
    """`docs` as a list (or tuple) of str, or a dict of Arrow buffers.

    Accepts a list or tuple of str, a pandas Series (its Arrow buffers when it is backed by
    pyarrow), a pyarrow Array or ChunkedArray of strings, a numpy array of str, or any iterable of
    str. Items that are not str are reported by the extension with their position.
    """
    if isinstance(docs, (list, tuple, dict)):
        return docs
    module = type(docs).__module__ or ""
    if module.startswith("pyarrow"):
        return _arrow_buffers(docs)
    if module.startswith("pandas"):
        array = getattr(docs, "array", None)
        if array is not None and hasattr(array, "__arrow_array__"):
            try:
                import pyarrow as pa

                return _arrow_buffers(pa.array(array))
            except (ImportError, TypeError):
                pass
        return docs.tolist()
    if module.startswith("numpy"):
        return docs.tolist()
    if isinstance(docs, (str, bytes)):
        raise TypeError("expected a collection of documents, got a single str or bytes")
    return list(docs)
