"""``python -m privstats.cli``: the ``privstats`` command."""

import sys

from privstats.cli import main

sys.exit(main())
