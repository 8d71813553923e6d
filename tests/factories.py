"""factory_boy factories: every test builds its own world, always with a second tenant next to it."""

import factory
from django.contrib.auth import get_user_model

from cluster.models import Node, Partition, Switch
from tenants.models import Group, GroupMember, Membership, Role, Tenant


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = get_user_model()
        django_get_or_create = ("username",)

    username = factory.Sequence(lambda n: f"user{n}")
    password = factory.django.Password("correct-horse-battery")


class TenantFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Tenant
        django_get_or_create = ("name",)

    name = factory.Sequence(lambda n: f"tenant{n}")


class SwitchFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Switch
        django_get_or_create = ("name",)

    name = factory.Sequence(lambda n: f"leaf{n}")
    parent = factory.LazyFunction(lambda: Switch.objects.get_or_create(name="spine0")[0])


class NodeFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Node
        django_get_or_create = ("name",)

    name = factory.Sequence(lambda n: f"node{n}")
    cpus = 64
    memory_mb = 512 * 1024
    accelerators = 8
    switch = factory.SubFactory(SwitchFactory)


class PartitionFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Partition
        django_get_or_create = ("name",)

    name = factory.Sequence(lambda n: f"part{n}")
    max_time = 7 * 24 * 60


class GroupFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Group
        django_get_or_create = ("name",)
        skip_postgeneration_save = True

    tenant = factory.SubFactory(TenantFactory)
    name = factory.Sequence(lambda n: f"group{n}")
    path = factory.LazyAttribute(lambda o: f"{o.parent.path if o.parent else '/'}{o.name}/")
    parent = None

    @factory.post_generation
    def partitions(self, create, extracted, **kwargs):
        if create and extracted:
            self.allowed_partitions.set(extracted)
            self.default_partition = extracted[0]
            self.save(update_fields=["default_partition"])


def make_member(user, group, role=Role.MEMBER):
    Membership.objects.get_or_create(user=user, tenant=group.tenant, defaults={"role": role})
    GroupMember.objects.get_or_create(user=user, group=group)
    return user
