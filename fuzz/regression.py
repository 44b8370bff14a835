"""A failing model as a regression file for ``tests/regressions/`` (torch-free).

The file is the generated model's source followed by what the oracle expects of its trace,
as literals, so the test that runs it (``tests/regressions/test_regressions.py``) needs
neither the spec nor the oracle: the expectation is reviewed once, when the file is kept.
"""

from __future__ import annotations

from typing import Iterable, Optional

from .oracle import Expected


def regression_source(source: str, expected: Expected, inputs: int, found: Iterable[str],
                      xfail: Optional[str] = None) -> str:
    """``source`` with the expectation appended, ready to save as ``tests/regressions/case_*.py``.

    ``found`` are the disagreement messages (kept as a comment); ``xfail`` is the reason the
    test is expected to fail (a capture bug not fixed yet), ``None`` once it passes.
    """
    lines = [source.rstrip("\n"), "", "",
             "# --- regression: what the oracle (fuzz/oracle.py) expects of tl.trace ------------------",
             "# Found by the fuzzer:"]
    for message in found:
        lines += ["#   " + line for line in str(message).splitlines()]
    lines.append("#: (label, func, passes, scope, params) of every compute layer, in order of first execution.")
    lines.append("EXPECTED_LAYERS = [")
    lines += [f"    {(l.label, l.func, l.passes, l.module, l.params)!r}," for l in expected.layers]
    lines += ["]", "#: Module address -> number of calls.", f"EXPECTED_CALLS = {expected.calls!r}",
              "#: How many 2x4 inputs forward takes.", f"INPUTS = {inputs}",
              "#: Why the capture is expected to fail this case (None: it must pass).", f"XFAIL = {xfail!r}", ""]
    return "\n".join(lines)
