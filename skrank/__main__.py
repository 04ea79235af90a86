"""Entry point of ``python -m skrank`` (see :mod:`skrank._compare`)."""

import sys

from ._compare import main

if __name__ == "__main__":
    sys.exit(main())
