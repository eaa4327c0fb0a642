import datetime as dt

import factory
from django.utils import timezone

from accounts.models import Course, Enrollment, Role, User
from labs.inventory import RTX_4090, RTX_4090_MEMORY_MB
from labs.models import Allocation, Gpu, Node

PASSWORD = "correct-horse-battery"


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = User
        django_get_or_create = ("username",)
        skip_postgeneration_save = True

    username = factory.Sequence(lambda n: f"user{n}")
    role = Role.STUDENT
    password = factory.PostGenerationMethodCall("set_password", PASSWORD)

    @factory.post_generation
    def saved(obj, create, extracted, **kwargs):
        if create:
            obj.save()


class CourseFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Course

    code = factory.Sequence(lambda n: f"C-{n:03d}")
    name = factory.Sequence(lambda n: f"Course {n}")
    term_start = factory.LazyFunction(lambda: timezone.localdate() - dt.timedelta(days=10))
    term_end = factory.LazyFunction(lambda: timezone.localdate() + dt.timedelta(days=60))


class EnrollmentFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Enrollment

    user = factory.SubFactory(UserFactory)
    course = factory.SubFactory(CourseFactory)


class NodeFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Node
        skip_postgeneration_save = True

    name = factory.Sequence(lambda n: f"node{n:02d}")

    @factory.post_generation
    def gpus(obj, create, extracted, **kwargs):
        if create:
            for index in range(extracted if extracted is not None else 1):
                Gpu.objects.create(node=obj, index=index, model=RTX_4090, memory_mb=RTX_4090_MEMORY_MB)


class AllocationFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Allocation

    user = factory.SubFactory(UserFactory)
    kind = "job"
    ref = factory.Sequence(lambda n: f"job:{n}#1")
    gpu = factory.LazyFunction(lambda: NodeFactory().gpus.first())
    starts_at = factory.LazyFunction(lambda: timezone.now() - dt.timedelta(hours=1))
    ends_at = None
