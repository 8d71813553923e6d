"""`aipool` commands of the monitoring domain (HTTP only)."""

COMMANDS: tuple = ()
