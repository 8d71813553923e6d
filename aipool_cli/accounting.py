"""`aipool` commands of the accounting domain (HTTP only)."""

COMMANDS: tuple = ()
