"""``python -m bench SUITE [options]``: print the numbers for the closing notes. ``python -m bench`` lists suites.

Each suite is a module ``bench/<suite>.py`` with ``main(argv)``; ``make bench`` runs every suite with defaults.
"""

import importlib
import pkgutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def suites() -> list[str]:
    return sorted(m.name for m in pkgutil.iter_modules([str(HERE)]) if not m.name.startswith("_") and m.name != "stack")


def main() -> None:
    sys.path.insert(0, str(HERE.parent))
    args = sys.argv[1:]
    if not args or args[0] in ("-h", "--help"):
        print(__doc__)
        print("suites:", ", ".join(suites()))
        return
    if args[0] == "all":
        for name in suites():
            importlib.import_module(f"bench.{name}").main([])
        return
    if args[0] not in suites():
        sys.exit(f"unknown suite {args[0]!r}; suites: {', '.join(suites())}")
    importlib.import_module(f"bench.{args[0]}").main(args[1:])


if __name__ == "__main__":
    main()
