"""`aipool` commands of the notifications domain (HTTP only)."""

COMMANDS: tuple = ()
