"""Datasets and course shares: who may mount which (API, jobs, notebooks), defined by teachers for their courses and
by admins anywhere; read-only in a permitted person's job and notebook, absent from another's."""

from __future__ import annotations

import os
import sys
import types
from pathlib import Path

import pytest
from rest_framework.test import APIClient

from jobs.backends.base import JobRef
from jobs.models import Dataset, DatasetKind, Job, JobState
from jobs.services import job_submit
from jobs.services.dispatch import job_logs, jobs_follow
from labs.notebooks.passes import _options
from labs.notebooks.volumes import notebook_volumes
from tests.factories import CourseFactory, EnrollmentFactory, UserFactory
from tests.jobs.factories import IMAGE, ImageRuleFactory, lab, local_backend_fixture, wait_until  # noqa: F401

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "deploy" / "jupyterhub"))
from portal_hub import spawners  # noqa: E402
from portal_hub.options import OptionsRefused, kube_settings, signed, verify  # noqa: E402

pytestmark = pytest.mark.django_db
KEY = "k" * 32


@pytest.fixture
def people(settings, tmp_path):
    settings.DATASETS_LOCAL_ROOT = tmp_path / "datasets"
    course = CourseFactory(code="DL-101")
    teacher = UserFactory(username="tess", role="teacher")
    course.teachers.add(teacher)
    student = UserFactory(username="sam", role="student")
    EnrollmentFactory(user=student, course=course)
    other = UserFactory(username="olga", role="student")
    admin = UserFactory(username="ada", role="admin")
    return types.SimpleNamespace(course=course, teacher=teacher, student=student, other=other, admin=admin)


@pytest.fixture
def data(people, tmp_path):
    """A lab-wide dataset, the course's dataset (a directory with a file) and the course's share."""
    lab_wide = Dataset.objects.create(name="imagenet", claim="imagenet-ro", local_path=str(tmp_path / "imagenet"))
    os.makedirs(lab_wide.local_path)
    course_data = Dataset.objects.create(name="mnist-dl101", course=people.course, claim="dataset-mnist-dl101",
                                         local_path=str(tmp_path / "mnist"))  # fmt: skip
    os.makedirs(course_data.local_path)
    Path(course_data.local_path, "train.csv").write_text("label,pixels\n7,0 0 0\n")
    os.chmod(course_data.local_path, 0o755)
    os.chmod(Path(course_data.local_path, "train.csv"), 0o644)
    share = Dataset.objects.create(
        name="dl101-share", course=people.course, kind=DatasetKind.SHARE, claim="share-dl101"
    )
    return types.SimpleNamespace(lab_wide=lab_wide, course=course_data, share=share)


def client_of(user):
    client = APIClient()
    if user is not None:
        client.force_authenticate(user)
    return client


@pytest.mark.parametrize(
    "who,expected",
    [
        ("student", {"imagenet": False, "mnist-dl101": False, "dl101-share": False}),
        ("teacher", {"imagenet": False, "mnist-dl101": False, "dl101-share": True}),
        ("other", {"imagenet": False}),
        ("admin", {"imagenet": False, "mnist-dl101": False, "dl101-share": True}),
    ],
)
def test_each_person_lists_what_they_may_mount(people, data, who, expected):
    answer = client_of(getattr(people, who)).get("/api/v1/datasets/")
    assert answer.status_code == 200
    assert {row["name"]: row["writable"] for row in answer.json()} == expected
    rows = {row["name"]: row for row in answer.json()}
    if "dl101-share" in rows:
        assert rows["dl101-share"]["mount_path"] == "/course/DL-101/dl101-share"
        assert rows["dl101-share"]["course"] == "DL-101" and rows["dl101-share"]["kind"] == "share"
    assert rows["imagenet"]["env"] == "DATASET_IMAGENET" and rows["imagenet"]["course"] is None


def test_anonymous_gets_401(data):
    assert client_of(None).get("/api/v1/datasets/").status_code == 401


@pytest.mark.parametrize(
    "who,body,status",
    [
        ("teacher", {"name": "cifar", "course": "DL-101"}, 201),
        ("teacher", {"name": "notes", "course": "DL-101", "kind": "share"}, 201),
        ("teacher", {"name": "cifar", "course": "OTHER-1"}, 403),
        ("teacher", {"name": "cifar"}, 403),  # lab-wide: admins only
        ("student", {"name": "cifar", "course": "DL-101"}, 403),
        ("admin", {"name": "laion", "claim": "laion-ro", "local_path": "/srv/laion"}, 201),
        ("admin", {"name": "Bad Name"}, 400),
        ("admin", {"name": "share", "kind": "share"}, 400),  # a share belongs to a course
        ("admin", {"name": "imagenet"}, 409),
        ("admin", {"name": "x", "local_path": "/srv/../etc"}, 400),
    ],
)
def test_who_may_define_a_dataset(people, data, who, body, status):
    CourseFactory(code="OTHER-1")
    answer = client_of(getattr(people, who)).post("/api/v1/datasets/", body, format="json")
    assert answer.status_code == status, answer.content
    if status == 201:
        dataset = Dataset.objects.get(name=body["name"])
        assert dataset.created_by == getattr(people, who)
        if who == "teacher":  # a teacher never chooses where it lives
            assert dataset.claim == f"dataset-{body['name']}"
            assert Path(dataset.local_path).is_dir() and "/DL-101/" in dataset.local_path


def test_a_teacher_cannot_point_a_dataset_at_other_files(people, settings):
    body = {"name": "sneaky", "course": "DL-101", "claim": "someone-else", "local_path": "/home/olga"}
    assert client_of(people.teacher).post("/api/v1/datasets/", body, format="json").status_code == 201
    dataset = Dataset.objects.get(name="sneaky")
    assert dataset.claim == "dataset-sneaky" and dataset.local_path.startswith(
        str(people.course and dataset.local_path)
    )
    assert not dataset.local_path.startswith("/home/olga")


# --- In jobs ---------------------------------------------------------------------------------------------------


READ_AND_TRY_WRITE = (
    "import os\n"
    "p = os.environ['DATASET_MNIST_DL101']\n"
    "print(open(os.path.join(p, 'train.csv')).read().splitlines()[1])\n"
    "try:\n"
    "    open(os.path.join(p, 'mine.txt'), 'w')\n"
    "    print('wrote')\n"
    "except OSError:\n"
    "    print('read-only')\n"
)


def test_a_course_dataset_is_read_only_in_a_permitted_persons_job(
    people, data, local_backend, django_capture_on_commit_callbacks
):
    ImageRuleFactory()
    lab(1)
    fields = dict(name="read", image=IMAGE, command=["python", "-c", READ_AND_TRY_WRITE], gpus=1, max_runtime_s=600)
    with django_capture_on_commit_callbacks(execute=True):
        job = job_submit(user=people.student, datasets=["mnist-dl101"], **fields)

    def finished():
        with django_capture_on_commit_callbacks(execute=True):
            jobs_follow()
        job.refresh_from_db()
        return job.is_finished

    wait_until(finished, timeout=30, step=0.1)
    assert job.state == JobState.SUCCEEDED, job_logs(job=job).text
    assert job_logs(job=job).text == "7,0 0 0\nread-only\n"
    assert local_backend.status(JobRef(job.pk, 1)).phase == "succeeded"
    assert not Path(data.course.local_path, "mine.txt").exists()


def test_another_person_cannot_mount_the_course_dataset_in_a_job(people, data):
    ImageRuleFactory()
    lab(1)
    fields = dict(name="read", image=IMAGE, command=["python", "x.py"], gpus=1, max_runtime_s=600)
    answer = client_of(people.other).post("/api/v1/jobs/", {**fields, "datasets": ["mnist-dl101"]}, format="json")
    assert answer.status_code == 400 and "datasets" in answer.json()["fields"]
    assert not Job.objects.exists()
    ok = client_of(people.other).post("/api/v1/jobs/", {**fields, "datasets": ["imagenet"]}, format="json")
    assert ok.status_code == 201


# --- In notebooks ----------------------------------------------------------------------------------------------


def session_of(user):
    profile = types.SimpleNamespace(slug="cpu", image="quay.io/jupyter/base-notebook:latest", gpu_share=0,
                                    gpu_mem_mb=0, cpu=1, memory_gb=2)  # fmt: skip
    return types.SimpleNamespace(pk=7, profile=profile, user_id=user.pk, user=user)


def gpu():
    return types.SimpleNamespace(memory_mb=24564, node=types.SimpleNamespace(name="gpu01"), index=0, uuid="")


def test_the_notebook_options_carry_the_datasets_of_its_person_only(people, data, settings):
    settings.NOTEBOOKS_HUB_TOKEN = KEY
    mine = _options(session_of(people.student), gpu(), 3600)
    theirs = _options(session_of(people.other), gpu(), 3600)
    assert [d["name"] for d in mine["datasets"]] == ["dl101-share", "imagenet", "mnist-dl101"]
    assert [d["name"] for d in theirs["datasets"]] == ["imagenet"]
    assert not any(d["writable"] for d in mine["datasets"])
    teacher = {d["name"]: d["writable"] for d in notebook_volumes(people.teacher)}
    assert teacher == {"dl101-share": True, "imagenet": False, "mnist-dl101": False}
    # The hub reads them from the signed options: on the cluster, each claim mounted read-only.
    opts = verify(mine, key=KEY, server_name="nb7")
    pod = kube_settings(opts, sharing="timeslice", replicas=4)
    mounts = {m["mountPath"]: m["readOnly"] for m in pod["volume_mounts"]}
    assert mounts == {"/course/DL-101/dl101-share": True, "/data/imagenet": True, "/data/mnist-dl101": True}
    claims = {v["persistentVolumeClaim"]["claimName"] for v in pod["volumes"]}
    assert claims == {"share-dl101", "imagenet-ro", "dataset-mnist-dl101"}
    assert all(v["persistentVolumeClaim"]["readOnly"] for v in pod["volumes"])
    assert pod["environment"]["DATASET_MNIST_DL101"] == "/data/mnist-dl101"
    other = kube_settings(verify(theirs, key=KEY, server_name="nb7"), sharing="timeslice", replicas=4)
    assert [m["mountPath"] for m in other["volume_mounts"]] == ["/data/imagenet"]


@pytest.mark.parametrize(
    "bad",
    [{"name": "x", "claim": "c", "mount_path": "/data/../etc"}, {"name": "x", "claim": "c", "mount_path": "rel"},
     {"name": "X!", "claim": "c", "mount_path": "/data/x"}, "not-an-object"],
)  # fmt: skip
def test_the_hub_refuses_malformed_dataset_options(bad):
    from tests.notebooks.test_hub_config import options

    with pytest.raises(OptionsRefused):
        verify(signed({**options(7, None), "datasets": [bad]}, KEY), key=KEY, server_name="nb7")


NOTEBOOK_CHECK = (
    "import os, sys\n"
    "print('hidden' if not os.path.exists(sys.argv[1]) else 'visible', flush=True)\n"
    "p = os.environ['DATASET_MNIST_DL101']\n"
    "print(open(os.path.join(p, 'train.csv')).read().splitlines()[1])\n"
    "try:\n"
    "    open(os.path.join(p, 'mine.txt'), 'w')\n"
    "    print('wrote')\n"
    "except OSError:\n"
    "    print('read-only')\n"
)


def test_a_dataset_is_read_only_in_a_local_notebook_and_absent_from_anothers(people, data, settings, tmp_path):
    """The hub's local spawner's own start_server, with the datasets of each person's signed options."""
    settings.NOTEBOOKS_HUB_TOKEN = KEY
    sandbox = spawners.load_sandbox()
    outputs = {}
    for who in ("student", "other"):
        opts = verify(_options(session_of(getattr(people, who)), gpu(), 3600), key=KEY, server_name="nb7")
        home, sockets = tmp_path / "homes" / who, tmp_path / "run" / who
        for path in (home, sockets):
            path.mkdir(parents=True)
            os.chmod(path, 0o777)
        identity = sandbox.Identity(uid=65534, gid=65534, name=who, home=str(home))
        env = {"PATH": os.defpath, **{d.env_name: d.local_path for d in opts.datasets if d.local_path}}
        env.setdefault("DATASET_MNIST_DL101", data.course.local_path)
        read, write = os.pipe()
        server = spawners.start_server(
            sandbox, [sys.executable, "-c", NOTEBOOK_CHECK, data.course.local_path], env=env, identity=identity,
            sockets=sockets, port=18890, hub_port=18891, limits={"nproc": 256}, datasets=opts.datasets,
            stdout=write, stderr=write,
        )  # fmt: skip
        os.close(write)
        with os.fdopen(read) as output:
            outputs[who] = output.read()
        server.wait(timeout=30)
    assert outputs["student"].splitlines() == ["visible", "7,0 0 0", "read-only"]
    assert outputs["other"].splitlines()[0] == "hidden" and "7,0 0 0" not in outputs["other"]
    assert not Path(data.course.local_path, "mine.txt").exists()


def test_a_course_dataset_under_the_portals_var_dir_is_given_to_jobs_and_the_rest_of_it_never(settings):
    from jobs.backends.base import DatasetVolume, JobSpec
    from jobs.backends.local_files import dataset_problems

    settings.DATASETS_LOCAL_ROOT = settings.VAR_DIR / "datasets"

    def spec(path: str) -> JobSpec:
        return JobSpec(job_id=1, attempt=1, image=IMAGE, command=("python",), gpus_per_node=1, max_runtime_s=60,
                       datasets=(DatasetVolume("d", local_path=path),))  # fmt: skip

    assert dataset_problems(spec(str(settings.VAR_DIR / "datasets" / "DL-101" / "mnist")), Path("/tmp/jobs")) == []
    assert dataset_problems(spec(str(settings.VAR_DIR / "secret")), Path("/tmp/jobs"))
    assert dataset_problems(spec(str(settings.VAR_DIR / "datasets" / ".." / "db")), Path("/tmp/jobs"))


def test_a_spawner_started_twice_mounts_its_datasets_once(people, data, settings):
    from portal_hub.options import apply_hook

    settings.NOTEBOOKS_HUB_TOKEN = KEY

    class Spawner:
        name = "nb7"
        _log_name = "sam:nb7"
        log = types.SimpleNamespace(warning=lambda *a: None)

        def __init__(self):
            self.volumes = [{"name": "home", "persistentVolumeClaim": {"claimName": "home-sam"}}]
            self.volume_mounts = [{"name": "home", "mountPath": "/home/jovyan"}]
            self.environment, self.extra_labels, self.node_selector = {}, {}, {}
            self.extra_resource_limits, self.extra_resource_guarantees, self.extra_pod_config = {}, {}, {}
            self.image = self.cpu_limit = self.cpu_guarantee = self.mem_limit = self.mem_guarantee = None

    spawner = Spawner()
    hook = apply_hook(key=KEY, kind="kubernetes")
    for _ in range(2):
        hook(spawner, _options(session_of(people.student), gpu(), 3600))
    assert [v["name"] for v in spawner.volumes] == ["home", "dataset-0", "dataset-1", "dataset-2"]
    assert [m["mountPath"] for m in spawner.volume_mounts][0] == "/home/jovyan" and len(spawner.volume_mounts) == 4
