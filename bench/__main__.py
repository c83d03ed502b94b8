"""``python -m parity.bench``: see :mod:`parity.bench.cli`."""

import sys

from .cli import main

sys.exit(main())
