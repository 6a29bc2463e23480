"""``python -m rheotheory.cli``: the ``rheo`` command."""

import sys

from . import main

sys.exit(main())
