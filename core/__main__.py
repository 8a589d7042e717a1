import sys

from core.cli import main

if __name__ == "__main__":  # also imported by doctest collection, which must not run the CLI
    sys.exit(main())
