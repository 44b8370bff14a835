"""``python -m torchlens``: the ``torchlens`` command line (see :mod:`torchlens.cli`)."""

import sys

from torchlens.cli import main

sys.exit(main())
