"""``aipool``: the command line of the aipool portal. It talks HTTP to the REST API only (no Django here)."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("aipool")
except PackageNotFoundError:  # running from a checkout that was never installed
    __version__ = "0.1.0"
