"""``torchlens lint``: flag grouping a user may not expect, from source alone (torch-free).

>>> from torchlens.analysis.lint import lint_source
>>> [f.code for f in lint_source(open("model.py").read(), "model.py")]
"""

from .config import LintConfig, load_config
from .findings import INTERNAL_ERROR, NOT_LINTED, UNREADABLE, Finding, as_json, as_text
from .rules import RULES, Rule
from .files import Skipped
from .runner import LintReport, lint_paths, lint_source

__all__ = ["lint_source", "lint_paths", "LintReport", "Skipped", "LintConfig", "load_config", "Finding", "UNREADABLE",
           "INTERNAL_ERROR", "NOT_LINTED", "as_text", "as_json", "RULES", "Rule"]
