"""The drop-in's hashing: datasketch's SHA-1 hash functions, schemes, permutations and their
checks, as datasketch 2.0 defines them."""

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
