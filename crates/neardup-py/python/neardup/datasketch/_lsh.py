"""``MinHashLSH`` and its insertion and deletion sessions, as datasketch 2.0 has them."""

from __future__ import annotations

import copy as _copy
import functools
import hashlib
import pickle
import struct
import warnings
from typing import Any, Callable, Hashable, Iterable, Iterator, Optional, Sequence

import numpy as np

from .. import _neardup

from ._hashing import (  # noqa: F401
    _DTYPES,
)
from ._minhash import (  # noqa: F401
    MinHash,
)


def _scheme_of(known: Optional[str], minhash: Any) -> Optional[str]:
    scheme = getattr(minhash, "scheme", None)
    if scheme is None:
        return known
    if known is not None and scheme != known:
        raise ValueError(
            "MinHash scheme %r does not match scheme %r of the MinHash previously given to this "
            "index" % (scheme, known)
        )
    return known if known is not None else scheme


class _Storage(dict):
    """The dict behind datasketch's in-memory storages (``DictListStorage``,
    ``DictSetStorage``), with their methods, so that code reaching into ``MinHashLSH.keys`` or
    ``MinHashLSH.hashtables`` gets the same answers: a missing key reads as empty (``[]`` or
    ``set()``) without being added. Writes go straight into the dict: there is no buffer, so
    a session's inserts and removals are visible at once (as in datasketch with dict storage)."""

    _empty: Callable[[], Any] = list

    def __missing__(self, key: Hashable) -> Any:
        return self._empty()

    def get(self, key: Hashable, *default: Any) -> Any:  # type: ignore[override]
        if default:
            return dict.get(self, key, *default)
        return dict.get(self, key, self._empty())

    def getmany(self, *keys: Hashable) -> list:
        return [self.get(k) for k in keys]

    def insert(self, key: Hashable, *vals: Any, **kwargs: Any) -> None:
        """Adds values under ``key`` (``buffer=`` is accepted and has nothing to buffer)."""
        self.setdefault(key, self._empty()).extend(vals)

    def remove(self, *keys: Hashable, **kwargs: Any) -> None:
        for key in keys:
            del self[key]

    def remove_val(self, key: Hashable, val: Any, **kwargs: Any) -> None:
        self[key].remove(val)

    def size(self) -> int:
        return len(self)

    def itemcounts(self, **kwargs: Any) -> dict:
        return {k: len(v) for k, v in self.items()}

    def has_key(self, key: Hashable) -> bool:
        return key in self

    @property
    def buffer_size(self) -> int:
        return self.__dict__.get("_buffer_size", 50000)

    @buffer_size.setter
    def buffer_size(self, value: int) -> None:
        self.__dict__["_buffer_size"] = value

    def empty_buffer(self) -> None:
        """Nothing is buffered in memory."""

    def status(self) -> dict:
        return {"keyspace_size": len(self)}

    def add_to_select_buffer(self, keys: Iterable) -> None:
        """Looks ``keys`` up now (the live values, as datasketch) for :meth:`collect_select_buffer`."""
        self.__dict__.setdefault("_select_buffer", []).extend(self.getmany(*keys))

    def collect_select_buffer(self) -> list:
        buffer = self.__dict__.get("_select_buffer", [])
        out = list(buffer)
        del buffer[:]
        return out


class _ListStorage(_Storage):
    """``MinHashLSH.keys``: key -> its band keys, as datasketch's ``DictListStorage``."""

    _empty = list


class _SetStorage(_Storage):
    """One of ``MinHashLSH.hashtables``: band key -> keys, as datasketch's ``DictSetStorage``."""

    _empty = set

    def insert(self, key: Hashable, *vals: Any, **kwargs: Any) -> None:
        self.setdefault(key, set()).update(vals)


class MinHashLSH:
    """datasketch's ``MinHashLSH`` with dict storage: the same arguments, attributes (``h``,
    ``b``, ``r``, ``hashtables``, ``hashranges``, ``keys``, ``prepickle``) and methods, the same
    band keys (each band's values byte-swapped to big-endian) and the same (b, r) for a
    threshold. :meth:`insert_many` inserts many MinHashes at once, with their band keys computed
    on every core.

    As in datasketch with dict storage, every write goes straight into the index: what a
    session inserts or removes is visible at once and stays whether or not the session is
    closed. A key inserted again with ``check_duplication=False`` keeps both band-key lists
    (``keys[key]`` grows), and :meth:`remove` then clears the first one's buckets only, as
    datasketch does."""

    def __init__(
        self,
        threshold: float = 0.9,
        num_perm: int = 128,
        weights: tuple = (0.5, 0.5),
        params: Optional[tuple] = None,
        storage_config: Optional[dict] = None,
        prepickle: Optional[bool] = None,
        hashfunc: Optional[Callable[[bytes], bytes]] = None,
    ) -> None:
        storage_config = storage_config if storage_config else {"type": "dict"}
        if storage_config.get("type") != "dict":
            raise ValueError(
                "storage_config %r is not supported by neardup.datasketch: only in-memory "
                "{'type': 'dict'} storage (use datasketch itself for Redis or Cassandra, or "
                "neardup serve for a persistent index)" % (storage_config.get("type"),)
            )
        self._buffer_size = 50000
        if threshold > 1.0 or threshold < 0.0:
            raise ValueError("threshold must be in [0.0, 1.0]")
        if num_perm < 2:
            raise ValueError("Too few permutation functions")
        if any(w < 0.0 or w > 1.0 for w in weights):
            raise ValueError("Weight must be in [0.0, 1.0]")
        if sum(weights) != 1.0:
            raise ValueError("Weights must sum to 1.0")
        self.h = num_perm
        if params is not None:
            self.b, self.r = params
            if self.b * self.r > num_perm:
                raise ValueError(
                    "The product of b and r in params is "
                    f"{self.b} * {self.r} = {self.b * self.r} -- it must be less than num_perm "
                    f"{num_perm}. Did you forget to specify num_perm?"
                )
        else:
            self.b, self.r = _neardup.lsh_params(threshold, num_perm, tuple(weights))
        if self.b < 2:
            raise ValueError("The number of bands are too small (b < 2)")
        self.prepickle = False if prepickle is None else prepickle
        self.hashfunc = hashfunc
        self.hashtables: list[_SetStorage] = [_SetStorage() for _ in range(self.b)]
        self.hashranges = [(i * self.r, (i + 1) * self.r) for i in range(self.b)]
        self.keys: _ListStorage = _ListStorage()
        self._minhash_scheme: Optional[str] = None

    @property
    def buffer_size(self) -> int:
        return self._buffer_size

    @buffer_size.setter
    def buffer_size(self, value: int) -> None:
        self.keys.buffer_size = value
        for t in self.hashtables:
            t.buffer_size = value
        self._buffer_size = value

    def _H(self, hs: np.ndarray) -> bytes:
        key = bytes(hs.byteswap().data)
        return self.hashfunc(key) if self.hashfunc else key

    def _check(self, minhash: Any) -> None:
        """The length and scheme checks of a query, in datasketch's order."""
        if len(minhash) != self.h:
            raise ValueError("Expecting minhash with length %d, got %d" % (self.h, len(minhash)))
        _scheme_of(self._minhash_scheme, minhash)

    def _add(self, key: Hashable, Hs: list) -> None:
        self.keys.insert(key, *Hs)
        for H, table in zip(Hs, self.hashtables):
            table.setdefault(H, set()).add(key)

    def insert(self, key: Hashable, minhash: Any, check_duplication: bool = True) -> None:
        """Inserts a key with the MinHash of its set."""
        if len(minhash) != self.h:
            raise ValueError("Expecting minhash with length %d, got %d" % (self.h, len(minhash)))
        self._minhash_scheme = _scheme_of(self._minhash_scheme, minhash)
        if self.prepickle:
            key = pickle.dumps(key)
        if check_duplication and key in self.keys:
            raise ValueError("The given key already exists")
        self._add(key, [self._H(minhash.hashvalues[s:e]) for s, e in self.hashranges])

    def insert_many(
        self, entries: Iterable, minhashes: Optional[Sequence] = None, check_duplication: bool = True
    ) -> None:
        """Inserts many keys at once: ``insert_many([(key, minhash), ...])`` or
        ``insert_many(keys, minhashes)``, as :meth:`insert` of each in turn (an error stops at
        the entry that raised, the earlier ones stay). Band keys are computed on every core."""
        if minhashes is None:
            pairs = list(entries)
            keys = [k for k, _ in pairs]
            mhs = [m for _, m in pairs]
        else:
            keys, mhs = list(entries), list(minhashes)
        if len(keys) != len(mhs):
            raise ValueError("%d keys for %d minhashes" % (len(keys), len(mhs)))
        if not mhs:
            return
        # The checks `insert` makes of each entry, made for all before any is added, so that a
        # bad MinHash adds nothing; duplicate keys are checked while adding, as in `insert`.
        scheme = self._minhash_scheme
        for m in mhs:
            if len(m) != self.h:
                raise ValueError("Expecting minhash with length %d, got %d" % (self.h, len(m)))
            scheme = _scheme_of(scheme, m)
        self._minhash_scheme = scheme
        dtype = _DTYPES[scheme or "affine32"]
        values = np.ascontiguousarray(np.stack([m.hashvalues for m in mhs]), dtype=dtype)
        all_keys = _neardup.ds_band_keys(scheme or "affine32", values, self.b, self.r)
        if self.hashfunc:
            all_keys = [[self.hashfunc(k) for k in ks] for ks in all_keys]
        for key, Hs in zip(keys, all_keys):
            if self.prepickle:
                key = pickle.dumps(key)
            if check_duplication and key in self.keys:
                raise ValueError("The given key already exists")
            self._add(key, Hs)

    def merge(self, other: "MinHashLSH", check_overlap: bool = False) -> None:
        """Makes this index the union of both (a key in both keeps both band-key lists)."""
        if not (type(self) is type(other) and self.h == other.h and self.b == other.b and self.r == other.r):
            if type(self) is not type(other):
                raise ValueError(f"Cannot merge type MinHashLSH and type {type(other).__name__}.")
            raise ValueError("Cannot merge MinHashLSH with different initialization parameters.")
        known, other_known = self._minhash_scheme, other._minhash_scheme
        if known is not None and other_known is not None and known != other_known:
            raise ValueError(
                "Cannot merge MinHashLSH indexed with MinHash scheme %r into one indexed with "
                "scheme %r" % (other_known, known)
            )
        if check_overlap and set(self.keys).intersection(set(other.keys)):
            raise ValueError("The keys are overlapping, duplicate key exists.")
        if known is None:
            self._minhash_scheme = other_known
        for key in list(other.keys):
            self._add(key, other.keys.get(key))

    def insertion_session(self, buffer_size: int = 50000) -> "MinHashLSHInsertionSession":
        """A context manager for many inserts (each visible at once; nothing is held back)."""
        return MinHashLSHInsertionSession(self, buffer_size=buffer_size)

    def deletion_session(self, buffer_size: int = 50000) -> "MinHashLSHDeletionSession":
        """A context manager for many removals (each done at once)."""
        return MinHashLSHDeletionSession(self, buffer_size=buffer_size)

    def query(self, minhash: Any) -> list:
        """The keys whose sets share a band with ``minhash``'s (approximate: not verified)."""
        self._check(minhash)
        candidates: set = set()
        for (s, e), table in zip(self.hashranges, self.hashtables):
            candidates.update(table.get(self._H(minhash.hashvalues[s:e])))
        if self.prepickle:
            return [pickle.loads(k) for k in candidates]
        return list(candidates)

    def add_to_query_buffer(self, minhash: Any) -> None:
        """Buffers a query for :meth:`collect_query_buffer` (its buckets are looked up now)."""
        self._check(minhash)
        for (s, e), table in zip(self.hashranges, self.hashtables):
            table.add_to_select_buffer([self._H(minhash.hashvalues[s:e])])

    def collect_query_buffer(self) -> list:
        """The keys that every buffered query finds (the intersection), then clears the buffer."""
        collected = [table.collect_select_buffer() for table in self.hashtables]
        if not any(collected):
            return []
        per_query = [set().union(*bands) for bands in zip(*collected)]
        if not per_query:
            return []
        candidates = set.intersection(*per_query)
        if self.prepickle:
            return [pickle.loads(k) for k in candidates]
        return list(candidates)

    def __contains__(self, key: Hashable) -> bool:
        if self.prepickle:
            key = pickle.dumps(key)
        return key in self.keys

    def remove(self, key: Hashable) -> None:
        """Removes a key; ``ValueError`` if it is not there."""
        if self.prepickle:
            key = pickle.dumps(key)
        if key not in self.keys:
            raise ValueError("The given key does not exist")
        for H, table in zip(self.keys[key], self.hashtables):
            table.remove_val(H, key)
            if not table.get(H):
                table.remove(H)
        self.keys.remove(key)

    def is_empty(self) -> bool:
        """True when a hash table is empty (no key inserted)."""
        return any(t.size() == 0 for t in self.hashtables)

    def _query_b(self, minhash: Any, b: int) -> set:
        self._check(minhash)
        if b > len(self.hashtables):
            raise ValueError("b must be less or equal to the number of hash tables")
        candidates: set = set()
        for (s, e), table in zip(self.hashranges[:b], self.hashtables[:b]):
            H = self._H(minhash.hashvalues[s:e])
            if H in table:
                candidates.update(table[H])
        if self.prepickle:
            return {pickle.loads(k) for k in candidates}
        return candidates

    def get_counts(self) -> list:
        """Per band, ``{band key: number of keys}``."""
        return [t.itemcounts() for t in self.hashtables]

    def get_subset_counts(self, *keys: Hashable) -> list:
        """As :meth:`get_counts`, over the given keys only (each counted once; a key not in
        the index counts nothing)."""
        key_set = [pickle.dumps(k) for k in set(keys)] if self.prepickle else list(set(keys))
        tables = [_SetStorage() for _ in range(self.b)]
        for key, Hs in zip(key_set, self.keys.getmany(*key_set)):
            for H, table in zip(Hs, tables):
                table.insert(H, key)
        return [t.itemcounts() for t in tables]


class MinHashLSHInsertionSession:
    """A context manager for inserting many keys (``MinHashLSH.insertion_session``).

    Each :meth:`insert` goes straight into the index, as datasketch's does with dict storage:
    visible to ``query``, ``in`` and ``keys`` at once, kept if the session is never closed or the
    ``with`` block raises. For speed, use :meth:`MinHashLSH.insert_many`."""

    def __init__(self, lsh: MinHashLSH, buffer_size: int) -> None:
        self.lsh = lsh
        self.lsh.buffer_size = buffer_size

    def __enter__(self) -> "MinHashLSHInsertionSession":
        return self

    def __exit__(self, exc_type: Any, exc_val: Any, exc_tb: Any) -> None:
        self.close()

    def close(self) -> None:
        """Nothing is buffered in memory storage."""

    def insert(self, key: Hashable, minhash: Any, check_duplication: bool = True) -> None:
        """Inserts a key, as :meth:`MinHashLSH.insert`."""
        self.lsh.insert(key, minhash, check_duplication=check_duplication)


class MinHashLSHDeletionSession:
    """A context manager for removing many keys (``MinHashLSH.deletion_session``); each
    removal is done at once, as datasketch's with dict storage."""

    def __init__(self, lsh: MinHashLSH, buffer_size: int) -> None:
        self.lsh = lsh
        self.lsh.buffer_size = buffer_size

    def __enter__(self) -> "MinHashLSHDeletionSession":
        return self

    def __exit__(self, exc_type: Any, exc_val: Any, exc_tb: Any) -> None:
        self.close()

    def close(self) -> None:
        """Nothing is buffered in memory storage."""

    def remove(self, key: Hashable) -> None:
        """Removes a key, as :meth:`MinHashLSH.remove`."""
        self.lsh.remove(key)
