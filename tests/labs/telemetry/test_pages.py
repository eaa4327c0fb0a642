"""The live GPU pages, the admin console's alerts and agent keys, /metrics, and the node agent commands."""

import datetime as dt
import types

import pytest
from asgiref.sync import async_to_sync
from django.core.management import call_command
from django.core.management.base import CommandError
from django.utils import timezone

from labs.inventory import demo_specs
from labs.models import GpuAlert, GpuMinute, Node, NodeAgentToken
from labs.services import inventory_sync
from labs.telemetry import store
from labs.telemetry.agents import agent_token_check
from labs.telemetry.collector import Collector
from labs.telemetry.health import HealthWatch
from labs.telemetry.nvml import NvmlReader
from labs.telemetry.simulator import GpuSimulator
from labs.telemetry.sources import SimulatorSource
from tests.conftest import ROLES
from tests.factories import PASSWORD, AllocationFactory, UserFactory
from tests.labs.telemetry.test_collector import clean_store  # noqa: F401  (fixture)

pytestmark = pytest.mark.django_db(transaction=True)

PAGES = {
    # path: expected status for anonymous (302 = sent to sign in), student, teacher, admin
    "/lab/gpus/": (302, 200, 200, 200),
    "/lab/nodes/gpu01/": (302, 200, 200, 200),
    "/lab/nodes/no-such-node/": (302, 404, 404, 404),
    "/admin/labs/gpualert/": (302, 302, 302, 200),
    "/admin/labs/gpualert/?state=all": (302, 302, 302, 200),
    "/admin/labs/nodeagenttoken/": (302, 302, 302, 200),
    "/admin/labs/nodeagenttoken/add/": (302, 302, 302, 200),
}


@pytest.fixture
def lab(clean_store):  # noqa: F811
    inventory_sync(specs=demo_specs(3), source="demo")
    return {node.name: node for node in Node.objects.prefetch_related("gpus")}


def tick(faults=()):
    watch = HealthWatch(temp_threshold_c=87, hold_s=0, xid_ignored=set())
    collector = Collector(source=SimulatorSource(GpuSimulator(seed=4, faults=faults)), interval_s=1, health=watch)
    return async_to_sync(collector.tick)()


@pytest.mark.parametrize("path,expected", PAGES.items(), ids=list(PAGES))
@pytest.mark.parametrize("role_index,role", enumerate(ROLES), ids=ROLES)
def test_pages_per_role(browser_client, lab, path, expected, role_index, role):
    response = browser_client(role).get(path)
    assert response.status_code == expected[role_index]
    if response.status_code == 302 and role == "anonymous":
        assert "/login/" in response["Location"]


def test_the_grid_shows_every_gpu_with_its_holder_as_the_viewer_may_know(client, lab):
    student = UserFactory(username="sofia")
    AllocationFactory(user=student, gpu=lab["gpu01"].gpus.get(), kind="notebook", ref="notebook:1")
    AllocationFactory(gpu=lab["gpu02"].gpus.get(), kind="job", ref="job:1#1")
    tick()
    client.login(username="sofia", password=PASSWORD)
    page = client.get("/lab/gpus/").content.decode()
    assert page.count('class="gpu-card') == 3
    assert 'data-key="gpu01/0"' in page and "you · notebook" in page
    assert ">busy<" in page  # gpu02: busy, nobody named
    assert 'id="gpus-available" data-testid="gpus-available">1<' in page
    assert "GPU free that you can use now" in page
    assert 'src="/static/js/gpus.js"' in page and 'data-ws="/ws/gpus/"' in page
    assert 'href="/lab/gpus/" aria-current="page">Live GPUs' in page


def test_admins_see_alerts_with_a_cordon_suggestion(client, lab):
    tick(faults=["gpu02:temp"])
    UserFactory(username="ada", role="admin")
    client.login(username="ada", password=PASSWORD)
    page = client.get("/lab/gpus/").content.decode()
    assert "Health alerts" in page and 'href="/console/nodes/gpu02/cordon/">Cordon gpu02…' in page
    admin_page = client.get("/admin/labs/gpualert/").content.decode()
    assert "Cordon gpu02" in admin_page and "over 87 °C" in admin_page


def test_the_node_page_charts_the_last_hour(client, lab):
    gpu = lab["gpu01"].gpus.get()
    now = timezone.now().replace(second=0, microsecond=0)
    GpuMinute.objects.bulk_create(
        GpuMinute(
            gpu=gpu,
            minute=now - dt.timedelta(minutes=m),
            samples=60,
            util_avg=50.0 + m,
            util_max=90.0,
            mem_used_avg_mb=1000.0,
            mem_used_max_mb=1200.0,
            temp_avg_c=60.0,
            temp_max_c=65.0,
            power_avg_w=200.0,
            power_max_w=300.0,
        )
        for m in range(1, 30)
    )
    tick()
    UserFactory(username="sofia")
    client.login(username="sofia", password=PASSWORD)
    page = client.get("/lab/nodes/gpu01/").content.decode()
    assert "GPU 0 · NVIDIA GeForce RTX 4090 — the last hour" in page
    assert page.count('<polyline class="avg"') == 4 and page.count('<polyline class="peak"') == 4
    assert "51 % last minute" in page
    assert 'data-node="gpu01"' in page and 'data-key="gpu01/0"' in page
    empty = client.get("/lab/nodes/gpu02/").content.decode()
    assert "No history yet" in empty


def test_the_admin_cordons_the_node_of_an_alert_and_acknowledges_it(admin_client, lab):
    tick(faults=["gpu03:xid"])
    alert = GpuAlert.objects.get()
    response = admin_client.post(
        "/admin/labs/gpualert/", {"action": "cordon_nodes", "_selected_action": [alert.pk]}, follow=True
    )
    assert "Cordoned gpu03." in response.content.decode()
    assert Node.objects.get(name="gpu03").status == "cordoned"
    admin_client.post("/admin/labs/gpualert/", {"action": "acknowledge", "_selected_action": [alert.pk]})
    alert.refresh_from_db()
    assert alert.cleared_at is not None and alert.acknowledged_by is not None


def test_an_admin_makes_an_agent_key_that_is_shown_once_and_stored_hashed(admin_client, lab):
    response = admin_client.post("/admin/labs/nodeagenttoken/add/", {"node": lab["gpu02"].pk}, follow=True)
    page = response.content.decode()
    key = page.split("The agent key for gpu02 is ")[1].split(" ")[0]
    token = NodeAgentToken.objects.get()
    assert key.startswith("gna_") and key not in token.key_hash and token.prefix == key[:12]
    assert agent_token_check(key) == token
    admin_client.post("/admin/labs/nodeagenttoken/", {"action": "revoke", "_selected_action": [token.pk]})
    assert agent_token_check(key) is None


def test_metrics_count_gpus_alerts_running_work_and_queues(client, lab, settings):
    from jobs.models import Job

    settings.METRICS_TOKEN = "scrape-me"

    AllocationFactory(gpu=lab["gpu01"].gpus.get(), kind="notebook", ref="notebook:5")
    tick(faults=["gpu02:temp"])
    owner, now = UserFactory(), timezone.now()
    job = {"owner": owner, "image": "registry.lab.example/train:1", "command": ["true"], "gpus_per_node": 1}
    Job.objects.create(name="waiting", max_runtime_s=60, submitted_at=now - dt.timedelta(seconds=300), **job)
    Job.objects.filter(name="waiting").update(queued_since=now - dt.timedelta(seconds=300))
    Job.objects.create(
        name="started",
        max_runtime_s=60,
        state="running",
        submitted_at=now - dt.timedelta(seconds=100),
        queued_since=now - dt.timedelta(seconds=100),
        started_at=now - dt.timedelta(seconds=40),
        **job,
    )
    text = client.get("/metrics", HTTP_AUTHORIZATION="Bearer scrape-me").content.decode()
    assert 'portal_gpus{state="busy"} 1.0' in text and 'portal_gpus{state="free"} 2.0' in text
    assert 'portal_gpu_alerts_open{kind="temperature"} 1.0' in text
    assert 'portal_running{kind="notebook"} 1.0' in text and 'portal_running{kind="job"} 0.0' in text
    assert "portal_telemetry_tick_age_seconds " in text
    assert "portal_telemetry_samples_dropped_total 0.0" in text
    assert 'portal_celery_queue_length{queue="celery"}' in text
    assert 'portal_jobs{state="queued"} 1.0' in text and 'portal_jobs{state="running"} 1.0' in text
    oldest = float(text.split('portal_job_queue_wait_seconds{stat="oldest_queued"} ')[1].split()[0])
    assert 299 <= oldest < 400
    assert 'portal_job_queue_wait_seconds{stat="mean_last_hour"} 60.0' in text


def test_the_key_command_prints_a_key_last_and_revokes(lab, capsys):
    call_command("gpu_agent_token", "gpu01")
    key = capsys.readouterr().out.strip().splitlines()[-1]
    assert agent_token_check(key).node.name == "gpu01"
    call_command("gpu_agent_token", "gpu01", "--revoke")
    assert agent_token_check(key) is None
    with pytest.raises(CommandError, match="No node named"):
        call_command("gpu_agent_token", "gpu99")


class FakeNvml(types.SimpleNamespace):
    """What pynvml looks like on a node with two GPUs, one of which cannot report power and had an Xid."""

    class NVMLError(Exception):
        pass

    NVML_TEMPERATURE_GPU = 0
    nvmlEventTypeXidCriticalError = 8

    def __init__(self):
        super().__init__(events=[types.SimpleNamespace(device="h1", eventData=79)], shut=False)

    def nvmlInit(self):
        pass

    def nvmlShutdown(self):
        self.shut = True

    def nvmlDeviceGetCount(self):
        return 2

    def nvmlDeviceGetHandleByIndex(self, index):
        return f"h{index}"

    def nvmlEventSetCreate(self):
        return "events"

    def nvmlDeviceRegisterEvents(self, handle, kinds, events):
        pass

    def nvmlEventSetWait(self, events, timeout_ms):
        if not self.events:
            raise self.NVMLError("timeout")
        return self.events.pop()

    def nvmlEventSetFree(self, events):
        pass

    def nvmlDeviceGetUUID(self, handle):
        return f"GPU-{handle}"

    def nvmlDeviceGetName(self, handle):
        return b"NVIDIA GeForce RTX 4090"

    def nvmlDeviceGetUtilizationRates(self, handle):
        return types.SimpleNamespace(gpu=88, memory=40)

    def nvmlDeviceGetMemoryInfo(self, handle):
        return types.SimpleNamespace(used=8 * 2**30, total=24564 * 2**20, free=0)

    def nvmlDeviceGetTemperature(self, handle, sensor):
        return 64

    def nvmlDeviceGetPowerUsage(self, handle):
        if handle == "h1":
            raise self.NVMLError("not supported")
        return 312_500

    def nvmlDeviceGetTotalEnergyConsumption(self, handle):
        return 9_000_000


def test_the_nvml_reader_turns_nvml_into_push_samples():
    nvml = FakeNvml()
    reader = NvmlReader(nvml)
    first, second = reader.read()
    assert first["uuid"] == "GPU-h0" and first["model"] == "NVIDIA GeForce RTX 4090"
    assert (first["util_pct"], first["mem_used_mb"], first["mem_total_mb"]) == (88.0, 8192.0, 24564.0)
    assert (first["temp_c"], first["power_w"], first["energy_j"], first["xid"]) == (64, 312.5, 9000.0, 0)
    assert second["power_w"] is None and second["xid"] == 79
    reader.close()
    assert nvml.shut


def test_the_agent_command_pushes_to_a_live_portal(live_server, lab, monkeypatch, capsys):
    import sys

    monkeypatch.setitem(sys.modules, "pynvml", FakeNvml())
    # The live server has one GPU per node; the fake has two: the portal must refuse index 1.
    call_command("gpu_agent_token", "gpu01")
    key = capsys.readouterr().out.strip().splitlines()[-1]
    monkeypatch.setenv("GPU_AGENT_TOKEN", key)
    with pytest.raises(CommandError, match="The push failed: 400"):
        call_command("gpu_agent", "--portal", live_server.url, "--node", "gpu01", "--once")
    Node.objects.get(name="gpu01").gpus.create(index=1, model="NVIDIA GeForce RTX 4090", memory_mb=24564)
    monkeypatch.setitem(sys.modules, "pynvml", FakeNvml())  # a fresh driver: its Xid event not yet read
    call_command("gpu_agent", "--portal", live_server.url, "--node", "gpu01", "--once")
    assert "pushed 2 GPU sample(s) for gpu01" in capsys.readouterr().out
    pushed = sorted(store.read_inboxes(["gpu01"]), key=lambda s: s.index)
    assert [(s.index, s.util_pct, s.xid) for s in pushed] == [(0, 88.0, 0), (1, 88.0, 79)]
    with pytest.raises(CommandError, match="refused this node's key"):
        call_command("gpu_agent", "--portal", live_server.url, "--node", "gpu02", "--once")
