"""API v1 views of the simulation app (see simulation/)."""

# (prefix, viewset, basename) registered on the v1 router, and extra django paths under /api/v1/.
ROUTES: list = []
PATHS: list = []
