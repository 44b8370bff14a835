"""``torchlens lint``: flag grouping a user may not expect, from source alone (torch-free).

>>> from torchlens.analysis.lint import lint_source
>>> [f.code for f in lint_source(open("model.py").read(), "model.py")]
"""

from .config import LintConfig, load_config
from .findings import Finding, as_json, as_text
from .rules import RULES, Rule
from .runner import lint_paths, lint_source

__all__ = ["lint_source", "lint_paths", "LintConfig", "load_config", "Finding", "as_text", "as_json", "RULES", "Rule"]
