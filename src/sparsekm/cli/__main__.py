"""``python -m sparsekm.cli``: the ``sparsekm`` command."""

import sys

from . import main

sys.exit(main())
