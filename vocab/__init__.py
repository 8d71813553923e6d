"""Slurm vocabulary shared by every layer: TRES strings, time limits, job states and reason codes. No Django."""
