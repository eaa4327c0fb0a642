import textwrap
from decimal import Decimal

import pytest
from django.core.management import CommandError, call_command

from accounts.errors import Conflict
from labs.backends.inventory import LocalInventory
from labs.inventory import InventoryError, demo_specs, parse_csv, parse_yaml
from labs.models import Gpu, Node, NodeStatus
from labs.services import inventory_sync, node_cordon, node_uncordon
from tests.factories import AllocationFactory, UserFactory

YAML = textwrap.dedent(
    """
    nodes:
      - name: gpu01
        labels: {rack: r1}
        gpus:
          - {index: 0, model: NVIDIA GeForce RTX 4090, memory_mb: 24564, uuid: GPU-aaa}
      - name: gpu02
        gpus: [{index: 0}]
    """
)


def test_yaml_inventory_parses():
    specs = parse_yaml(YAML)
    assert [s.name for s in specs] == ["gpu01", "gpu02"]
    assert specs[0].labels == {"rack": "r1"} and specs[0].gpus[0].uuid == "GPU-aaa"
    assert specs[1].gpus[0].memory_mb == 24564


def test_csv_inventory_parses_one_row_per_gpu():
    specs = parse_csv(
        "node,gpu_index,gpu_model,gpu_memory_mb,gpu_uuid,labels\n"
        "gpu01,0,NVIDIA GeForce RTX 4090,24564,GPU-1,rack=r1;row=2\n"
        "gpu01,1,,,GPU-2,\n"
    )
    assert len(specs) == 1 and len(specs[0].gpus) == 2
    assert specs[0].labels == {"rack": "r1", "row": "2"}


@pytest.mark.parametrize(
    "text,message",
    [
        ("nodes: [", "not valid YAML"),
        ("gpus: []", "top-level 'nodes:'"),
        ("nodes:\n  - name: GPU_01\n", "not a valid node name"),
        ("nodes:\n  - name: a\n  - name: a\n", "listed twice"),
        ("nodes:\n  - name: a\n    gpus: [{index: 0, memory_mb: lots}]\n", "memory_mb must be a whole number"),
        ("nodes:\n  - name: a\n    gpus: [{index: 0}, {index: 0}]\n", "same GPU index twice"),
    ],
)
def test_bad_yaml_says_what_is_wrong(text, message):
    with pytest.raises(InventoryError, match=message):
        parse_yaml(text)


def test_bad_csv_names_the_line():
    with pytest.raises(InventoryError, match="line 3: gpu_index must be a whole number"):
        parse_csv("node,gpu_index\ngpu01,0\ngpu01,x\n")


@pytest.mark.django_db
def test_sync_creates_then_updates_and_never_duplicates():
    report = inventory_sync(specs=demo_specs(40), source="demo")
    assert len(report.created) == 40
    assert Node.objects.count() == 40 and Gpu.objects.count() == 40
    again = inventory_sync(specs=demo_specs(40), source="demo")
    assert again.created == [] and again.updated == []
    assert Gpu.objects.filter(model="NVIDIA GeForce RTX 4090", memory_mb=24564).count() == 40


@pytest.mark.django_db
def test_prune_marks_missing_nodes_down_and_keeps_the_ledger():
    inventory_sync(specs=demo_specs(3), source="demo")
    AllocationFactory(gpu=Gpu.objects.get(node__name="gpu03"))
    report = inventory_sync(specs=demo_specs(2), source="demo", prune=True)
    assert report.marked_down == ["gpu03"]
    gone = Node.objects.get(name="gpu03")
    assert gone.status == NodeStatus.DOWN and "No longer" in gone.status_reason
    assert gone.gpus.count() == 1


@pytest.mark.django_db
def test_load_inventory_command(tmp_path, capsys):
    path = tmp_path / "lab.yaml"
    path.write_text(YAML)
    call_command("load_inventory", str(path))
    assert "2 nodes added" in capsys.readouterr().out
    assert set(Node.objects.values_list("name", flat=True)) == {"gpu01", "gpu02"}


@pytest.mark.django_db
def test_load_inventory_bad_file_changes_nothing(tmp_path):
    path = tmp_path / "lab.yaml"
    path.write_text("nodes:\n  - name: ok1\n  - name: Bad Name\n")
    with pytest.raises(CommandError, match="not a valid node name"):
        call_command("load_inventory", str(path))
    with pytest.raises(CommandError, match="must end in .yaml"):
        call_command("load_inventory", str(tmp_path / "lab.txt"))
    assert not Node.objects.exists()


@pytest.mark.django_db
def test_seed_demo_makes_forty_4090_nodes_and_users_of_each_role(capsys, settings):
    settings.DEBUG = True
    call_command("seed_demo")
    call_command("seed_demo")  # twice is harmless
    assert Node.objects.count() == 40
    assert list(Node.objects.values_list("name", flat=True))[:2] == ["gpu01", "gpu02"]
    assert Node.objects.last().name == "gpu40"
    from accounts.models import User

    assert set(User.objects.values_list("role", flat=True)) == {"student", "teacher", "admin"}
    assert "student-demo" in capsys.readouterr().out
    # A class tomorrow on 8 nodes, and a whole-lab request waiting for the admin; made once.
    from labs.models import Reservation

    booked = {r.title: (r.status, r.nodes.count()) for r in Reservation.objects.all()}
    assert booked == {"DL-101 lab session": ("approved", 8), "NLP-220 final runs": ("pending", 40)}
    # Budgets in money: two courses' terms and a student's month; made once.
    from labs.models import Budget

    budgets = {(b.name, b.on_exceed, b.gpu_hours, b.price_per_gpu_hour) for b in Budget.objects.all()}
    assert budgets == {
        ("DL-101 term budget", "block", 400, Decimal("0.45")),
        ("CV-210 term budget", "warn", 250, Decimal("0.45")),
        ("student monthly budget", "warn", 40, Decimal("0.45")),
    }


@pytest.mark.django_db
def test_seed_demo_refuses_with_debug_off_unless_forced(settings):
    settings.DEBUG = False
    with pytest.raises(CommandError, match="public passwords"):
        call_command("seed_demo")
    assert not Node.objects.exists()
    call_command("seed_demo", "--force", "--nodes", "2")
    assert Node.objects.count() == 2


@pytest.mark.django_db
def test_cordon_and_uncordon_through_the_local_backend():
    inventory_sync(specs=demo_specs(1), source="demo")
    node = Node.objects.get()
    admin = UserFactory(role="admin")
    node = node_cordon(node=node, by=admin, backend=LocalInventory(""))
    assert node.status == NodeStatus.CORDONED and admin.username in node.status_reason
    node = node_uncordon(node=node, by=admin, backend=LocalInventory(""))
    assert node.status == NodeStatus.READY and node.status_reason == ""


@pytest.mark.django_db
def test_a_down_node_cannot_be_cordoned():
    inventory_sync(specs=demo_specs(1), source="demo")
    Node.objects.update(status=NodeStatus.DOWN)
    with pytest.raises(Conflict, match="is down"):
        node_cordon(node=Node.objects.get(), by=UserFactory(role="admin"), backend=LocalInventory(""))


@pytest.mark.django_db
def test_admin_console_cordon_action(client):
    inventory_sync(specs=demo_specs(2), source="demo")
    admin = UserFactory(role="admin")
    client.force_login(admin)
    ids = list(Node.objects.values_list("pk", flat=True))
    response = client.post("/admin/labs/node/", {"action": "cordon", "_selected_action": ids}, follow=True)
    assert response.status_code == 200
    assert "Cordoned: gpu01, gpu02." in response.content.decode()
    assert set(Node.objects.values_list("status", flat=True)) == {NodeStatus.CORDONED}


@pytest.mark.django_db
def test_admin_console_cordon_of_a_down_node_says_why_and_changes_nothing(client):
    inventory_sync(specs=demo_specs(2), source="demo")
    Node.objects.filter(name="gpu02").update(status=NodeStatus.DOWN)
    client.force_login(UserFactory(role="admin"))
    ids = list(Node.objects.values_list("pk", flat=True))
    page = client.post("/admin/labs/node/", {"action": "cordon", "_selected_action": ids}, follow=True)
    text = page.content.decode()
    assert "Cordoned: gpu01." in text
    assert "Gpu02: gpu02 is down; it cannot be cordoned until it is back." in text  # the admin capitalises
    assert dict(Node.objects.values_list("name", "status")) == {"gpu01": "cordoned", "gpu02": "down"}


@pytest.mark.django_db
def test_a_pruned_node_comes_back_when_the_file_lists_it_again():
    inventory_sync(specs=demo_specs(2), source="file")
    inventory_sync(specs=demo_specs(1), source="file", prune=True)
    assert Node.objects.get(name="gpu02").status == NodeStatus.DOWN
    inventory_sync(specs=demo_specs(2), source="file", prune=True)
    back = Node.objects.get(name="gpu02")
    assert back.status == NodeStatus.READY and back.status_reason == ""
