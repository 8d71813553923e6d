"""``manage.py load_pool [FILE]``: load the pool's switches, nodes and partitions from YAML; safe to rerun."""

from __future__ import annotations

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db.models import Sum

from cluster.models import Node, Partition, Switch
from cluster.pool import PoolFileError, load_pool_file


def _count(number: int, noun: str, plural: str = "") -> str:
    return f"{number} {noun if number == 1 else plural or noun + 's'}"


def pool_summary() -> str:
    accelerators = Node.objects.aggregate(total=Sum("accelerators"))["total"] or 0
    counts = [
        _count(Node.objects.count(), "node"),
        _count(accelerators, "accelerator"),
        _count(Switch.objects.count(), "switch", "switches"),
        _count(Partition.objects.count(), "partition"),
    ]
    return ", ".join(counts)


class Command(BaseCommand):
    help = "Load the pool description (switches, nodes, partitions) from a YAML file. Idempotent."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", nargs="?", help="pool YAML (default: the AIPOOL_POOL_FILE setting)")

    def handle(self, *args, **options) -> None:
        path = options["file"] or settings.AIPOOL_POOL_FILE
        try:
            load_pool_file(path)
        except PoolFileError as exc:
            raise CommandError(" ".join(str(exc).split())) from exc
        # TRESError, TimeFormatError, int(): a bad value in the file, but the message does not name the file.
        except ValueError as exc:
            raise CommandError(f"{path}: {exc}") from exc
        self.stdout.write(f"Loaded {path}: {pool_summary()}")
