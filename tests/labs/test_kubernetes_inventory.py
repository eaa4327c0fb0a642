"""The Kubernetes inventory backend against a fake API server on loopback."""

import pytest

from accounts.errors import BackendError
from labs.backends.inventory import KubernetesInventory
from labs.models import Node, NodeStatus
from labs.services import inventory_sync, node_cordon
from tests.factories import UserFactory
from tests.fakes.kube import FakeKube, gpu_node


@pytest.fixture
def kube(settings):
    fake = FakeKube().start()
    settings.KUBERNETES_API_URL = fake.url
    settings.KUBERNETES_TOKEN = "test-token"
    settings.KUBERNETES_TIMEOUT_S = 1
    yield fake
    fake.stop()


def test_lists_only_nodes_that_advertise_gpus(kube):
    kube.nodes = {
        "gpu01": gpu_node("gpu01"),
        "gpu02": gpu_node("gpu02", unschedulable=True),
        "gpu03": gpu_node("gpu03", ready=False),
        "cpu01": gpu_node("cpu01", gpus=0),
    }
    specs = {spec.name: spec for spec in KubernetesInventory().list_nodes()}
    assert set(specs) == {"gpu01", "gpu02", "gpu03"}
    assert specs["gpu01"].gpus[0].model == "NVIDIA GeForce RTX 4090"
    assert specs["gpu01"].gpus[0].memory_mb == 24564
    assert specs["gpu02"].unschedulable is True and specs["gpu03"].ready is False
    method, path, _ = kube.requests[0]
    assert (method, path.split("?")[0]) == ("GET", "/api/v1/nodes")


@pytest.mark.django_db
def test_sync_follows_the_cluster(kube):
    kube.nodes = {
        "gpu01": gpu_node("gpu01"),
        "gpu02": gpu_node("gpu02", unschedulable=True),
        "gpu03": gpu_node("gpu03", ready=False),
    }
    inventory_sync(specs=KubernetesInventory().list_nodes(), source="kubernetes", prune=True)
    status = dict(Node.objects.values_list("name", "status"))
    assert status == {"gpu01": NodeStatus.READY, "gpu02": NodeStatus.CORDONED, "gpu03": NodeStatus.DOWN}
    del kube.nodes["gpu01"]
    kube.nodes["gpu03"] = gpu_node("gpu03")
    report = inventory_sync(specs=KubernetesInventory().list_nodes(), source="kubernetes", prune=True)
    assert report.marked_down == ["gpu01"]
    assert Node.objects.get(name="gpu03").status == NodeStatus.READY


@pytest.mark.django_db
def test_cordon_patches_the_node(kube):
    kube.nodes = {"gpu01": gpu_node("gpu01")}
    inventory_sync(specs=KubernetesInventory().list_nodes(), source="kubernetes")
    node_cordon(node=Node.objects.get(), by=UserFactory(role="admin"), backend=KubernetesInventory())
    patch = [r for r in kube.requests if r[0] == "PATCH"]
    assert patch == [("PATCH", "/api/v1/nodes/gpu01", {"spec": {"unschedulable": True}})]
    assert kube.nodes["gpu01"]["spec"]["unschedulable"] is True


@pytest.mark.django_db
def test_failed_cordon_leaves_the_node_ready(kube):
    kube.nodes = {"gpu01": gpu_node("gpu01")}
    inventory_sync(specs=KubernetesInventory().list_nodes(), source="kubernetes")
    kube.fail_next(403, "Forbidden")
    with pytest.raises(BackendError) as error:
        node_cordon(node=Node.objects.get(), by=UserFactory(role="admin"), backend=KubernetesInventory())
    assert error.value.retryable is False and error.value.status == 403
    assert Node.objects.get().status == NodeStatus.READY


@pytest.mark.parametrize("status,retryable", [(500, True), (503, True), (429, True), (401, False), (404, False)])
def test_api_errors_say_whether_to_retry(kube, status, retryable):
    kube.fail_next(status)
    with pytest.raises(BackendError) as error:
        KubernetesInventory().list_nodes()
    assert error.value.retryable is retryable and error.value.status == status


def test_timeout_is_a_retryable_error(kube):
    kube.fail_next(0)
    with pytest.raises(BackendError) as error:
        KubernetesInventory().list_nodes()
    assert error.value.retryable is True


def test_bearer_token_is_sent(kube, settings):
    seen = {}

    original = kube._server.RequestHandlerClass.do_GET

    def spy(handler):
        seen["auth"] = handler.headers.get("Authorization")
        return original(handler)

    kube._server.RequestHandlerClass.do_GET = spy
    KubernetesInventory().list_nodes()
    assert seen["auth"] == "Bearer test-token"
