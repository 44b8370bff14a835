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

