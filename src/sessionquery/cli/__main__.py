"""``python -m sessionquery.cli``: the same as the ``sessionquery`` console script."""

import sys

from sessionquery.cli import main

sys.exit(main())
