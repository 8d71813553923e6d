"""``python manage.py create_token USERNAME [--scopes read,write] [--expires-days N] [--name NAME]``.

Prints the token and nothing else, so scripts can do ``export AIPOOL_TOKEN=$(python manage.py create_token alice)``.
"""

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from api.services import token_create


class Command(BaseCommand):
    help = "Create a personal access token for USERNAME and print it (shown once, stored hashed)."

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--scopes", default="read,write", help="read, write or read,write (default)")
        parser.add_argument("--expires-days", type=int, default=None, help="days until it expires (default: never)")
        parser.add_argument("--name", default="cli", help="a label to tell your tokens apart (default: cli)")

    def handle(self, *args, username, scopes, expires_days, name, **options):
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"unknown user {username!r}")
        try:
            _, secret = token_create(user=user, name=name, scopes=scopes, expires_days=expires_days)
        except ValidationError as exc:
            raise CommandError("; ".join(f"{k}: {' '.join(v)}" for k, v in exc.message_dict.items())) from exc
        self.stdout.write(secret)
