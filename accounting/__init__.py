"""Allocated vs used accelerator-hours over any window; budget burn-down."""
