"""Jobs that ask for a part of a GPU (gpu_share) and for scratch or bulk storage (JOBS_STORAGE_LIMITS per role):
the API, the form, the refusals, and what reaches the Kubernetes manifest."""

import kubernetes_validate
import pytest

from jobs.backends.manifests import ClusterConfig, job_manifest
from jobs.backends.resources import HAMI_MEMORY
from jobs.models import Job
from jobs.services.dispatch import job_spec
from tests.jobs.factories import IMAGE, ImageRuleFactory, lab
from tests.jobs.test_manifests import KUBERNETES_VERSIONS
from tests.jobs.test_script import FORM

pytestmark = pytest.mark.django_db
URL = "/api/v1/jobs/"
GOOD = {"name": "small", "image": IMAGE, "command": ["python", "x.py"], "gpus": 1, "max_runtime_s": 3600}
LIMITS = "student:scratch=50Gi,bulk=100Gi;teacher:scratch=200Gi,bulk=1Ti;admin:scratch=500Gi,bulk=2Ti"


@pytest.fixture(autouse=True)
def _lab(settings):
    settings.JOBS_GPU_SHARING = "hami"
    settings.JOBS_STORAGE_LIMITS = LIMITS
    ImageRuleFactory()
    lab(2, gpus=2)


@pytest.mark.parametrize(("role", "scratch", "bulk"), [("student", "50Gi", "100Gi"), ("teacher", "200Gi", "1Ti")])
def test_each_role_asks_for_a_share_and_storage_up_to_its_ceiling(api_as, role, scratch, bulk):
    body = {**GOOD, "gpu_share": 0.25, "scratch": scratch, "bulk": bulk}
    response = api_as(role).post(URL, body, format="json")
    assert response.status_code == 201, response.json()
    assert {k: response.json()[k] for k in ("gpu_share", "scratch", "bulk")} == {
        "gpu_share": 0.25,
        "scratch": scratch,
        "bulk": bulk,
    }
    built = job_spec(Job.objects.get())
    assert (built.gpu_share, built.scratch, built.bulk, built.owner_role) == (0.25, scratch, bulk, role)


@pytest.mark.parametrize(
    ("change", "field", "says"),
    [
        ({"gpu_share": 0}, "gpu_share", "above 0 and at most 1"),
        ({"gpu_share": 1.5}, "gpu_share", "above 0 and at most 1"),
        ({"gpu_share": 0.5, "gpus": 2}, "gpu_share", "ask for 1 GPU and 1 node"),
        ({"gpu_share": 0.5, "nodes": 2}, "gpu_share", "ask for 1 GPU and 1 node"),
        ({"scratch": "lots"}, "scratch", "a size such as 50Gi"),
        ({"scratch": "51Gi"}, "scratch", "At most 50Gi of scratch storage for your role; you asked for 51Gi"),
        ({"bulk": "1Ti"}, "bulk", "At most 100Gi of bulk storage"),
    ],
)
def test_refusals_are_400_naming_the_field(api_as, change, field, says):
    response = api_as("student").post(URL, {**GOOD, **change}, format="json")
    assert response.status_code == 400
    assert says.lower() in response.json()["fields"][field][0].lower()
    assert not Job.objects.exists()


def test_a_lab_without_sharing_or_a_role_without_a_tier_refuses(api_as, settings):
    settings.JOBS_GPU_SHARING = "none"
    response = api_as("student").post(URL, {**GOOD, "gpu_share": 0.5}, format="json")
    assert response.status_code == 400 and "does not share GPUs" in response.json()["fields"]["gpu_share"][0]
    settings.JOBS_STORAGE_LIMITS = "teacher:scratch=10Gi"
    response = api_as("student").post(URL, {**GOOD, "scratch": "1Gi"}, format="json")
    assert response.status_code == 400 and "may not ask for scratch" in response.json()["fields"]["scratch"][0]
    assert api_as("student").post(URL, GOOD, format="json").status_code == 201  # whole GPUs, no storage: fine


def test_anonymous_gets_401(api_as):
    assert api_as("anonymous").post(URL, {**GOOD, "gpu_share": 0.5}, format="json").status_code == 401


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
def test_the_manifest_asks_hami_for_the_memory_and_mounts_the_tiers(api_as, version):
    api_as("student").post(URL, {**GOOD, "gpu_share": 0.25, "scratch": "40Gi", "bulk": "100Gi"}, format="json")
    config = ClusterConfig(gpu_sharing="hami", gpu_memory_mb=24000, bulk_storage_class="cephfs-bulk")
    manifest = job_manifest(job_spec(Job.objects.get()), config)
    kubernetes_validate.validate(manifest, version, strict=True)
    container = manifest["spec"]["template"]["spec"]["containers"][0]
    assert container["resources"]["limits"][HAMI_MEMORY] == "6000"
    mounts = {m["mountPath"] for m in container["volumeMounts"]}
    assert {"/scratch", "/bulk"} <= mounts


def test_the_form_offers_the_share_and_the_tiers_with_the_ceilings(browser_client):
    client = browser_client("student")
    page = client.get("/jobs/new/").content.decode()
    assert "A quarter of one GPU" in page and "at most 50Gi for you" in page and "at most 100Gi for you" in page
    response = client.post("/jobs/new/", {**FORM, "gpu_share": "0.5", "scratch": "20Gi", "bulk": ""})
    assert response.status_code == 302
    job = Job.objects.get()
    assert (job.gpu_share, job.scratch, job.bulk) == (0.5, "20Gi", "")
    assert "0.5 of a GPU" in client.get(f"/jobs/{job.pk}/").content.decode()
    response = client.post("/jobs/new/", {**FORM, "scratch": "60Gi"})
    assert response.status_code == 400 and "At most 50Gi of scratch storage" in response.content.decode()
