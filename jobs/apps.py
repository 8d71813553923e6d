from django.apps import AppConfig


class JobsConfig(AppConfig):
    name = "jobs"
    verbose_name = "Jobs"

    def ready(self) -> None:
        from django.db.models.signals import post_delete, post_save

        from cluster.models import PosixAccount
        from jobs.slurm_sync import on_limits_changed
        from tenants.signals import limits_changed

        # Limits enforced by the backend itself (Slurm associations) follow every change after commit.
        limits_changed.connect(on_limits_changed, dispatch_uid="jobs.slurm_sync.limits")
        post_save.connect(on_limits_changed, sender=PosixAccount, dispatch_uid="jobs.slurm_sync.posix_save")
        post_delete.connect(on_limits_changed, sender=PosixAccount, dispatch_uid="jobs.slurm_sync.posix_delete")
