"""``python -m auwgent``: the same as the ``auwgent`` command."""

import sys

from auwgent.cli import main

sys.exit(main())
