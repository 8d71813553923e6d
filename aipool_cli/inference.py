"""`aipool` commands of the inference domain (HTTP only)."""

COMMANDS: tuple = ()
