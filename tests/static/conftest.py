"""The static-prediction tests reuse the stand-in models of ``tests/keys``."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "keys"))
