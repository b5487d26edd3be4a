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

from typing import Any

from ._hashing import sha1_hash32, sha1_hash64
from ._lsh import MinHashLSH, MinHashLSHDeletionSession, MinHashLSHInsertionSession
from ._minhash import LeanMinHash, MinHash

__all__ = [
    "MinHash",
    "LeanMinHash",
    "MinHashLSH",
    "MinHashLSHInsertionSession",
    "MinHashLSHDeletionSession",
    "sha1_hash32",
    "sha1_hash64",
]

# The public names are this module's, as they were before it was split (pickles and reprs name
# neardup.datasketch.MinHash).
for _name in __all__:
    globals()[_name].__module__ = __name__
del _name

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
