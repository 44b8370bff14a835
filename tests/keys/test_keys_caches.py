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
