"""``python manage.py load_catalog``: the preset models and datasets (metadata, no weights); idempotent."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from registry import catalog
from registry.models import Kind


class Command(BaseCommand):
    help = "Load the preset model and dataset catalog (registry/catalog/*.yaml). Running it again changes nothing."

    def add_arguments(self, parser):
        parser.add_argument("--models", type=Path, help="Models file [default: registry/catalog/models.yaml]")
        parser.add_argument("--datasets", type=Path, help="Datasets file [default: registry/catalog/datasets.yaml]")

    def handle(self, *args, **options):
        try:
            entries = catalog.read(Kind.MODEL, options["models"]) + catalog.read(Kind.DATASET, options["datasets"])
        except (catalog.CatalogError, OSError) as exc:
            raise CommandError(str(exc)) from exc
        result = catalog.load(actor=None, entries=entries)
        models = sum(1 for e in entries if e.kind == Kind.MODEL)
        self.stdout.write(
            f"catalog: {models} models, {len(entries) - models} datasets "
            f"({result.created} added, {result.updated} updated, {result.unchanged} unchanged)"
        )
