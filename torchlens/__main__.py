"""``python -m torchlens``: the ``torchlens`` command line (see :mod:`analysis.cli`)."""

import sys

from analysis.cli import main

sys.exit(main())
