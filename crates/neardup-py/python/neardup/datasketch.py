"""A drop-in for datasketch 2.0's ``MinHash``, ``LeanMinHash`` and ``MinHashLSH``.

Change ``from datasketch import MinHash, MinHashLSH`` to ``from neardup.datasketch import
MinHash, MinHashLSH``: the same constructor arguments, methods and attributes, and
``hashvalues`` bit-identical to datasketch's for the same ``num_perm``, ``seed`` and ``scheme``
(``"affine32"`` by default, ``"legacy"`` for datasketch before 2.0, ``"affine64"``). The SHA-1
hashing, the permutations and the minima run in Rust with the GIL released;
:meth:`MinHash.bulk` and :meth:`MinHashLSH.insert_many` work on many sets at once, on every
core.

Arguments are taken as datasketch takes them, odd ones included: a seed numpy's
``RandomState`` accepts but that is not an integer in ``[0, 2**32)`` (``None``, a sequence)
has its permutations drawn by numpy as datasketch draws them, any ``num_perm`` datasketch
allows is allowed (up to 2**32), and what datasketch rejects raises the same exception type.
A custom ``hashfunc`` works, and its values are converted exactly as datasketch converts them
(it is called from Python for each value, so it is as slow as in datasketch); the permutations
still run in Rust. There is no GPU: as datasketch on a machine without one, ``gpu_mode`` is
kept as given and ``"always"`` raises ``RuntimeError`` when ``update_batch`` is given values.
Options neardup does not support raise an error that names them: ``storage_config`` other than
``{"type": "dict"}`` (Redis, Cassandra), and weighted MinHash.
"""

from __future__ import annotations

import copy as _copy
import functools
import hashlib
import pickle
import struct
import warnings
from typing import Any, Callable, Hashable, Iterable, Iterator, Optional, Sequence

import numpy as np

from . import _neardup

__all__ = [
    "MinHash",
    "LeanMinHash",
    "MinHashLSH",
    "MinHashLSHInsertionSession",
    "MinHashLSHDeletionSession",
    "sha1_hash32",
    "sha1_hash64",
]

_SCHEMES = ("affine32", "affine64", "legacy")
_DTYPES = {"legacy": np.uint64, "affine32": np.uint32, "affine64": np.uint64}
_MAX = {
    "legacy": np.uint64((1 << 32) - 1),
    "affine32": np.uint32((1 << 32) - 1),
    "affine64": np.uint64((1 << 64) - 1),
}
# The dtype a hash function's values are converted to before they are permuted, and the largest
# Python int that converts without error (legacy computes in uint64, whatever the hash width).
_HASH_DTYPES = {"legacy": np.uint64, "affine32": np.uint32, "affine64": np.uint64}
_HASH_LIMITS = {"legacy": (1 << 64) - 1, "affine32": (1 << 32) - 1, "affine64": (1 << 64) - 1}
_WIDTHS = {"affine32": 32, "affine64": 64}
_MERSENNE_61 = np.uint64((1 << 61) - 1)
# datasketch's bound on num_perm (the count is stored in 4 bytes).
_HASH_RANGE = 1 << 32
# Permutations up to this many are cached (shared, read-only) per (num_perm, seed, scheme).
_CACHED_NUM_PERM = 4096
_FMIX = {
    32: (np.uint32(16), np.uint32(0x85EBCA6B), np.uint32(13), np.uint32(0xC2B2AE35), np.uint32(16)),
    64: (
        np.uint64(33),
        np.uint64(0xFF51AFD7ED558CCD),
        np.uint64(33),
        np.uint64(0xC4CEB9FE1A85EC53),
        np.uint64(33),
    ),
}
_CODES = {"affine32": 1, "affine64": 2}
_CODES_INV = {v: k for k, v in _CODES.items()}
_VALUE_FMT = {"legacy": "I", "affine32": "I", "affine64": "Q"}


def sha1_hash32(data: bytes) -> int:
    """datasketch's default 32-bit hash: the first 4 bytes of SHA-1, little-endian."""
    if isinstance(data, bytes):
        return _neardup.ds_sha1_hash32(data)
    return struct.unpack("<I", hashlib.sha1(data).digest()[:4])[0]


def sha1_hash64(data: bytes) -> int:
    """datasketch's default 64-bit hash: the first 8 bytes of SHA-1, little-endian."""
    if isinstance(data, bytes):
        return _neardup.ds_sha1_hash64(data)
    return struct.unpack("<Q", hashlib.sha1(data).digest()[:8])[0]


def _is_default(hashfunc: Callable, scheme: str) -> bool:
    """True when `hashfunc` is the SHA-1 hash of the scheme's width (ours or datasketch's)."""
    name = "sha1_hash64" if scheme == "affine64" else "sha1_hash32"
    if hashfunc is (sha1_hash64 if scheme == "affine64" else sha1_hash32):
        return True
    return getattr(hashfunc, "__module__", "") == "datasketch.hashfunc" and getattr(
        hashfunc, "__name__", ""
    ) == name


def _is_integer(x: Any) -> bool:
    """An int or numpy integer, not a bool (numpy reads a bool seed or size its own way)."""
    return type(x) is int or isinstance(x, np.integer)


@functools.lru_cache(maxsize=64)
def _initial_values(num_perm: int, scheme: str) -> np.ndarray:
    """A new MinHash's hash values (affine schemes), read-only: copied for each MinHash."""
    v = np.full(num_perm, _MAX[scheme], dtype=_DTYPES[scheme])
    v.setflags(write=False)
    return v


# `(a, b)` of a permutations array, by the array's identity (`MinHash._params`).
_AB: dict[int, tuple[Any, Optional[tuple[np.ndarray, np.ndarray]]]] = {}
_AB_SIZE = 256


@functools.lru_cache(maxsize=64)
def _cached_permutations(num_perm: int, seed: int, scheme: str) -> np.ndarray:
    return _drawn_permutations(num_perm, seed, scheme)


def _drawn_permutations(num_perm: int, seed: int, scheme: str) -> np.ndarray:
    """datasketch's permutation parameters, drawn in Rust, as a read-only (2, num_perm) array."""
    a, b = _neardup.ds_permutations(num_perm, seed, scheme)
    p = np.array([a, b], dtype=_DTYPES[scheme])
    p.setflags(write=False)
    return p


def _permutations(num_perm: Any, seed: Any, scheme: str) -> np.ndarray:
    """datasketch's ``MinHash._init_permutations``: in Rust for an integer seed in ``[0,
    2**32)``, which is what numpy's generator is then seeded with; by numpy itself for any other
    seed (``None`` draws from the OS, a sequence seeds by array), so that what numpy takes or
    refuses, and what it draws, is datasketch's."""
    if _is_integer(num_perm) and _is_integer(seed) and 0 <= seed < 1 << 32:
        n, s = int(num_perm), int(seed)
        if n <= _CACHED_NUM_PERM:
            return _cached_permutations(n, s, scheme)
        return _drawn_permutations(n, s, scheme)
    gen = np.random.RandomState(seed)
    if scheme == "legacy":
        return np.array(
            [
                (
                    gen.randint(1, _MERSENNE_61, dtype=np.uint64),
                    gen.randint(0, _MERSENNE_61, dtype=np.uint64),
                )
                for _ in range(num_perm)
            ],
            dtype=np.uint64,
        ).T
    width, dtype = _WIDTHS[scheme], _DTYPES[scheme]
    a = gen.randint(0, 1 << (width - 1), num_perm, dtype=dtype) * dtype(2) + dtype(1)
    b = gen.randint(0, 1 << width, num_perm, dtype=dtype)
    return np.array([a, b])


def _fmix(hv: np.ndarray, width: int) -> np.ndarray:
    """The MurmurHash3 finalizer on a numpy array, as datasketch applies it (the rare inputs
    the Rust kernels do not take: see `MinHash._numpy_update`)."""
    s1, m1, s2, m2, s3 = _FMIX[width]
    hv = hv ^ (hv >> s1)
    hv = hv * m1
    hv = hv ^ (hv >> s2)
    hv = hv * m2
    return hv ^ (hv >> s3)


class MinHash:
    """datasketch's ``MinHash``: the same arguments, attributes and methods, with the work in Rust.

    Args:
        num_perm: the number of permutation functions (ignored when ``hashvalues`` is given);
            1 to 2**32, as datasketch.
        seed: the seed of the permutation functions: what numpy's ``RandomState`` takes (an int
            in ``[0, 2**32)``, ``None``, a sequence of them), as datasketch.
        gpu_mode: kept as given; there is no GPU, so ``"always"`` raises ``RuntimeError`` when
            :meth:`update_batch` is given values (datasketch on a machine without one).
        hashfunc: the hash function (default: SHA-1 of the scheme's width; bytes input).
        hashobj: deprecated, ignored (a ``DeprecationWarning``).
        hashvalues: the hash values of an existing MinHash (``scheme`` must then be given).
        permutations: the permutation parameters of an existing MinHash (likewise).
        scheme: ``"affine32"`` (default), ``"affine64"`` or ``"legacy"`` (datasketch before 2.0).
    """

    def __init__(
        self,
        num_perm: int = 128,
        seed: int = 1,
        gpu_mode: str = "disable",
        hashfunc: Optional[Callable] = None,
        hashobj: Optional[object] = None,
        hashvalues: Optional[Any] = None,
        permutations: Optional[Any] = None,
        scheme: Optional[str] = None,
    ) -> None:
        # datasketch's checks, in datasketch's order, so that odd arguments raise what
        # datasketch raises (often numpy's own error, from the same numpy call).
        if scheme is None:
            if hashvalues is not None or permutations is not None:
                raise ValueError(
                    "scheme must be specified explicitly when initializing from existing hash "
                    "values or permutations: pass the scheme of the MinHash they came from, or "
                    "scheme='legacy' for values created by datasketch before 2.0.0."
                )
            scheme = "affine32"
        elif scheme not in _SCHEMES:
            raise ValueError("scheme must be one of %s, got %r" % (", ".join(_SCHEMES), scheme))
        self.scheme = scheme
        if hashvalues is not None:
            num_perm = len(hashvalues)
        if num_perm < 1:
            raise ValueError("num_perm must be positive")
        if num_perm > _HASH_RANGE:
            raise ValueError(
                "Cannot have more than %d number of permutation functions" % _HASH_RANGE
            )
        self.seed = seed
        self.num_perm = num_perm
        if hashfunc is None:
            hashfunc = sha1_hash64 if scheme == "affine64" else sha1_hash32
        if not callable(hashfunc):
            raise ValueError("The hashfunc must be a callable.")
        self.hashfunc = hashfunc
        if hashobj is not None:
            warnings.warn(
                "hashobj is deprecated, use hashfunc instead.", DeprecationWarning, stacklevel=2
            )
        if hashvalues is not None:
            self.hashvalues = self._parse_hashvalues(hashvalues)
        else:
            self.hashvalues = self._init_hashvalues(num_perm)
        if permutations is not None:
            self.permutations = self._parse_permutations(permutations)
        else:
            self.permutations = _permutations(num_perm, seed, scheme)
        if len(self) != len(self.permutations[0]):
            raise ValueError("Numbers of hash values and permutations mismatch")
        self._gpu_mode = gpu_mode
        self._a_gpu = None
        self._b_gpu = None

    def _init_hashvalues(self, num_perm: Any) -> np.ndarray:
        if self.scheme == "legacy":
            return np.ones(num_perm, dtype=np.uint64) * _MAX["legacy"]
        if type(num_perm) is int and num_perm <= _CACHED_NUM_PERM:
            # A copy of a cached array: a sixth of np.full's time, which a MinHash per
            # document pays every time.
            return _initial_values(num_perm, self.scheme).copy()
        return np.full(num_perm, _MAX[self.scheme], dtype=_DTYPES[self.scheme])

    def _to_scheme_array(self, values: Any, what: str) -> np.ndarray:
        dtype = _DTYPES[self.scheme]
        if isinstance(values, np.ndarray):
            if (
                values.dtype.kind in "iu"
                and values.size
                and (int(values.max()) > int(_MAX[self.scheme]) or int(values.min()) < 0)
            ):
                raise ValueError("%s out of range for scheme %r" % (what, self.scheme))
            return values.astype(dtype)
        try:
            return np.array(values, dtype=dtype)
        except OverflowError as err:
            raise ValueError("%s out of range for scheme %r: %s" % (what, self.scheme, err)) from err

    def _parse_hashvalues(self, hashvalues: Any) -> np.ndarray:
        if self.scheme == "legacy":
            return np.array(hashvalues, dtype=np.uint64)
        return self._to_scheme_array(hashvalues, "hash values")

    def _parse_permutations(self, permutations: Any) -> Any:
        if self.scheme == "legacy":
            return permutations  # kept as given, as datasketch keeps it
        dtype = _DTYPES[self.scheme]
        if (
            isinstance(permutations, np.ndarray)
            and permutations.dtype == dtype
            and permutations.ndim == 2
            and permutations.shape[0] == 2
        ):
            parsed = permutations
        else:
            parsed = np.array(
                [
                    self._to_scheme_array(permutations[0], "permutation parameters"),
                    self._to_scheme_array(permutations[1], "permutation parameters"),
                ]
            )
        if np.any(parsed[0] & dtype(1) == 0):
            raise ValueError("all `a` permutation parameters must be odd for scheme %r" % self.scheme)
        return parsed

    def _hash_input_array(self, hvs: Any) -> np.ndarray:
        """A hash function's values in the scheme's dtype, converted as datasketch converts them."""
        try:
            return np.array(hvs, dtype=_HASH_DTYPES[self.scheme])
        except OverflowError as err:
            raise ValueError(
                "hashfunc returned a value out of range for scheme %r: %s. Use a hash function "
                "matching the scheme width, or scheme='affine64' for 64-bit hash values."
                % (self.scheme, err)
            ) from err

    def _params(self) -> Optional[tuple[np.ndarray, np.ndarray]]:
        """`a` and `b` as contiguous arrays of the scheme's dtype for the Rust kernels (cached
        while `permutations` is the same object), or None when the kernels do not apply as they
        are: `permutations` not such an array (legacy parameters given as lists, which datasketch
        computes with as given), or `hashvalues` not one value of the scheme's dtype per
        permutation (numpy broadcasting made it 2-D, or it was assigned). numpy then computes
        as in datasketch."""
        p = self.permutations
        cached = _AB.get(id(p)) or self.__dict__.get("_ab")
        if cached is not None and cached[0] is p:
            ab = cached[1]
        else:
            ab = None
            if isinstance(p, np.ndarray) and p.dtype == _DTYPES[self.scheme] and p.ndim == 2:
                ab = (np.ascontiguousarray(p[0]), np.ascontiguousarray(p[1]))
            if (
                isinstance(p, np.ndarray)
                and p.ndim == 2
                and not p.flags.writeable
                and p.shape[1] <= _CACHED_NUM_PERM
            ):
                # The shared arrays of `_cached_permutations` (read-only, at most
                # `_CACHED_NUM_PERM` wide, so the cache stays small): every MinHash of one
                # (num_perm, seed, scheme) has the same, so (a, b) are cached for all of them,
                # keyed by identity and holding `p` so that its id is not reused while cached.
                if len(_AB) >= _AB_SIZE:
                    _AB.clear()
                _AB[id(p)] = (p, ab)
            else:
                # Anything else (given by the caller, who may change it in place, or drawn
                # for this MinHash alone) is cached for this MinHash only.
                self.__dict__["_ab"] = (p, ab)
        hv = self.hashvalues
        if ab is None or not (
            isinstance(hv, np.ndarray)
            and hv.ndim == 1
            and hv.dtype == _DTYPES[self.scheme]
            and len(hv) == len(ab[0])
        ):
            return None
        return ab

    def _apply(self, ab: tuple[np.ndarray, np.ndarray], hashes: np.ndarray) -> None:
        """Permutes converted hash values in Rust into a new array of minima: like datasketch's
        ``np.minimum``, an update replaces ``hashvalues`` and leaves the old array as it was."""
        values = np.array(self.hashvalues, dtype=_DTYPES[self.scheme])
        hashes = np.ascontiguousarray(hashes, dtype=_HASH_DTYPES[self.scheme])
        _neardup.ds_update_hashes(self.scheme, ab[0], ab[1], values, hashes)
        self.hashvalues = values

    def _check_gpu(self) -> None:
        """datasketch's choice of backend for a non-empty batch, on a machine without a GPU."""
        if self._gpu_mode == "always":
            raise RuntimeError("GPU mode 'always' requested but CuPy/CUDA device is unavailable.")

    def _numpy_update(self, hv: Any) -> None:
        """datasketch's ``update`` in numpy, for values the Rust kernels do not take as they are
        (a legacy hash that is not an int, an affine one that converts to more than one value,
        permutations given as lists): numpy then computes, or refuses, as in datasketch."""
        a, b = self.permutations
        if self.scheme == "legacy":
            phv = np.bitwise_and((a * hv + b) % _MERSENNE_61, _MAX["legacy"])
        else:
            hv = _fmix(self._hash_input_array([hv]), _WIDTHS[self.scheme])
            phv = a * hv + b
        self.hashvalues = np.minimum(phv, self.hashvalues)

    def _numpy_update_batch(self, hv_list: list) -> None:
        """datasketch's ``update_batch`` in numpy, for the same rare inputs."""
        a, b = self.permutations
        if self.scheme == "legacy":
            hv = np.array(hv_list, dtype=np.uint64, ndmin=2).T
            phv = np.bitwise_and((hv * a + b) % _MERSENNE_61, _MAX["legacy"])
        else:
            hv = _fmix(self._hash_input_array(hv_list).reshape(-1, 1), _WIDTHS[self.scheme])
            phv = hv * a + b
        self.hashvalues = np.minimum(self.hashvalues, phv.min(axis=0))

    def update(self, b: Any) -> None:
        """Updates this MinHash with one value, hashed with ``hashfunc``."""
        hv = self.hashfunc(b)
        ab = self._params()
        if ab is not None:
            if type(hv) is int and 0 <= hv <= _HASH_LIMITS[self.scheme]:
                self._apply(ab, np.array([hv], dtype=_HASH_DTYPES[self.scheme]))
                return
            if self.scheme != "legacy":
                # datasketch converts [hv]: one value, unless hv converts to an array.
                hashes = self._hash_input_array([hv])
                if hashes.shape == (1,):
                    self._apply(ab, hashes)
                    return
        self._numpy_update(hv)

    def update_batch(self, b: Iterable) -> None:
        """Updates this MinHash with many values at once."""
        ab = self._params()
        if ab is not None and self._gpu_mode != "always" and _is_default(self.hashfunc, self.scheme):
            items = b if isinstance(b, list) else list(b)
            if not items:
                return
            # A new array (an update replaces `hashvalues`, as datasketch's does); `_params`
            # checked its dtype and shape.
            values = self.hashvalues.copy()
            if _neardup.ds_update_tokens(self.scheme, ab[0], ab[1], values, items):
                self.hashvalues = values
                return
            b = items  # some value is not bytes: hashed in Python below, as datasketch does
        hv_list = [self.hashfunc(x) for x in b]
        if not hv_list:
            return
        self._check_gpu()
        if ab is not None:
            if self.scheme == "legacy":
                hashes = np.array(hv_list, dtype=np.uint64, ndmin=2).T
                if hashes.ndim == 2 and hashes.shape[1] == 1:
                    self._apply(ab, hashes[:, 0])
                    return
            else:
                # datasketch flattens whatever the values convert to (reshape(-1, 1)).
                self._apply(ab, self._hash_input_array(hv_list).reshape(-1))
                return
        self._numpy_update_batch(hv_list)

    def _check(self, other: "MinHash", what: str) -> None:
        if getattr(other, "scheme", None) != self.scheme:
            raise ValueError("Cannot %s given MinHash with different permutation schemes" % what)
        if other.seed != self.seed:
            raise ValueError("Cannot %s given MinHash with different seeds" % what)
        if len(self) != len(other):
            raise ValueError(
                "Cannot %s given MinHash with different numbers of permutation functions" % what
            )

    def jaccard(self, other: "MinHash") -> float:
        """The estimated Jaccard similarity of the two sets."""
        self._check(other, "compute Jaccard")
        return float(np.count_nonzero(self.hashvalues == other.hashvalues)) / float(len(self))

    def count(self) -> float:
        """The estimated cardinality of the set."""
        k = len(self)
        return float(k) / np.sum(self.hashvalues / float(_MAX[self.scheme])) - 1.0

    def merge(self, other: "MinHash") -> None:
        """Makes this MinHash the union of both."""
        self._check(other, "merge")
        self.hashvalues = np.minimum(other.hashvalues, self.hashvalues)

    def digest(self) -> np.ndarray:
        """A copy of the hash values."""
        return _copy.copy(self.hashvalues)

    def is_empty(self) -> bool:
        """True when nothing was added."""
        return not np.any(self.hashvalues != _MAX[self.scheme])

    def clear(self) -> None:
        """Resets the hash values."""
        self.hashvalues = self._init_hashvalues(len(self))

    def copy(self) -> "MinHash":
        """A copy (sharing the permutations, which are read-only)."""
        return MinHash(
            seed=self.seed,
            hashfunc=self.hashfunc,
            hashvalues=self.digest(),
            permutations=self.permutations,
            gpu_mode=self._gpu_mode,
            scheme=self.scheme,
        )

    def __len__(self) -> int:
        return len(self.hashvalues)

    def __eq__(self, other: object) -> bool:
        return (
            type(self) is type(other)
            and self.scheme == other.scheme  # type: ignore[attr-defined]
            and self.seed == other.seed  # type: ignore[attr-defined]
            and np.array_equal(self.hashvalues, other.hashvalues)  # type: ignore[attr-defined]
        )

    __hash__ = None  # type: ignore[assignment]

    @classmethod
    def union(cls, *mhs: "MinHash") -> "MinHash":
        """A new MinHash, the union of two or more (with the first one's ``hashfunc`` and
        ``gpu_mode``)."""
        if len(mhs) < 2:
            raise ValueError("Cannot union less than 2 MinHash")
        num_perm, seed, scheme = len(mhs[0]), mhs[0].seed, mhs[0].scheme
        if any(seed != m.seed or num_perm != len(m) or scheme != m.scheme for m in mhs):
            raise ValueError(
                "The unioning MinHash must have the same seed, number of permutation functions "
                "and scheme"
            )
        return cls(
            num_perm=num_perm,
            seed=seed,
            hashfunc=mhs[0].hashfunc,
            hashvalues=np.minimum.reduce([m.hashvalues for m in mhs]),
            permutations=mhs[0].permutations,
            gpu_mode=mhs[0]._gpu_mode,
            scheme=scheme,
        )

    @classmethod
    def bulk(cls, b: Iterable, **minhash_kwargs: Any) -> list["MinHash"]:
        """MinHashes of many sets (each an iterable of bytes), computed on every core."""
        template = cls(**minhash_kwargs)
        docs = [list(x) for x in b]
        ab = template._params()
        if (
            docs
            and ab is not None
            and template._gpu_mode != "always"
            and _is_default(template.hashfunc, template.scheme)
        ):
            values = _neardup.ds_bulk(template.scheme, ab[0], ab[1], docs)
            if values is not None:
                state = template.__dict__
                out = []
                new = object.__new__
                for row in values:
                    m = new(cls)
                    d = state.copy()
                    d["hashvalues"] = row  # a row of one matrix: no copy per sketch
                    m.__dict__ = d
                    out.append(m)
                return out
        return list(cls.generator(docs, **minhash_kwargs))

    @classmethod
    def generator(cls, b: Iterable, **minhash_kwargs: Any) -> Iterator["MinHash"]:
        """MinHashes of many sets, one at a time."""
        m = cls(**minhash_kwargs)
        for x in b:
            c = m.copy()
            c.update_batch(x)
            yield c

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        state.pop("_ab", None)
        state["_a_gpu"] = None
        state["_b_gpu"] = None
        return state

    def __setstate__(self, state: dict) -> None:
        state.setdefault("scheme", "legacy")
        state.setdefault("_gpu_mode", "disable")
        self.__dict__.update(state)


class LeanMinHash(MinHash):
    """datasketch's ``LeanMinHash``: the seed, scheme and hash values only; cannot be updated;
    ``serialize``/``deserialize`` in datasketch's byte layout."""

    __slots__ = ("hashvalues", "scheme", "seed")

    def _initialize_slots(self, seed: int, hashvalues: Any, scheme: str = "legacy") -> None:
        if scheme not in _SCHEMES:
            raise ValueError("scheme must be one of %s, got %r" % (", ".join(_SCHEMES), scheme))
        self.seed = seed
        self.scheme = scheme
        self.hashvalues = self._parse_hashvalues(hashvalues)
        if scheme != "legacy" and len(self.hashvalues) == 0:
            raise ValueError("hashvalues must not be empty")

    def __init__(
        self,
        minhash: Optional[MinHash] = None,
        seed: Optional[int] = None,
        hashvalues: Optional[Any] = None,
        scheme: Optional[str] = None,
    ) -> None:
        if minhash is not None:
            if scheme is not None and scheme != minhash.scheme:
                raise ValueError(
                    "scheme %r conflicts with the scheme %r of the given MinHash"
                    % (scheme, minhash.scheme)
                )
            self._initialize_slots(minhash.seed, minhash.hashvalues, minhash.scheme)
        elif hashvalues is not None and seed is not None:
            if scheme is None:
                raise ValueError(
                    "scheme must be specified explicitly when initializing from existing hash "
                    "values: pass the scheme of the MinHash they came from, or scheme='legacy' "
                    "for hash values created by datasketch before 2.0.0."
                )
            self._initialize_slots(seed, hashvalues, scheme)
        else:
            raise ValueError(
                "Init parameters cannot be None: make sure to set either minhash or both of hash "
                "values and seed"
            )

    def update(self, b: Any) -> None:
        """Not available: raises ``TypeError``."""
        raise TypeError("Cannot update a LeanMinHash")

    def update_batch(self, b: Iterable) -> None:
        """Not available: raises ``TypeError``."""
        raise TypeError("Cannot update a LeanMinHash")

    def copy(self) -> "LeanMinHash":
        lmh = object.__new__(LeanMinHash)
        lmh._initialize_slots(self.seed, self.hashvalues, self.scheme)
        return lmh

    def _fmt(self, byteorder: str) -> str:
        if self.scheme == "legacy":
            return "%sqi%dI" % (byteorder, len(self))
        return "%sqiB%d%s" % (byteorder, len(self), _VALUE_FMT[self.scheme])

    def bytesize(self, byteorder: str = "@") -> int:
        """The size of :meth:`serialize`'s output."""
        return struct.calcsize(self._fmt(byteorder))

    def serialize(self, buf: Any, byteorder: str = "@") -> None:
        """Writes the seed, the count (negated, then a scheme code, for affine schemes) and the
        hash values into ``buf``, as datasketch does."""
        if len(buf) < self.bytesize(byteorder):
            raise ValueError(
                "The buffer does not have enough space for holding this MinHash."
            )
        if self.scheme == "legacy":
            struct.pack_into(self._fmt(byteorder), buf, 0, self.seed, len(self), *self.hashvalues)
        else:
            struct.pack_into(
                self._fmt(byteorder), buf, 0, self.seed, -len(self), _CODES[self.scheme],
                *self.hashvalues,
            )

    @classmethod
    def deserialize(cls, buf: Any, byteorder: str = "@") -> "LeanMinHash":
        """Reads what :meth:`serialize` (ours or datasketch's) wrote."""
        try:
            seed, num_perm = struct.unpack_from("%sqi" % byteorder, buf, 0)
        except TypeError:
            seed, num_perm = struct.unpack_from("%sqi" % byteorder, buffer(buf), 0)  # noqa: F821
        if num_perm >= 0:
            scheme = "legacy"
            offset = struct.calcsize("%sqi" % byteorder)
        else:
            num_perm = -num_perm
            (code,) = struct.unpack_from(byteorder + "B", buf, struct.calcsize("%sqi" % byteorder))
            if code not in _CODES_INV:
                raise ValueError("Unknown permutation scheme code: %d" % code)
            scheme = _CODES_INV[code]
            offset = struct.calcsize("%sqiB0%s" % (byteorder, _VALUE_FMT[scheme]))
        values = struct.unpack_from("%s%d%s" % (byteorder, num_perm, _VALUE_FMT[scheme]), buf, offset)
        lmh = object.__new__(LeanMinHash)
        lmh._initialize_slots(seed, values, scheme)
        return lmh

    def __getstate__(self) -> bytearray:  # type: ignore[override]
        buf = bytearray(self.bytesize())
        self.serialize(buf)
        return buf

    def __setstate__(self, buf: bytearray) -> None:  # type: ignore[override]
        other = LeanMinHash.deserialize(buf)
        self._initialize_slots(other.seed, other.hashvalues, other.scheme)

    def __hash__(self) -> int:  # type: ignore[override]
        return hash((self.scheme, self.seed, tuple(self.hashvalues)))

    @classmethod
    def union(cls, *lmhs: "LeanMinHash") -> "LeanMinHash":  # type: ignore[override]
        if len(lmhs) < 2:
            raise ValueError("Cannot union less than 2 MinHash")
        num_perm, seed, scheme = len(lmhs[0]), lmhs[0].seed, lmhs[0].scheme
        if any(seed != m.seed or num_perm != len(m) or scheme != m.scheme for m in lmhs):
            raise ValueError(
                "The unioning MinHash must have the same seed, number of permutation functions "
                "and scheme."
            )
        lmh = object.__new__(LeanMinHash)
        lmh._initialize_slots(seed, np.minimum.reduce([m.hashvalues for m in lmhs]), scheme)
        return lmh


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


# datasketch 2.0's public names that this drop-in does not provide (its ``__all__``, less the
# ones above). Importing one is an ImportError that says what the drop-in has and where the
# rest is, instead of Python's bare "cannot import name".
_NOT_PROVIDED = (
    "AsyncMinHashLSH",
    "HNSW",
    "HyperLogLog",
    "HyperLogLogPlusPlus",
    "MinHashLSHBloom",
    "MinHashLSHEnsemble",
    "MinHashLSHForest",
    "WeightedMinHash",
    "WeightedMinHashGenerator",
    "WeightedMinHashLSH",
    "WeightedMinHashLSHForest",
    "bBitMinHash",
)


def __getattr__(name: str) -> Any:
    if name in _NOT_PROVIDED:
        provided = ", ".join(__all__[:-1]) + " and " + __all__[-1]
        raise ImportError(
            f"neardup.datasketch is a drop-in for datasketch's MinHash, LeanMinHash and "
            f"MinHashLSH only: it provides {provided}, not {name}. The rest of datasketch lives "
            f"in datasketch itself: pip install datasketch, then: from datasketch import {name}",
            name=__name__,
        )
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
