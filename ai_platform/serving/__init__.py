"""The built-in model server that runs inside an inference replica job (``python -m ai_platform.serving``).

Standard library HTTP plus numpy (or PyTorch for TorchScript models); nothing of the portal. It loads the model
directory the job was given, serves KServe's v1 protocol and a readiness check, and publishes its URL in a file the
portal reads (see docs/inference.md, "How a replica makes itself known").
"""

# Nothing imported here: ``python -m ai_platform.serving`` imports this package first, and __main__ must set the
# BLAS thread count before numpy is loaded.
