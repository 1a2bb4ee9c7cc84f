"""The entry point that PyInstaller freezes into the standalone compiler (scripts/build.sh)."""

import sys

from auwgent.cli import main

if __name__ == "__main__":
    sys.exit(main())
