"""``python -m privstats``: the same as the ``privstats`` command."""

import sys

from privstats.cli import main

sys.exit(main())
