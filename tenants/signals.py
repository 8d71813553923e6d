"""Signals other apps listen to, so tenants imports none of them."""

from django.dispatch import Signal

# Sent after commit when a tenant, group, membership or limit changed: backends that enforce limits themselves
# (Slurm associations) resync. Keyword `action`: the audit action, e.g. "group.limits".
limits_changed = Signal()
