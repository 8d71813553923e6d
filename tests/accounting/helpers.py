"""A factory for jobs with a known run (start, end, accelerators), so a history spanning days is built in code."""

import factory

from jobs.models import Job
from vocab.states import JobState


class JobRunFactory(factory.django.DjangoModelFactory):
    """A job that ran from `started_at` to `ended_at` (None: still running) on `nodes` x `accelerators_per_node`."""

    class Meta:
        model = Job

    user = None  # required: pass the owner
    group = None  # required: pass the group
    tenant = factory.LazyAttribute(lambda o: o.group.tenant)
    partition = factory.LazyAttribute(lambda o: o.group.default_partition)
    name = factory.Sequence(lambda n: f"run{n}")
    nodes = 1
    accelerators_per_node = 8
    cpus_per_node = 8
    memory_per_node = 65536
    time_limit = 7 * 24 * 60
    command = "true"
    state = factory.LazyAttribute(lambda o: JobState.RUNNING if o.ended_at is None else JobState.COMPLETED)
    started_at = None
    ended_at = None
    eligible_at = factory.LazyAttribute(lambda o: o.started_at)
