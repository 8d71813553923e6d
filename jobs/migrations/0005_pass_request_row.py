from django.db import migrations


def create_flag_row(apps, schema_editor):
    apps.get_model("jobs", "SchedulerLock").objects.get_or_create(pk=2)


class Migration(migrations.Migration):
    dependencies = [("jobs", "0004_fairshare_usage")]
    operations = [migrations.RunPython(create_flag_row, migrations.RunPython.noop)]
