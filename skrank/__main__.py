"""Entry point of ``python -m skrank`` (see :mod:`skrank._cli`)."""

import sys

from ._cli import main

if __name__ == "__main__":
    sys.exit(main())
