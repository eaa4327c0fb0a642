"""The Kubernetes backend over HTTP, against a fake of the API server on loopback (tests/fakes/kube.py)."""

import tracemalloc
from urllib.parse import parse_qs, urlsplit

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from accounts.errors import BackendError
from jobs.backends.base import JobRef, JobSpec
from jobs.backends.kubernetes import KubernetesJobs
from jobs.backends.manifests import ClusterConfig, job_manifest
from labs.backends.kube import api_client
from tests.fakes.kube import FakeKube

NS = "gpu-lab-jobs"
JOBS = f"/apis/batch/v1/namespaces/{NS}/jobs"
LABELS = {"portal.gpulab.io/job-id": "7", "portal.gpulab.io/attempt": "1"}


@pytest.fixture
def kube(settings):
    fake = FakeKube().start()
    fake.hang_s = 2.5
    settings.KUBERNETES_API_URL = fake.url
    settings.KUBERNETES_TOKEN = "test-token"
    settings.KUBERNETES_TIMEOUT_S = 1
    yield fake
    fake.stop()


@pytest.fixture
def backend(kube):
    return KubernetesJobs()


def spec(**overrides) -> JobSpec:
    fields = dict(
        job_id=7,
        attempt=1,
        image="registry.lab.example/train:1",
        command=("python", "train.py"),
        gpus_per_node=1,
        max_runtime_s=3600,
        node_names=("gpu01",),
        owner="alice",
    )
    fields.update(overrides)
    return JobSpec(**fields)


def posts(kube, plural: str) -> list:
    return [r for r in kube.requests if r[0] == "POST" and r[1].split("?")[0].endswith(f"/{plural}")]


# --- create ----------------------------------------------------------------------------------------


def test_create_sends_the_job_as_json_with_its_checkpoint_volume(kube, backend):
    status = backend.create(spec())
    assert status.phase == "pending" and status.name == "job-7-a1"
    job = kube.job("job-7-a1")
    assert job["spec"]["activeDeadlineSeconds"] == 3600
    assert job["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == "1"
    assert kube.claim("job-7-checkpoint")["spec"]["resources"]["requests"]["storage"] == "20Gi"
    for number, request in enumerate(kube.requests):
        if request[0] == "POST":
            assert kube.headers[number]["content-type"] == "application/json"
            assert kube.headers[number]["authorization"] == "Bearer test-token"
    assert kube.service("job-7-a1") is None  # one node: no rendezvous service


def test_the_client_alone_would_send_no_content_type_and_be_refused(kube):
    """The trap the backend works around: client 37 posts without Content-Type; the server says 415."""
    body = client.V1Job.from_dict(job_manifest(spec(), ClusterConfig()))
    with pytest.raises(ApiException) as error:
        client.BatchV1Api(api_client()).create_namespaced_job(NS, body, _request_timeout=(1.0, 1.0))
    assert error.value.status == 415
    assert kube.job("job-7-a1") is None


def test_multi_node_create_adds_a_headless_service_owned_by_the_job(kube, backend):
    backend.create(spec(nodes=2, node_names=("gpu01", "gpu02")))
    job, service = kube.job("job-7-a1"), kube.service("job-7-a1")
    assert job["spec"]["completionMode"] == "Indexed"
    assert service["spec"]["clusterIP"] == "None"
    assert service["metadata"]["ownerReferences"][0]["uid"] == job["metadata"]["uid"]
    assert kube.claim("job-7-checkpoint")["spec"]["accessModes"] == ["ReadWriteMany"]


def test_create_twice_is_one_job(kube, backend):
    multi = spec(nodes=2, node_names=("gpu01", "gpu02"))
    backend.create(multi)
    uid = kube.job("job-7-a1")["metadata"]["uid"]
    status = backend.create(multi)  # a dispatch that ran twice: 409 AlreadyExists is success
    assert status.phase == "pending"
    assert kube.job("job-7-a1")["metadata"]["uid"] == uid
    assert len(posts(kube, "jobs")) == 2 and len(posts(kube, "services")) == 2
    assert len([k for k in kube.objects if k[0] == "jobs"]) == 1


def test_a_job_whose_response_was_lost_is_found_on_retry(kube, backend):
    # The server created the Job but the worker never heard (it died, or the answer timed out).
    kube.fail_next(0, method="POST", path=JOBS)
    with pytest.raises(BackendError) as error:
        backend.create(spec())
    assert error.value.retryable is True
    kube._create("jobs", NS, job_manifest(spec(), ClusterConfig()))  # what the server did meanwhile
    assert backend.create(spec()).phase == "pending"
    assert len([k for k in kube.objects if k[0] == "jobs"]) == 1


def test_a_foreign_job_with_the_same_name_is_not_taken_for_ours(kube, backend):
    foreign = job_manifest(spec(), ClusterConfig())
    foreign["metadata"]["labels"] = {"app": "someone-else"}
    kube._create("jobs", NS, foreign)
    with pytest.raises(BackendError) as error:
        backend.create(spec())
    assert error.value.retryable is False and "did not create" in str(error.value)


@pytest.mark.parametrize(
    "status,reason,retryable",
    [(422, "Invalid", False), (403, "Forbidden", False), (500, "InternalError", True), (429, "TooManyRequests", True)],
)
def test_create_errors_say_whether_to_retry_and_leave_no_job(kube, backend, status, reason, retryable):
    kube.fail_next(status, reason, method="POST", path=JOBS)
    with pytest.raises(BackendError) as error:
        backend.create(spec())
    assert (error.value.status, error.value.retryable) == (status, retryable)
    assert "fake failure" in str(error.value)  # the server's own message is passed on
    assert kube.job("job-7-a1") is None
    if retryable:
        assert backend.create(spec()).phase == "pending"  # and the retry works (the claim's 409 included)
        assert len([k for k in kube.objects if k[0] == "persistentvolumeclaims"]) == 1


def test_a_timeout_is_retryable(kube, backend):
    kube.fail_next(0, method="POST", path=JOBS)
    with pytest.raises(BackendError) as error:
        backend.create(spec())
    assert error.value.retryable is True and error.value.status is None


def test_the_server_refuses_an_invalid_job_with_422(kube, backend):
    broken = job_manifest(spec(), ClusterConfig())
    broken["spec"]["template"]["spec"]["containers"] = []
    status, body = kube._create("jobs", NS, broken)
    assert status == 422 and body["reason"] == "Invalid"
    assert body["details"]["causes"][0]["field"] == "spec.template.spec.containers"


def test_a_bad_spec_or_setting_is_refused_before_anything_is_sent(kube, settings):
    with pytest.raises(BackendError) as error:
        KubernetesJobs().create(spec(env={"BAD NAME": "x"}))
    assert error.value.retryable is False
    with pytest.raises(BackendError) as error:
        KubernetesJobs(config=ClusterConfig(namespace="Teaching_Lab")).create(spec())
    assert "namespace" in str(error.value)
    with pytest.raises((BackendError, ValueError)):
        KubernetesJobs(config=ClusterConfig(memory_per_gpu="24 GB")).create(spec())
    assert kube.requests == []


# --- status, logs -------------------------------------------------------------------------------------


def test_status_follows_the_job_and_its_pods(kube, backend):
    ref = JobRef(7, 1)
    assert backend.status(ref).phase == "missing"
    backend.create(spec())
    assert backend.status(ref).message == "waiting for pods to start"
    kube.add_pod("job-7-a1-x1", labels=LABELS, node="gpu01", phase="Pending", waiting="ImagePullBackOff")
    pending = backend.status(ref)
    assert pending.phase == "pending" and "ImagePullBackOff" in pending.message
    kube.add_pod("job-7-a1-x1", labels=LABELS, node="gpu01", phase="Running")
    running = backend.status(ref)
    assert running.phase == "running" and running.pods[0].node == "gpu01" and running.started_at is not None
    kube.add_pod("job-7-a1-x1", labels=LABELS, node="gpu01", phase="Succeeded", exit_code=0)
    kube.finish_job("job-7-a1")
    done = backend.status(ref)
    assert done.phase == "succeeded" and done.exit_codes == (0,) and done.finished_at is not None


def test_a_failed_job_says_why(kube, backend):
    backend.create(spec(nodes=2, node_names=("gpu01", "gpu02")))
    kube.add_pod("p0", labels=LABELS, node="gpu01", phase="Failed", exit_code=137, reason="Error", index=0)
    kube.add_pod("p1", labels=LABELS, node="gpu02", phase="Failed", exit_code=1, reason="Error", index=1)
    kube.finish_job("job-7-a1", failed=True, reason="DeadlineExceeded", message="Job was active longer than specified")
    status = backend.status(JobRef(7, 1))
    assert status.phase == "failed" and status.message.startswith("DeadlineExceeded")
    assert [(p.rank, p.exit_code) for p in status.pods] == [(0, 137), (1, 1)]


@pytest.mark.parametrize("status,retryable", [(500, True), (503, True), (401, False)])
def test_status_errors(kube, backend, status, retryable):
    kube.fail_next(status, method="GET", path=JOBS)
    with pytest.raises(BackendError) as error:
        backend.status(JobRef(7, 1))
    assert error.value.retryable is retryable


def test_logs_come_from_the_pod_of_the_rank(kube, backend):
    ref = JobRef(7, 1)
    assert backend.logs(ref).text == ""
    backend.create(spec(nodes=2, node_names=("gpu01", "gpu02")))
    kube.add_pod("p0", labels=LABELS, index=0, log="epoch 1\nepoch 2\nepoch 3\n")
    kube.add_pod("p1", labels=LABELS, index=1, log="worker\n")
    assert backend.logs(ref).text == "epoch 1\nepoch 2\nepoch 3\n"
    assert backend.logs(ref, tail_lines=1).text == "epoch 3\n"
    assert backend.logs(ref, rank=1).text == "worker\n"
    kube.add_pod("p0", labels=LABELS, index=0, waiting="ContainerCreating")
    assert backend.logs(ref).text == ""  # not started yet: nothing to show, not an error
    kube.fail_next(500, method="GET", path=f"/api/v1/namespaces/{NS}/pods/p1/log")
    with pytest.raises(BackendError) as error:
        backend.logs(ref, rank=1).text
    assert error.value.retryable is True


def numbered(lines: int) -> str:
    return "".join(f"line {n:06d}\n" for n in range(1, lines + 1))


def log_queries(kube) -> list[dict]:
    return [parse_qs(urlsplit(r[1]).query) for r in kube.requests if urlsplit(r[1]).path.endswith("/log")]


def test_logs_are_capped_and_the_api_server_is_asked_for_no_more(kube, backend, settings):
    settings.JOBS_LOG_RESPONSE_MAX_BYTES = 4096
    settings.JOBS_LOG_MAX_BYTES = 1024 * 1024
    log = numbered(20_000)  # 240 kB
    ref = JobRef(7, 1)
    backend.create(spec())
    kube.add_pod("p0", labels=LABELS, index=0, log=log)
    page = backend.logs(ref)
    assert page.text == log[-4096:] and page.truncated is True
    assert (page.start, page.end, page.size) == (len(log) - 4096, len(log), len(log))
    assert log_queries(kube)[-1]["limitBytes"] == [str(1024 * 1024)]

    page = backend.logs(ref, tail_lines=2)
    assert page.text == "line 019999\nline 020000\n" and page.truncated is False
    assert log_queries(kube)[-1]["tailLines"] == ["2"]
    page = backend.logs(ref, tail_lines=1000)  # 12,000 bytes: the whole lines that fit in 4096
    assert page.truncated is True and len(page.data) <= 4096
    assert page.text.startswith("line 019660\n") and page.text.endswith("line 020000\n")

    page = backend.logs(ref, offset=120, limit_bytes=24)
    assert page.text == "line 000011\nline 000012\n" and (page.start, page.end, page.truncated) == (120, 144, False)
    assert log_queries(kube)[-1]["limitBytes"] == [str(120 + 24 + 1)]
    page = backend.logs(ref, offset=0, limit_bytes=10**9)
    assert page.text == log[:4096] and page.truncated is True


def test_a_server_that_ignores_limit_bytes_cannot_make_the_portal_hold_the_log(kube, backend, settings):
    settings.JOBS_LOG_RESPONSE_MAX_BYTES = 64 * 1024
    settings.JOBS_LOG_MAX_BYTES = 1024 * 1024
    kube.honour_limit_bytes = False
    log = "x" * 99 + "\n"
    log = log * (8 * 1024 * 1024 // len(log)) + "the end\n"  # 8 MB
    ref = JobRef(7, 1)
    backend.create(spec())
    kube.add_pod("p0", labels=LABELS, index=0, log=log)
    tracemalloc.start()
    try:
        page = backend.logs(ref)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # It stopped at JOBS_LOG_MAX_BYTES, holding the last 64 KiB read, and says it could not reach the end.
    assert len(page.data) == 64 * 1024 and page.truncated is True and page.size is None
    assert page.end == 1024 * 1024
    assert peak < 1024 * 1024, f"{peak} bytes held to read a capped log"
    assert len(backend.logs(ref, tail_lines=5).data) <= 64 * 1024
    beyond = backend.logs(ref, offset=2 * 1024 * 1024)
    assert beyond.data == b"" and beyond.truncated is True
    settings.JOBS_LOG_MAX_BYTES = 16 * 1024 * 1024  # read further, still holding one page at most
    page = backend.logs(ref)
    assert page.text.endswith("the end\n") and len(page.data) == 64 * 1024 and page.size == len(log)
    assert backend.logs(ref, offset=len(log) - 8).text == "the end\n"


# --- delete, purge ---------------------------------------------------------------------------------------


def test_delete_removes_the_job_in_the_foreground_and_is_idempotent(kube, backend):
    backend.create(spec(nodes=2, node_names=("gpu01", "gpu02")))
    kube.add_pod("p0", labels=LABELS, index=0, job_name="job-7-a1")
    backend.delete(JobRef(7, 1), grace_s=30)
    deletes = [r[1] for r in kube.requests if r[0] == "DELETE"]
    assert deletes[0].startswith(f"{JOBS}/job-7-a1?") and "propagationPolicy=Foreground" in deletes[0]
    assert "gracePeriodSeconds=30" in deletes[0]
    assert kube.job("job-7-a1") is None and kube.service("job-7-a1") is None
    assert not [k for k in kube.objects if k[0] == "pods"]
    assert kube.claim("job-7-checkpoint") is not None  # checkpoints outlive the attempt
    backend.delete(JobRef(7, 1))  # already gone: 404 is fine
    assert backend.status(JobRef(7, 1)).phase == "missing"


def test_a_failed_delete_is_retryable_and_keeps_the_job(kube, backend):
    backend.create(spec())
    kube.fail_next(500, method="DELETE", path=JOBS)
    with pytest.raises(BackendError) as error:
        backend.delete(JobRef(7, 1))
    assert error.value.retryable is True
    assert kube.job("job-7-a1") is not None


def test_purge_drops_the_checkpoint_volume(kube, backend):
    backend.create(spec())
    backend.purge(7)
    assert kube.claim("job-7-checkpoint") is None
    backend.purge(7)  # gone already: fine
