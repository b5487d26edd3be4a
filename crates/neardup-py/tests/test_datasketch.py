"""neardup.datasketch against the real datasketch 2.0.0 (and rensa) installed from PyPI."""

import pickle
import random

import numpy as np
import pytest

import neardup.datasketch as nd

# The oracles are pinned in tests/requirements.txt: missing, the suite fails (never skips).
import datasketch as ds  # noqa: E402


def tokens(n: int, seed: int = 0) -> list[bytes]:
    rng = random.Random(seed)
    return [("w%d" % rng.randrange(10 * n)).encode() for _ in range(n)]


@pytest.mark.parametrize("scheme", ["affine32", "legacy", "affine64"])
@pytest.mark.parametrize("num_perm,seed", [(128, 1), (64, 42), (256, 7)])
def test_hashvalues_are_bit_identical(scheme, num_perm, seed):
    toks = tokens(300, seed)
    a = ds.MinHash(num_perm=num_perm, seed=seed, scheme=scheme)
    b = nd.MinHash(num_perm=num_perm, seed=seed, scheme=scheme)
    a.update_batch(toks)
    b.update_batch(toks)
    assert b.hashvalues.dtype == a.hashvalues.dtype
    assert np.array_equal(a.hashvalues, b.hashvalues)
    assert np.array_equal(np.asarray(a.permutations), np.asarray(b.permutations))
    c = nd.MinHash(num_perm=num_perm, seed=seed, scheme=scheme)
    for t in toks:
        c.update(t)
    assert np.array_equal(c.hashvalues, a.hashvalues)
    assert b.count() == pytest.approx(a.count())
    # bulk, on every core, equals one at a time.
    docs = [tokens(50, s) for s in range(20)]
    bulk = nd.MinHash.bulk(docs, num_perm=num_perm, seed=seed, scheme=scheme)
    for d, m in zip(docs, bulk):
        r = ds.MinHash(num_perm=num_perm, seed=seed, scheme=scheme)
        r.update_batch(d)
        assert np.array_equal(m.hashvalues, r.hashvalues)


def test_default_scheme_is_affine32_and_methods_behave_alike():
    a, b = nd.MinHash(), ds.MinHash()
    assert a.scheme == b.scheme == "affine32" and a.seed == b.seed == 1 and len(a) == len(b)
    assert a.is_empty() and b.is_empty()
    x, y = tokens(100, 1), tokens(100, 2) + tokens(100, 1)[:60]
    m1, m2 = nd.MinHash(), nd.MinHash()
    r1, r2 = ds.MinHash(), ds.MinHash()
    for m, r, t in ((m1, r1, x), (m2, r2, y)):
        m.update_batch(t)
        r.update_batch(t)
    assert m1.jaccard(m2) == r1.jaccard(r2)
    u, ru = nd.MinHash.union(m1, m2), ds.MinHash.union(r1, r2)
    assert np.array_equal(u.hashvalues, ru.hashvalues)
    c = m1.copy()
    c.merge(m2)
    assert np.array_equal(c.hashvalues, u.hashvalues) and c == u and c != m1
    assert np.array_equal(m1.digest(), r1.digest())
    c.clear()
    assert c.is_empty()
    assert pickle.loads(pickle.dumps(m1)) == m1


def _hash_32(b) -> int:
    return int.from_bytes(str(b).encode()[:4].ljust(4, b"\0"), "little") ^ len(str(b))


def test_custom_hashfunc_and_non_bytes_input():
    values = [1, 2, 3, "x", (4, 5)]
    a = ds.MinHash(hashfunc=_hash_32)
    b = nd.MinHash(hashfunc=_hash_32)
    a.update_batch(values)
    b.update_batch(values)
    assert np.array_equal(a.hashvalues, b.hashvalues)
    # The default SHA-1 hash accepts anything with the buffer protocol, as hashlib does.
    arr = np.arange(20, dtype=np.int64)
    a, b = ds.MinHash(), nd.MinHash()
    a.update_batch(arr)
    b.update_batch(arr)
    assert np.array_equal(a.hashvalues, b.hashvalues)
    with pytest.raises(ValueError, match="out of range"):
        nd.MinHash(hashfunc=lambda x: 1 << 40).update(b"x")


def test_errors_match_datasketch():
    for kwargs in ({"scheme": "bad"}, {"num_perm": 0}, {"hashfunc": 3}):
        with pytest.raises(ValueError):
            ds.MinHash(**kwargs)
        with pytest.raises(ValueError):
            nd.MinHash(**kwargs)
    with pytest.raises(ValueError, match="scheme must be specified"):
        nd.MinHash(hashvalues=[1, 2, 3])
    a, b = nd.MinHash(seed=1), nd.MinHash(seed=2)
    with pytest.raises(ValueError, match="different seeds"):
        a.jaccard(b)
    with pytest.raises(ValueError, match="different permutation schemes"):
        a.jaccard(nd.MinHash(scheme="legacy"))
    with pytest.raises(TypeError):
        nd.MinHash().update("a str, not bytes")
    with pytest.raises(TypeError, match="Cannot update a LeanMinHash"):
        nd.LeanMinHash(nd.MinHash()).update(b"x")
    with pytest.raises(RuntimeError):
        nd.MinHash(gpu_mode="always").update_batch([b"x"])  # no GPU: as datasketch without one
    with pytest.raises(ValueError, match="storage_config"):
        nd.MinHashLSH(storage_config={"type": "redis", "redis": {}})


def test_lean_minhash_serialization_is_interchangeable():
    for scheme in ("affine32", "legacy", "affine64"):
        m = nd.MinHash(scheme=scheme)
        m.update_batch(tokens(50))
        lean = nd.LeanMinHash(m)
        buf = bytearray(lean.bytesize())
        lean.serialize(buf)
        theirs = ds.LeanMinHash.deserialize(buf)
        assert np.array_equal(theirs.hashvalues, lean.hashvalues) and theirs.scheme == scheme
        buf2 = bytearray(theirs.bytesize())
        theirs.serialize(buf2)
        assert buf2 == buf
        back = nd.LeanMinHash.deserialize(buf2)
        assert back == lean and hash(back) == hash(lean)
        assert pickle.loads(pickle.dumps(lean)) == lean


@pytest.mark.parametrize("threshold", [0.3, 0.5, 0.7, 0.8, 0.9, 0.95])
@pytest.mark.parametrize("num_perm", [32, 128, 256])
def test_lsh_chooses_the_same_bands_and_rows(threshold, num_perm):
    for weights in ((0.5, 0.5), (0.2, 0.8)):
        try:
            a = ds.MinHashLSH(threshold=threshold, num_perm=num_perm, weights=weights)
        except ValueError as e:
            with pytest.raises(ValueError, match="too small"):
                nd.MinHashLSH(threshold=threshold, num_perm=num_perm, weights=weights)
            assert "too small" in str(e)
            continue
        b = nd.MinHashLSH(threshold=threshold, num_perm=num_perm, weights=weights)
        assert (a.b, a.r) == (b.b, b.r)


def test_lsh_queries_return_the_same_keys():
    rng = random.Random(5)
    base = [tokens(80, s) for s in range(60)]
    sets = []
    for i in range(200):
        src = base[i % 60]
        sets.append(src[: rng.randint(40, 80)] + tokens(rng.randint(0, 30), 1000 + i))
    for scheme in ("affine32", "legacy"):
        ours = nd.MinHashLSH(threshold=0.5, num_perm=128)
        theirs = ds.MinHashLSH(threshold=0.5, num_perm=128)
        mine = nd.MinHash.bulk(sets, num_perm=128, scheme=scheme)
        ref = []
        for s in sets:
            m = ds.MinHash(num_perm=128, scheme=scheme)
            m.update_batch(s)
            ref.append(m)
        with theirs.insertion_session() as session:
            for i, m in enumerate(ref):
                session.insert(f"k{i}", m)
        ours.insert_many([(f"k{i}", m) for i, m in enumerate(mine[:100])])
        with ours.insertion_session() as session:
            for i, m in enumerate(mine[100:], start=100):
                session.insert(f"k{i}", m)
        for m, r in zip(mine, ref):
            assert sorted(ours.query(m)) == sorted(theirs.query(r))
        assert [sorted(c.values()) for c in ours.get_counts()] == [
            sorted(c.values()) for c in theirs.get_counts()
        ]
        assert set(ours.get_counts()[0]) == set(theirs.get_counts()[0]), "the same band keys"
        assert ("k3" in ours) and ("nope" not in ours) and not ours.is_empty()
        ours.remove("k3")
        theirs.remove("k3")
        with pytest.raises(ValueError):
            ours.remove("k3")
        assert sorted(ours.query(mine[3])) == sorted(theirs.query(ref[3]))
        with pytest.raises(ValueError, match="already exists"):
            ours.insert("k4", mine[4])
        with ours.deletion_session() as session:
            session.remove("k5")
        assert "k5" not in ours


def test_rensa_finds_the_same_planted_near_duplicates():
    import rensa

    rng = random.Random(9)
    base = [[f"w{rng.randrange(100000)}" for _ in range(100)] for _ in range(100)]
    sets = base + [b[:95] + [f"x{i}"] * 1 for i, b in enumerate(base)]
    ours = nd.MinHashLSH(threshold=0.8, num_perm=128)
    mh = nd.MinHash.bulk([[t.encode() for t in s] for s in sets], num_perm=128)
    ours.insert_many(list(range(len(sets))), mh)
    r_mh = [rensa.RMinHash(128, 42) for _ in sets]
    for m, s in zip(r_mh, sets):
        m.update(s)
    lsh = rensa.RMinHashLSH(0.8, 128, 16)  # rensa needs bands dividing num_perm
    for i, m in enumerate(r_mh):
        lsh.insert(i, m)
    for i in range(100):
        assert 100 + i in ours.query(mh[i]), i
        assert 100 + i in lsh.query(r_mh[i]), i


# --- MinHashLSH sessions and storage, side by side with datasketch (issue 22) ---------------
#
# Each script runs the same calls on a datasketch index and on ours, logging every answer (or
# the type of the exception raised); the logs must be equal. With dict storage, datasketch's
# sessions write straight into the index: an insert is visible at once and never lost, whether
# or not the session is closed.


def _lsh_minhashes(lib) -> list:
    """Six MinHashes, two groups of near-duplicates and two loners, bit-identical in both."""
    base = [tokens(60, 100 + s) for s in range(3)]
    sets = [base[0], base[0][:55], base[1], base[1][5:], base[2], tokens(60, 999)]
    out = []
    for s in sets:
        m = lib.MinHash(num_perm=64)
        m.update_batch(s)
        out.append(m)
    return out


KEYS = ["a", "b", "c", 4, ("e", 5), "f", "missing"]


def _observe(lsh, mhs) -> dict:
    return {
        "query": [sorted(map(repr, lsh.query(m))) for m in mhs],
        "in": [k in lsh for k in KEYS],
        "keys": list(lsh.keys),
        "len": len(lsh.keys),
        "bands": [list(lsh.keys[k]) for k in KEYS],
        "get": [list(lsh.keys.get(k)) for k in KEYS],
        "counts": lsh.get_counts(),
        "subset": lsh.get_subset_counts(*KEYS, "a"),
        "empty": lsh.is_empty(),
    }


def _attempt(log: list, f, *args, **kwargs):
    try:
        r = f(*args, **kwargs)
        log.append(("ok", r if r is None or isinstance(r, (bool, int)) else repr(type(r))))
        return r
    except Exception as e:  # noqa: BLE001 - the type is what is compared
        log.append(("raise", type(e).__name__))
        return None


def _script_never_closed(lib, lsh, mhs, log):
    s = lsh.insertion_session()
    _attempt(log, s.insert, "a", mhs[0])
    log.append(_observe(lsh, mhs))
    _attempt(log, s.insert, "b", mhs[1])
    _attempt(log, s.insert, "a", mhs[2])  # already there: raises at once
    _attempt(log, s.insert, "c", mhs[2], check_duplication=False)
    log.append(_observe(lsh, mhs))
    del s  # never closed, never exited


def _script_with_block(lib, lsh, mhs, log):
    with lsh.insertion_session(buffer_size=2) as s:
        for k, m in zip(KEYS, mhs):
            _attempt(log, s.insert, k, m)
            log.append(_observe(lsh, mhs))
        _attempt(log, s.insert, "a", mhs[0])
        _attempt(log, s.insert, "z", lib.MinHash(num_perm=32))  # wrong length: raises at once
        _attempt(log, s.insert, "y", lib.MinHash(num_perm=64, scheme="legacy"))  # other scheme
        _attempt(log, lsh.remove, "b")  # a removal inside the session
        log.append(_observe(lsh, mhs))
    log.append(_observe(lsh, mhs))


def _script_exception_inside(lib, lsh, mhs, log):
    try:
        with lsh.insertion_session() as s:
            s.insert("a", mhs[0])
            s.insert("b", mhs[1])
            raise KeyboardInterrupt  # anything: what was inserted stays
    except KeyboardInterrupt:
        pass
    log.append(_observe(lsh, mhs))
    s = lsh.insertion_session(buffer_size=1)
    _attempt(log, s.insert, "c", mhs[2])
    _attempt(log, s.close)
    _attempt(log, s.insert, "f", mhs[5])  # a closed session still inserts, as datasketch's
    log.append(_observe(lsh, mhs))


def _script_duplicates_unchecked(lib, lsh, mhs, log):
    with lsh.insertion_session() as s:
        s.insert("a", mhs[0])
        s.insert("a", mhs[2], check_duplication=False)  # the key's band keys are extended
    log.append(_observe(lsh, mhs))
    lsh.insert("a", mhs[4], check_duplication=False)
    log.append(_observe(lsh, mhs))
    _attempt(log, lsh.remove, "a")  # removes the first insert's buckets only, as datasketch
    log.append(_observe(lsh, mhs))


def _script_deletion(lib, lsh, mhs, log):
    for k, m in zip(KEYS, mhs):
        lsh.insert(k, m)
    d = lsh.deletion_session(buffer_size=1)
    _attempt(log, d.remove, "a")
    log.append(_observe(lsh, mhs))
    _attempt(log, d.remove, "a")  # already gone: raises at once
    _attempt(log, d.remove, "missing")
    with lsh.deletion_session() as d2:
        _attempt(log, d2.remove, "b")
        log.append(_observe(lsh, mhs))
        _attempt(log, lsh.insert, "b", mhs[1])  # an insert inside a deletion session
        log.append(_observe(lsh, mhs))
    log.append(_observe(lsh, mhs))
    del d  # never closed


def _script_query_buffer_and_merge(lib, lsh, mhs, log):
    lsh.insert("a", mhs[0])
    lsh.add_to_query_buffer(mhs[1])
    lsh.insert("b", mhs[1])  # after the query was buffered
    log.append(sorted(map(repr, lsh.collect_query_buffer())))
    log.append(sorted(map(repr, lsh.collect_query_buffer())))
    other = lib.MinHashLSH(threshold=0.5, num_perm=64, prepickle=lsh.prepickle)
    with other.insertion_session() as s:
        s.insert("a", mhs[2])
        s.insert("c", mhs[3])
    lsh.merge(other)  # an overlapping key: its band keys are extended
    log.append(_observe(lsh, mhs))
    _attempt(log, lsh.merge, other, check_overlap=True)
    log.append(sorted(map(repr, lsh._query_b(mhs[0], 2))))


@pytest.mark.parametrize("prepickle", [False, True])
@pytest.mark.parametrize(
    "script",
    [
        _script_never_closed,
        _script_with_block,
        _script_exception_inside,
        _script_duplicates_unchecked,
        _script_deletion,
        _script_query_buffer_and_merge,
    ],
)
def test_lsh_sessions_and_storage_answer_as_datasketch(script, prepickle):
    logs = []
    for lib in (ds, nd):
        lsh = lib.MinHashLSH(threshold=0.5, num_perm=64, prepickle=prepickle)
        log: list = []
        script(lib, lsh, _lsh_minhashes(lib), log)
        logs.append(log)
    theirs, ours = logs
    assert len(ours) == len(theirs)
    for i, (o, t) in enumerate(zip(ours, theirs)):
        assert o == t, f"step {i}"


def test_insertion_session_insert_is_visible_before_close():
    """The defect of issue 22, plainly: a session that is never closed loses nothing."""
    lsh = nd.MinHashLSH(threshold=0.5, num_perm=64)
    m = _lsh_minhashes(nd)[0]
    session = lsh.insertion_session()
    session.insert("a", m)
    assert "a" in lsh and lsh.query(m) == ["a"] and list(lsh.keys) == ["a"]
    del session
    assert "a" in lsh


# --- MinHash arguments, side by side with datasketch (issue 22) ------------------------------
#
# For each set of arguments: both raise the same exception type, or both accept and give the
# same attributes, permutations and hash values (after update_batch and update), bit for bit.
# Seeds numpy's RandomState takes but neardup's generator does not (None, arrays, sequences)
# are drawn by numpy as datasketch draws them; None seeds from the OS, so only shapes compare.

RANDOM_SEED = object()

MINHASH_ARGS = [
    {"seed": None},
    {"seed": 1.5},
    {"seed": 2.0},
    {"seed": -1},
    {"seed": 2**32},
    {"seed": 2**32 - 1},
    {"seed": 2**64},
    {"seed": np.int64(3)},
    {"seed": np.uint32(7)},
    {"seed": np.int8(-2)},
    {"seed": True},
    {"seed": "1"},
    {"seed": [1, 2]},
    {"seed": (3, 4), "scheme": "legacy"},
    {"seed": np.array([5, 6], dtype=np.uint32), "scheme": "affine64"},
    {"seed": [2**32]},
    {"num_perm": 0},
    {"num_perm": 1},
    {"num_perm": -3},
    {"num_perm": 1024},
    {"num_perm": 1025},
    {"num_perm": 1025, "scheme": "legacy"},
    {"num_perm": 1025, "scheme": "affine64"},
    {"num_perm": 2000, "seed": 9},
    {"num_perm": 2.0},
    {"num_perm": 2.5},
    {"num_perm": 4.0, "scheme": "legacy"},
    {"num_perm": np.int32(4)},
    {"num_perm": np.uint64(5), "scheme": "legacy"},
    {"num_perm": True},
    {"num_perm": None},
    {"num_perm": "4"},
    {"num_perm": 2**32 + 1},
    {"hashfunc": 3},
    {"hashfunc": False},
    {"hashfunc": "sha1"},
    {"gpu_mode": "always"},
    {"gpu_mode": "detect"},
    {"gpu_mode": "bogus"},
    {"gpu_mode": None},
    {"scheme": "AFFINE32"},
    {"scheme": 1},
    {"scheme": None},
    {"hashvalues": [1, 2, 3], "scheme": "legacy"},
    {"hashvalues": [2**40], "scheme": "legacy"},
    {"hashvalues": [-1], "scheme": "legacy"},
    {"hashvalues": [-1], "scheme": "affine32"},
    {"hashvalues": [2**32], "scheme": "affine32"},
    {"hashvalues": [], "scheme": "affine32"},
    {"hashvalues": np.array([1.5, 2.5]), "scheme": "affine32"},
    {"hashvalues": np.array([2**40], dtype=np.uint64), "scheme": "affine32"},
    {"hashvalues": np.array([2**40], dtype=np.uint64), "scheme": "legacy"},
    {"hashvalues": [7, 8], "scheme": "affine64", "seed": None},
    {"hashvalues": [1, 2], "permutations": ([1, 3, 5], [0, 0, 0]), "scheme": "affine32"},
    {"permutations": ([2, 3], [0, 0]), "scheme": "affine32", "num_perm": 2},
    {"permutations": ([1, 3], [0, 1]), "scheme": "affine64", "num_perm": 2},
    {"permutations": np.array([[1, 3], [5, 7]], dtype=np.uint64), "scheme": "legacy", "num_perm": 2},
]


def _minhash_outcome(lib, kwargs: dict) -> list:
    random_seed = "seed" in kwargs and kwargs["seed"] is None and "permutations" not in kwargs
    out: list = []
    try:
        m = lib.MinHash(**kwargs)
    except Exception as e:  # noqa: BLE001 - the type is what is compared
        return [("init raises", type(e).__name__)]
    out.append(("seed", repr(m.seed), "num_perm", repr(m.num_perm), "scheme", m.scheme))
    out.append(("gpu_mode", m._gpu_mode, "hashfunc", getattr(m.hashfunc, "__name__", None)))
    perms = np.asarray(m.permutations)
    out.append(("dtype", m.hashvalues.dtype.str, perms.dtype.str, perms.shape, len(m)))
    if not random_seed:
        out.append(("values", m.hashvalues.tolist(), perms.tolist()))
    for step in (lambda: m.update_batch(tokens(40)), lambda: m.update(b"one more")):
        before = m.hashvalues
        try:
            step()
        except Exception as e:  # noqa: BLE001
            out.append(("update raises", type(e).__name__))
            continue
        out.append(("replaced", before is not m.hashvalues, m.hashvalues.dtype.str))
        if not random_seed:
            out.append(("values", m.hashvalues.tolist()))
    try:
        out.append(("copy", m.copy() == m, m.copy()._gpu_mode))
    except Exception as e:  # noqa: BLE001
        out.append(("copy raises", type(e).__name__))
    return out


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.parametrize("kwargs", MINHASH_ARGS, ids=repr)
def test_minhash_arguments_answer_as_datasketch(kwargs):
    assert _minhash_outcome(nd, kwargs) == _minhash_outcome(ds, kwargs)


ODD_HASHES = [1.5, -1, 0, np.int64(5), np.uint64(5), np.uint32(9), 2**33, 2**64, "7", None, True,
              [1, 2], np.array([3, 4], dtype=np.uint64)]


def _hash_outcome(lib, scheme: str, hv, how: str) -> tuple:
    m = lib.MinHash(num_perm=8, scheme=scheme, hashfunc=lambda _x: hv)
    try:
        if how == "update":
            m.update(b"x")
        elif how == "update_batch":
            m.update_batch([b"x", b"y"])
        else:
            m.update_batch([b"x"])
            m.update(b"y")
    except Exception as e:  # noqa: BLE001 - the type is what is compared
        return ("raises", type(e).__name__, m.hashvalues.tolist())
    return ("ok", m.hashvalues.dtype.str, m.hashvalues.tolist())


@pytest.mark.parametrize("how", ["update", "update_batch", "both"])
@pytest.mark.parametrize("scheme", ["affine32", "legacy", "affine64"])
@pytest.mark.parametrize("hv", ODD_HASHES, ids=repr)
def test_hash_function_outputs_answer_as_datasketch(hv, scheme, how):
    assert _hash_outcome(nd, scheme, hv, how) == _hash_outcome(ds, scheme, hv, how)


def _gpu_outcome(lib, gpu_mode: str) -> list:
    out: list = []
    for call in (
        lambda: lib.MinHash(num_perm=4, gpu_mode=gpu_mode).update(b"x"),
        lambda: lib.MinHash(num_perm=4, gpu_mode=gpu_mode).update_batch([]),
        lambda: lib.MinHash(num_perm=4, gpu_mode=gpu_mode).update_batch([b"x"]),
        lambda: lib.MinHash(num_perm=4, gpu_mode=gpu_mode).update_batch(["not bytes"]),
        lambda: lib.MinHash.bulk([[b"a"], [b"b"]], num_perm=4, gpu_mode=gpu_mode),
        lambda: lib.MinHash.bulk([[], []], num_perm=4, gpu_mode=gpu_mode),
        lambda: lib.MinHash.union(
            lib.MinHash(num_perm=4, gpu_mode=gpu_mode), lib.MinHash(num_perm=4)
        )._gpu_mode,
    ):
        try:
            r = call()
            out.append(("ok", r if isinstance(r, str) else None))
        except Exception as e:  # noqa: BLE001
            out.append(("raises", type(e).__name__))
    return out


@pytest.mark.parametrize("gpu_mode", ["disable", "detect", "always", "other"])
def test_gpu_mode_answers_as_datasketch_without_a_gpu(gpu_mode):
    assert _gpu_outcome(nd, gpu_mode) == _gpu_outcome(ds, gpu_mode)


def _fake_hash_func(data):
    """datasketch's test/utils.py `fake_hash_func`: the input unchanged."""
    return data


def test_union_keeps_gpu_mode_and_hashfunc():
    """datasketch's test/test_minhash.py::TestMinHash::test_union."""
    for lib in (ds, nd):
        m1 = lib.MinHash(4, 1, gpu_mode="detect", hashfunc=_fake_hash_func)
        m2 = lib.MinHash(4, 1, gpu_mode="detect", hashfunc=_fake_hash_func)
        m2.update(12)
        u = lib.MinHash.union(m1, m2)
        assert u.jaccard(m2) == 1.0
        assert u.hashfunc is _fake_hash_func
        assert u._gpu_mode == "detect", lib.__name__
        u.update(13)


@pytest.mark.parametrize("b", [2, 255, 256, 257, 300, 1024])
def test_lsh_unpacking_above_1024_permutations(b):
    """datasketch's test/test_lsh.py::TestMinHashLSH::test_unpacking (b in 2..=1024, so
    num_perm = 4b goes up to 4,096), for a sample of b across 1,024 permutations; the band
    keys equal datasketch's."""
    got = []
    for lib in (ds, nd):
        lsh = lib.MinHashLSH(num_perm=b * 4, params=(b, 4))
        m = lib.MinHash(num_perm=b * 4)
        m.update(b"abcdefg")
        m.update(b"1234567")
        lsh.insert("m", m)
        sizes = [len(H) for ht in lsh.hashtables for H in ht]
        assert all(sizes[0] == s for s in sizes)
        got.append([sorted(ht) for ht in lsh.hashtables])
    assert got[0] == got[1]


@pytest.mark.parametrize("scheme", ["affine32", "legacy", "affine64"])
def test_bulk_above_1024_permutations_is_bit_identical(scheme):
    docs = [tokens(30, s) for s in range(5)]
    ours = nd.MinHash.bulk(docs, num_perm=1500, seed=3, scheme=scheme)
    theirs = ds.MinHash.bulk(docs, num_perm=1500, seed=3, scheme=scheme)
    for o, t in zip(ours, theirs):
        assert np.array_equal(o.hashvalues, t.hashvalues) and o.hashvalues.dtype == t.hashvalues.dtype
    lo = nd.LeanMinHash(ours[0])
    buf = bytearray(lo.bytesize())
    lo.serialize(buf)
    assert ds.LeanMinHash.deserialize(buf) == ds.LeanMinHash(theirs[0])


def _sequence_outcome(lib, scheme: str, values: list, permutations) -> tuple:
    it = iter(values)
    kwargs = {"scheme": scheme, "hashfunc": lambda _x: next(it)}
    kwargs.update({"num_perm": 6} if permutations is None else {"permutations": permutations})
    try:
        m = lib.MinHash(**kwargs)
        for _ in values:
            m.update(b"x")
    except Exception as e:  # noqa: BLE001 - the type is what is compared
        return ("raises", type(e).__name__)
    return ("ok", m.hashvalues.dtype.str, m.hashvalues.tolist())


@pytest.mark.parametrize("scheme", ["affine32", "legacy", "affine64"])
@pytest.mark.parametrize("permutations", [None, ([1, 3], [5, 7])], ids=["drawn", "given"])
@pytest.mark.parametrize(
    "values",
    [[np.array([4]), 5, 7], [[1, 2], 3], [np.uint32(3), (3,), 3.0], [True, np.array([4]), 2**32 - 1]],
    ids=repr,
)
def test_hash_values_numpy_broadcasts_keep_answering_as_datasketch(values, permutations, scheme):
    """A hash value that converts to an array makes numpy broadcast hashvalues to 2-D in
    datasketch; later updates go on in numpy there, and so here."""
    assert _sequence_outcome(nd, scheme, values, permutations) == _sequence_outcome(
        ds, scheme, values, permutations
    )


@pytest.mark.parametrize(
    "name", sorted(set(ds.__all__) - set(nd.__all__))
)
def test_a_datasketch_name_the_drop_in_lacks_says_where_it_is(name):
    """`from neardup.datasketch import MinHashLSHForest` (and every other public datasketch name
    the drop-in lacks) was a bare ImportError: it says what the drop-in has and where the rest
    is."""
    with pytest.raises(ImportError) as e:
        exec(f"from neardup.datasketch import {name}", {})
    said = str(e.value)
    assert f"not {name}" in said and "pip install datasketch" in said, said
    assert f"from datasketch import {name}" in said and "MinHash, LeanMinHash, MinHashLSH" in said
    for provided in nd.__all__:
        assert provided in said


def test_other_names_are_attribute_errors_and_every_provided_name_imports():
    with pytest.raises(AttributeError, match="NoSuchSketch"):
        nd.NoSuchSketch  # noqa: B018
    for name in nd.__all__:
        exec(f"from neardup.datasketch import {name}", {})
        # The package's modules are its own business: pickles and reprs name the public module.
        assert getattr(nd, name).__module__ == "neardup.datasketch"
