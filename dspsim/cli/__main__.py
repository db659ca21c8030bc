"""``python -m dspsim.cli``: the same as the ``dspsim`` command."""
import sys

from dspsim.cli.main import main

sys.exit(main())
