"""``python -m dspsim``: the same as the ``dspsim`` command."""
import sys

from dspsim.cli import main

sys.exit(main())
