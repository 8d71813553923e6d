"""The inference gateway: an async HTTP server in front of the inference replicas (/serve/<tenant>/<service>/…)."""
