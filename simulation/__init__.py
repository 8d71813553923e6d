"""Replays workloads through the pure scheduler core on a virtual clock; policies side by side."""
