"""``python -m flows.cli``: the ``swedeck`` console script."""

import sys

from flows.cli.swedeck import main

if __name__ == "__main__":
    sys.exit(main())
