"""Per-code and per-file caches do not grow without bound (torch-free)."""

import gc

from torchlens.analysis.sites import FILES_KEPT, PerCode, PerFile


def test_per_code_cache_forgets_code_that_died():
    cache = PerCode(lambda code: code.co_name)
    namespace: dict = {}
    exec("def made_at_run_time():\n    pass\n", namespace)
    assert cache(namespace["made_at_run_time"].__code__) == "made_at_run_time" and len(cache) == 1
    namespace.clear()
    gc.collect()
    assert len(cache) == 0


def test_per_file_cache_keeps_the_newest_files():
    cache: PerFile = PerFile()
    for k in range(FILES_KEPT + 10):
        cache.remember(f"file{k}.py", k, 1)
    cache.remember("file20.py", "again", 1)
    assert len(cache) == FILES_KEPT and cache.get("file0.py") is None and list(cache)[-1] == "file20.py"



def test_per_class_name_reads_each_answer_once_and_keeps_its_class():
    import weakref

    from torchlens.analysis.caches import per_class_name

    reads: list = []
    answer = per_class_name(lambda cls, name: reads.append((cls, name)) or getattr(cls, name, None))
    made = type("Made", (), {"f": 1})
    assert answer(made, "f") == 1 and answer(made, "f") == 1 and answer(made, "g") is None and answer(int, "f") is None
    assert reads == [(made, "f"), (made, "g"), (int, "f")]
    alive = weakref.ref(made)
    del made
    reads.clear()
    gc.collect()
    assert alive() is not None  # kept: its id is not reused while the entry stands


def test_a_place_from_another_process_is_the_same_key_here():
    """A place keeps its hash (made once); pickled, it is made again, as strings hash by a
    per-process seed: one made in a process of another seed finds the one made here."""
    import os
    import pickle
    import subprocess
    import sys

    from torchlens.analysis.sites import CodeId, Place

    here = Place(CodeId("model.py", "Block.forward", 3, "0123456789abcdef"), 4, 4, 8, 20)
    made = "from torchlens.analysis.sites import CodeId, Place; import pickle, sys; sys.stdout.buffer.write(" \
           "pickle.dumps(Place(CodeId('model.py', 'Block.forward', 3, '0123456789abcdef'), 4, 4, 8, 20)))"
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        there = pickle.loads(subprocess.run([sys.executable, "-c", made], env=env, capture_output=True,
                                            check=True).stdout)
        assert there == here and {here: "found"}.get(there) == "found"
