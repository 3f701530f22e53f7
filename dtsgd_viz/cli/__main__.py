"""``python -m dtsgd_viz.cli``: the ``dtsgd-viz`` command."""

import sys

from .main import main

sys.exit(main())
