from django.db import migrations


def create_lock_row(apps, schema_editor):
    apps.get_model("jobs", "SchedulerLock").objects.get_or_create(pk=1)


class Migration(migrations.Migration):
    dependencies = [("jobs", "0002_scheduler_pass_requested")]
    operations = [migrations.RunPython(create_lock_row, migrations.RunPython.noop)]
