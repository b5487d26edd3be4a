"""``MinHash`` and ``LeanMinHash``, as datasketch 2.0 has them."""

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
    _AB,
    _AB_SIZE,
    _CACHED_NUM_PERM,
    _CODES,
    _CODES_INV,
    _DTYPES,
    _HASH_DTYPES,
    _HASH_LIMITS,
    _HASH_RANGE,
    _MAX,
    _MERSENNE_61,
    _SCHEMES,
    _VALUE_FMT,
    _WIDTHS,
    _cached_permutations,
    _fmix,
    _initial_values,
    _is_default,
    _permutations,
    sha1_hash32,
    sha1_hash64,
)


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
