"""`aipool` commands of the simulation domain (HTTP only)."""

COMMANDS: tuple = ()
