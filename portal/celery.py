import os

from celery import Celery

from portal import broker

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")

broker.install()
app = Celery("aipool")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
