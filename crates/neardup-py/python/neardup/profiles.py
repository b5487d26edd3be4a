"""Other systems' fingerprints, bit for bit (as ``neardup fingerprint --profile``).

- :func:`yanyiwu`: yanyiwu/simhash's ``Simhasher::make`` (cppjieba keywords, Jenkins hashes).
- :func:`jiebar`: jiebaR 0.9's ``worker("simhash", topn)``.
- :func:`lucene_min_hash`: Lucene's ``MinHashFilter`` = Elasticsearch's ``min_hash`` filter.
- :func:`gojieba`: the Go recipe (gojieba keywords, FNV-1a 64, Go's signed ``%064b``).
- :func:`jieba_md5`: the Python recipe (jieba Han words, term frequencies, MD5 hex digits).
- datasketch's ``MinHash`` permutations: :mod:`neardup.datasketch`.
"""

from __future__ import annotations

from typing import Optional, Sequence, Union

from . import _neardup

__all__ = ["yanyiwu", "jiebar", "lucene_min_hash", "gojieba", "jieba_md5"]


def yanyiwu(text: str, topn: Optional[int] = None, strip_symbols: bool = False) -> dict:
    """yanyiwu/simhash: ``{"simhash": int, "keywords": [(word, weight)]}``; ``topn=None`` is
    upstream's default ``max(5, min(200, bytes / 120))``."""
    return _neardup.yanyiwu_simhash(text, topn, "yanyiwu", strip_symbols)


def jiebar(text: str, topn: Optional[int] = None, strip_symbols: bool = False) -> dict:
    """jiebaR 0.9's ``worker("simhash", topn)``, as :func:`yanyiwu`."""
    return _neardup.yanyiwu_simhash(text, topn, "jiebar", strip_symbols)


def lucene_min_hash(
    text: Union[str, Sequence[str]],
    hash_count: int = 1,
    bucket_count: int = 512,
    hash_set_size: int = 1,
    with_rotation: bool = True,
    shingle_size: int = 1,
) -> list[bytes]:
    """Lucene's ``MinHashFilter`` behind the whitespace tokenizer (``text`` a str) or over the
    given tokens (a list of str): the output tokens, as the UTF-8 bytes Elasticsearch indexes."""
    return _neardup.lucene_min_hash(
        text, hash_count, bucket_count, hash_set_size, with_rotation, shingle_size
    )


def gojieba(text: str, topn: int) -> dict:
    """The gojieba + FNV recipe: ``{"bits": 64-character str, "simhash": int, "keywords":
    [(word, weight)]}``."""
    return _neardup.gojieba_simhash(text, topn)


def jieba_md5(text: str) -> dict:
    """The Python jieba + MD5 recipe: ``{"bits": 32-character str, "simhash": int, "words":
    [(word, weight)]}``; ``ValueError`` when the text has no word of Han characters."""
    return _neardup.jieba_md5_simhash(text)
