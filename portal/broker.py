"""The embedded default's broker: kombu's SQLAlchemy transport, polling every 0.1 s instead of every second.

At kombu's 1 s the worker takes about one message a second, fewer than the beat schedule sends (reconcile, autoscale,
metrics sampling, inference reconcile …), so under ``make run`` a backlog grew without bound and a cancel waited
minutes. The transport hands every transport option to ``create_engine``, so the interval cannot travel as an option:
a subclass carries it, registered under the ``sqla`` alias that ``sqla+sqlite://`` URLs name.
"""

from kombu.transport import TRANSPORT_ALIASES
from kombu.transport.sqlalchemy import Transport as SQLAlchemyTransport

POLLING_INTERVAL = 0.1


class Transport(SQLAlchemyTransport):
    polling_interval = POLLING_INTERVAL


def install() -> None:
    for alias in ("sqla", "sqlalchemy"):
        TRANSPORT_ALIASES[alias] = "portal.broker:Transport"
