"""``python -m projector.server [ARGS]``: the same as ``project-skill serve [ARGS]``."""

import sys

from .cli import main

sys.exit(main("serve", sys.argv[1:]))
