"""Type stubs of the Rust extension `neardup._neardup` (see the docstrings there)."""

from os import PathLike
from typing import Any, Mapping, Optional, Sequence, Union

import numpy as np
import numpy.typing as npt

__version__: str
FORMAT_VERSION: int
MAX_NUM_PERM: int
DEFAULT_RECALL: float
DEFAULT_MAX_DOC_BYTES: int
MAX_DOC_BYTES: int

# A batch of texts: a list or tuple of str, a `neardup._input.ArrowTexts` (an Arrow string
# array's buffers), or anything `neardup._input.as_texts` takes (a pandas Series, a pyarrow
# string array, a 1-D numpy array of str, another iterable of str); anything else is TypeError.
Texts = Union[Sequence[str], Any]
Doc = Union[str, Sequence[str]]

class Pipeline:
    """A compiled pipeline: the presets and options of `neardup fingerprint`, by name."""

    def __init__(self, preset: Optional[str] = None, **options: Any) -> None: ...
    @staticmethod
    def from_spec(spec: Union[dict, str]) -> "Pipeline": ...
    @property
    def spec(self) -> dict: ...
    def spec_json(self) -> str: ...
    @property
    def id(self) -> str: ...
    @property
    def bits(self) -> int: ...
    @property
    def num_perm(self) -> int: ...
    def fingerprint(self, text: Doc, minhash: bool = True) -> "Fingerprint": ...
    def fingerprint_batch(
        self, texts: Texts, minhash: bool = True, progress: Optional[bool] = None
    ) -> "FingerprintBatch": ...
    def features(self, text: Doc) -> list[str]: ...

class Fingerprint:
    @property
    def simhash(self) -> int: ...
    @property
    def bits(self) -> int: ...
    @property
    def hex(self) -> str: ...
    @property
    def minhash(self) -> Optional[npt.NDArray[np.uint32]]: ...
    @property
    def features(self) -> int: ...
    def hamming(self, other: "Fingerprint") -> int: ...

class FingerprintBatch:
    simhash: npt.NDArray[np.uint64]
    minhash: Optional[npt.NDArray[np.uint32]]
    features: npt.NDArray[np.uint32]
    bits: int
    def __len__(self) -> int: ...

class DedupResult:
    documents: int
    keep_mask: npt.NDArray[np.bool_]
    cluster_of: npt.NDArray[np.int64]
    clusters: list[tuple[list[int], int, float]]
    pair_count: int
    candidates: int
    verified: int
    exact_duplicates: int
    dropped: int
    banding: Optional[tuple[int, int]]
    candidate_probability: Optional[float]
    verification: str
    def pairs(
        self, compact: bool = False
    ) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.uint32], npt.NDArray[np.float64]]: ...

# A document id: a str, or an int standing for its decimal text (7 and "7" are one id).
DocId = Union[str, int]

class Index:
    def __init__(
        self,
        pipeline: Union[Pipeline, str, None] = None,
        threshold: Optional[float] = None,
        method: Optional[str] = None,
        hamming: Optional[int] = None,
        verify: Optional[str] = None,
        recall: Optional[float] = None,
        bands: Optional[int] = None,
        rows: Optional[int] = None,
        lsh_weights: Optional[tuple[float, float]] = None,
        passages: Union[bool, Mapping[str, Any], None] = None,
    ) -> None: ...
    def insert(self, id: DocId, text: Doc) -> None: ...
    def insert_many(
        self, ids: Sequence[DocId], texts: Texts, progress: Optional[bool] = None
    ) -> None: ...
    def remove(self, id: DocId) -> bool: ...
    # top_k: None is 10.
    def search(
        self, text: Doc, top_k: Optional[int] = None, threshold: Optional[float] = None
    ) -> list[tuple[str, float]]: ...
    def check(
        self,
        id: DocId,
        text: Doc,
        insert: bool = True,
        threshold: Optional[float] = None,
        top_k: Optional[int] = None,
    ) -> dict: ...
    def overlap(
        self, text: Doc, id: Optional[DocId] = None, exclude_source: Sequence[DocId] = ()
    ) -> dict: ...
    @property
    def passages(self) -> bool: ...
    def __len__(self) -> int: ...
    def __contains__(self, id: object) -> bool: ...
    def ids(self) -> list[str]: ...
    @property
    def pipeline(self) -> Pipeline: ...
    @property
    def banding(self) -> Optional[tuple[int, int]]: ...
    def save(self, path: Union[str, PathLike]) -> None: ...
    @staticmethod
    def load(path: Union[str, PathLike]) -> "Index": ...

def compare(a: Doc, b: Doc, pipeline: Union[Pipeline, str, None] = None) -> dict: ...
def presets() -> list[tuple[str, str]]: ...
def lsh_params(
    threshold: float,
    num_perm: int,
    weights: tuple[float, float] = (0.5, 0.5),
    recall: Optional[float] = None,
) -> tuple[int, int]: ...
def dedup_texts(
    texts: Texts,
    options: Optional[Mapping[str, Any]] = None,
    pipeline: Union[Pipeline, str, None] = None,
    progress: Optional[bool] = None,
    ranks: Optional[list[str]] = None,
    ids: Optional[list[Optional[str]]] = None,
) -> DedupResult: ...
def job_spec(
    pipeline: Union[Pipeline, str, None] = None, options: Optional[Mapping[str, Any]] = None
) -> str: ...
def option_table_json() -> str: ...
def keep_order(keep: str) -> list[tuple[str, bool]]: ...
def overlap_texts(
    query_ids: list[str],
    queries: Texts,
    against_ids: list[str],
    against: Optional[Texts],
    index_dir: Optional[Union[str, PathLike]],
    options: Optional[Mapping[str, Any]],
    exclude: list[str],
    save_index: Optional[Union[str, PathLike]],
    own_ids: bool,
    add: bool = False,
    remove: bool = False,
) -> list[dict]: ...
def yanyiwu_simhash(
    text: str, topn: Optional[int] = None, flavor: str = "yanyiwu", strip_symbols: bool = False
) -> dict: ...
def lucene_min_hash(
    text: Union[str, Sequence[str]],
    hash_count: Optional[int] = None,
    bucket_count: Optional[int] = None,
    hash_set_size: Optional[int] = None,
    with_rotation: bool = True,
    shingle_size: Optional[int] = None,
) -> list[bytes]: ...
def gojieba_simhash(text: str, topn: int) -> dict: ...
def jieba_md5_simhash(text: str) -> dict: ...
def ds_permutations(num_perm: int, seed: int, scheme_name: str) -> tuple[np.ndarray, np.ndarray]: ...
def ds_update_tokens(
    scheme_name: str, a: np.ndarray, b: np.ndarray, values: np.ndarray, tokens: Any
) -> bool: ...
def ds_update_hashes(
    scheme_name: str, a: np.ndarray, b: np.ndarray, values: np.ndarray, hashes: np.ndarray
) -> None: ...
def ds_bulk(scheme_name: str, a: np.ndarray, b: np.ndarray, docs: Any) -> Optional[np.ndarray]: ...
def ds_band_keys(scheme_name: str, values: np.ndarray, bands: int, rows: int) -> list[list[bytes]]: ...
def ds_sha1_hash32(data: bytes) -> int: ...
def ds_sha1_hash64(data: bytes) -> int: ...
