"""/ws/gpus/ on the real ASGI app (portal.asgi.application) with the Redis channel layer.

Each role connects as a browser would (session cookie, Origin) or as a script (API token), gets a
snapshot, then the collector ticks and each gets the same update cut to what it may see.
"""

import json

import pytest
from asgiref.sync import async_to_sync
from asgiref.testing import ApplicationCommunicator
from channels.db import database_sync_to_async
from django.test import Client

from accounts.services import token_issue
from labs.inventory import demo_specs
from labs.models import Node
from labs.services import inventory_sync
from labs.telemetry.collector import Collector
from labs.telemetry.health import HealthWatch
from labs.telemetry.simulator import GpuSimulator
from labs.telemetry.sources import SimulatorSource
from portal.asgi import application
from tests.factories import PASSWORD, AllocationFactory, CourseFactory, EnrollmentFactory, UserFactory
from tests.labs.telemetry.test_collector import clean_store  # noqa: F401  (fixture)

pytestmark = pytest.mark.django_db(transaction=True)
ORIGIN = (b"origin", b"http://testserver")


@pytest.fixture
def lab(clean_store):  # noqa: F811
    """Four nodes; a course DL-101 with its teacher and a student; another student; an admin; three holders."""
    inventory_sync(specs=demo_specs(4), source="demo")
    gpus = {node.name: node.gpus.get() for node in Node.objects.prefetch_related("gpus")}
    people = {
        "student": UserFactory(username="sofia", role="student"),
        "other": UserFactory(username="omar", role="student"),
        "teacher": UserFactory(username="tess", role="teacher"),
        "admin": UserFactory(username="ada", role="admin"),
    }
    course = CourseFactory(code="DL-101")
    course.teachers.add(people["teacher"])
    EnrollmentFactory(user=people["student"], course=course)
    AllocationFactory(user=people["student"], course=course, gpu=gpus["gpu01"], kind="notebook", ref="notebook:1")
    AllocationFactory(user=people["other"], gpu=gpus["gpu02"], kind="job", ref="job:7#1")
    AllocationFactory(user=people["teacher"], course=course, gpu=gpus["gpu03"], kind="reservation", ref="reservation:3")
    return people


def collector(**kwargs):
    watch = HealthWatch(temp_threshold_c=87, hold_s=0, xid_ignored=set())
    source = SimulatorSource(GpuSimulator(seed=5, faults=["gpu04:temp"]))
    return Collector(source=source, interval_s=1, health=watch, **kwargs)


def token_headers(user):
    return [(b"authorization", f"Token {token_issue(user=user)}".encode())]


def session_headers(user, origin=ORIGIN):
    client = Client()
    assert client.login(username=user.username, password=PASSWORD)
    cookie = f"sessionid={client.cookies['sessionid'].value}".encode()
    return [origin, (b"cookie", cookie)] if origin else [(b"cookie", cookie)]


def by_node(message):
    return {gpu["node"]: gpu for gpu in message["gpus"]}


# How long to wait for what must come: only a failing test waits this long, and a loaded machine (a CPU hog, a suite
# beside this one) can take seconds to resync a hub.
WAIT_S = 30


class Socket(ApplicationCommunicator):
    """A WebSocket client talking ASGI to the application (channels.testing needs daphne, which we do not ship)."""

    def __init__(self, path, headers):
        scope = {"type": "websocket", "path": path, "query_string": b"", "headers": headers, "subprotocols": []}
        scope.update(client=("127.0.0.1", 50000), server=("testserver", 80))
        super().__init__(application, scope)

    async def connect(self, timeout=WAIT_S):
        await self.send_input({"type": "websocket.connect"})
        return (await self.receive_output(timeout))["type"] == "websocket.accept"

    async def send_to(self, text_data=None, bytes_data=None):
        key, value = ("text", text_data) if text_data is not None else ("bytes", bytes_data)
        await self.send_input({"type": "websocket.receive", key: value})

    async def receive_json_from(self, timeout=WAIT_S):
        message = await self.receive_output(timeout)
        assert message["type"] == "websocket.send", message
        return json.loads(message["text"])

    async def disconnect(self):
        await self.send_input({"type": "websocket.disconnect", "code": 1000})
        await self.wait(timeout=WAIT_S)


async def connect(headers, path="/ws/gpus/"):
    socket = Socket(path, headers)
    connected = await socket.connect()
    return socket, connected


def test_each_role_sees_what_it_may_know_first_in_the_snapshot_then_in_updates(lab):
    people = lab
    headers = {
        "student": session_headers(people["student"]),
        "other": token_headers(people["other"]),
        "teacher": session_headers(people["teacher"]),
        "admin": token_headers(people["admin"]) + [ORIGIN],
    }
    tick = collector()

    def take_gpu04():
        gpu = Node.objects.get(name="gpu04").gpus.get()
        AllocationFactory(user=people["other"], gpu=gpu, kind="notebook", ref="notebook:4")

    async def scenario():
        await tick.tick()
        sockets = {}
        for role, role_headers in headers.items():
            communicator, connected = await connect(role_headers)
            assert connected, role
            sockets[role] = communicator
        snapshots = {role: await s.receive_json_from(timeout=WAIT_S) for role, s in sockets.items()}
        await database_sync_to_async(take_gpu04)()
        await tick.tick()
        updates = {role: await s.receive_json_from(timeout=WAIT_S) for role, s in sockets.items()}
        for communicator in sockets.values():
            await communicator.disconnect()
        return snapshots, updates

    snapshots, updates = async_to_sync(scenario)()
    assert {m["type"] for m in snapshots.values()} == {"snapshot"}
    assert len({m["seq"] for m in snapshots.values()}) == 1
    assert {m["type"] for m in updates.values()} == {"update"}
    assert {m["seq"] for m in updates.values()} == {snapshots["admin"]["seq"] + 1}

    def holders(message, node):
        holder = by_node(message)[node]["holder"]
        return (
            None
            if holder is None
            else ([(h["user"], h["kind"], h["mine"]) for h in holder["holders"]], holder["others"])
        )

    student = snapshots["student"]
    assert len(student["gpus"]) == 4
    assert holders(student, "gpu01") == ([("sofia", "notebook", True)], 0)
    assert holders(student, "gpu02") == ([], 1)  # busy, and no more than that
    assert holders(student, "gpu03") == ([("tess", "reservation", False)], 0)  # her course's reservation
    assert holders(student, "gpu04") is None
    available = {node for node, gpu in by_node(student).items() if gpu["available"]}
    assert available == {"gpu03", "gpu04"}
    assert "alerts" not in by_node(student)["gpu04"]

    other = snapshots["other"]
    assert holders(other, "gpu01") == ([], 1)
    assert holders(other, "gpu02") == ([("omar", "job", True)], 0)
    assert holders(other, "gpu03") == ([], 1)
    assert {node for node, gpu in by_node(other).items() if gpu["available"]} == {"gpu04"}

    teacher = snapshots["teacher"]
    assert holders(teacher, "gpu01") == ([("sofia", "notebook", False)], 0)  # a student of hers
    assert holders(teacher, "gpu02") == ([], 1)
    assert holders(teacher, "gpu03") == ([("tess", "reservation", True)], 0)

    admin = snapshots["admin"]
    assert holders(admin, "gpu02") == ([("omar", "job", False)], 0)
    assert holders(admin, "gpu01") == ([("sofia", "notebook", False)], 0)
    assert by_node(admin)["gpu04"]["alerts"][0]["kind"] == "temperature"

    # Updates carry each changed GPU's identity, sample time and changed fields, cut to the viewer.
    for role, message in updates.items():
        assert message["gpus"], role
        for change in message["gpus"]:
            assert change.keys() >= {"node", "index", "sampled_at"} and len(change) > 3
            assert "holders" not in change and ("alerts" not in change or role == "admin")
    # omar took gpu04: its holder changed, and each sees that as they may.
    assert (
        holders(updates["student"], "gpu04") == ([], 1) and by_node(updates["student"])["gpu04"]["available"] is False
    )
    assert holders(updates["other"], "gpu04") == ([("omar", "notebook", True)], 0)
    assert holders(updates["admin"], "gpu04") == ([("omar", "notebook", False)], 0)
    # gpu01's holders did not change: no holder in its update, only its readings.
    if "gpu01" in by_node(updates["admin"]):
        assert "holder" not in by_node(updates["admin"])["gpu01"]


@pytest.mark.parametrize(
    "case",
    ["anonymous", "cross-origin session", "bad token with a good session", "no origin and no token", "inactive user"],
)
def test_handshakes_that_are_refused(lab, case):
    people = lab
    if case == "anonymous":
        headers = [ORIGIN]
    elif case == "cross-origin session":
        headers = session_headers(people["admin"], origin=(b"origin", b"https://evil.example"))
    elif case == "bad token with a good session":
        headers = session_headers(people["admin"]) + [(b"authorization", b"Token not-a-real-token")]
    elif case == "no origin and no token":
        headers = session_headers(people["admin"], origin=None)
    else:
        headers = token_headers(people["other"])
        people["other"].is_active = False
        people["other"].save()

    async def scenario():
        communicator, connected = await connect(headers)
        await communicator.disconnect()
        return connected

    assert async_to_sync(scenario)() is False


def test_other_paths_are_refused_not_crashed(lab):
    headers = token_headers(lab["admin"])

    async def scenario():
        communicator, connected = await connect(headers, path="/ws/nothing-here/")
        await communicator.disconnect()
        return connected

    assert async_to_sync(scenario)() is False


def test_bad_input_from_a_client_changes_nothing_and_breaks_nothing(lab):
    tick = collector()
    headers = token_headers(lab["student"])

    async def scenario():
        await tick.tick()
        communicator, connected = await connect(headers)
        assert connected
        snapshot = await communicator.receive_json_from(timeout=WAIT_S)
        await communicator.send_to(text_data="{not json")
        await communicator.send_to(bytes_data=b"\x00\xff" * 1000)
        await communicator.send_to(text_data="x" * 100_000)
        await communicator.send_to(text_data='{"type": "gpus.tick", "seq": 999999, "gpus": []}')
        await communicator.send_to(text_data='["type", "ping"]')
        await communicator.send_to(text_data='{"type": "ping"}')
        pong = await communicator.receive_json_from(timeout=WAIT_S)
        await tick.tick()
        update = await communicator.receive_json_from(timeout=WAIT_S)
        await communicator.send_to(text_data='{"type": "resync"}')
        again = await communicator.receive_json_from(timeout=WAIT_S)
        await communicator.disconnect()
        return snapshot, pong, update, again

    snapshot, pong, update, again = async_to_sync(scenario)()
    assert pong == {"type": "pong"}
    assert update["type"] == "update" and update["seq"] == snapshot["seq"] + 1
    assert again["type"] == "snapshot" and again["seq"] == update["seq"] and len(again["gpus"]) == 4


def test_a_slow_client_gets_a_fresh_snapshot_instead_of_a_backlog(lab, settings):
    settings.TELEMETRY_CLIENT_QUEUE = 2
    tick = collector()
    headers = token_headers(lab["admin"])

    async def scenario():
        await tick.tick()
        communicator, connected = await connect(headers)
        assert connected
        snapshot = await communicator.receive_json_from(timeout=WAIT_S)
        from labs.telemetry.fanout import get_hub

        (consumer,) = get_hub().subscribers
        # Five updates arrive before the client's socket takes the next one (no await in between).
        for n in range(1, 6):
            consumer.deliver(snapshot["seq"] + n, '{"type":"update"}')
        backlog = (len(consumer._outbox), consumer._resync)
        message = await communicator.receive_json_from(timeout=WAIT_S)
        await communicator.disconnect()
        return backlog, message

    backlog, message = async_to_sync(scenario)()
    assert backlog[0] <= 2 and backlog[1] is True
    assert message["type"] == "snapshot" and len(message["gpus"]) == 4


def test_viewers_are_looked_at_again_a_deactivated_account_is_closed_a_new_course_resyncs(lab, settings):
    settings.TELEMETRY_VIEWER_REFRESH_S = 0.3
    people = lab
    student_headers, other_headers = token_headers(people["student"]), token_headers(people["other"])
    tick = collector()

    def change_people():
        people["student"].is_active = False
        people["student"].save()
        # omar joins DL-101: tess's reservation on gpu03 is now one he may use.
        EnrollmentFactory(user=people["other"], course=people["teacher"].courses_taught.get())

    async def scenario():
        await tick.tick()
        student, connected = await connect(student_headers)
        assert connected
        other, connected = await connect(other_headers)
        assert connected
        await student.receive_json_from()
        before = await other.receive_json_from()
        await database_sync_to_async(change_people)()
        closed = await student.receive_output(timeout=WAIT_S)
        after = await other.receive_json_from(timeout=WAIT_S)
        await other.disconnect()
        return closed, before, after

    closed, before, after = async_to_sync(scenario)()
    assert closed == {"type": "websocket.close", "code": 4403}
    assert by_node(before)["gpu03"]["available"] is False
    assert after["type"] == "snapshot" and by_node(after)["gpu03"]["available"] is True


def test_a_gap_in_the_collectors_sequence_gives_everyone_a_fresh_snapshot(lab):
    from channels.layers import get_channel_layer

    tick = collector()
    headers = token_headers(lab["admin"])

    async def scenario():
        await tick.tick()
        socket, connected = await connect(headers)
        assert connected
        snapshot = await socket.receive_json_from()
        layer = get_channel_layer()
        await layer.group_send("gpus", {"type": "gpus.tick", "gpus": []})  # no sequence number: ignored
        tick.seq += 5  # as if five updates never reached this server
        await tick.tick()
        resent = await socket.receive_json_from()
        await tick.tick()
        update = await socket.receive_json_from()
        await socket.disconnect()
        return snapshot, resent, update

    snapshot, resent, update = async_to_sync(scenario)()
    assert resent["type"] == "snapshot" and resent["seq"] == snapshot["seq"] + 6 and len(resent["gpus"]) == 4
    assert update["type"] == "update" and update["seq"] == resent["seq"] + 1


def test_when_the_collector_goes_quiet_new_snapshots_show_every_gpu_stale(lab, settings):
    tick = collector()
    headers = token_headers(lab["student"])

    async def scenario():
        await tick.tick()
        first, connected = await connect(headers)
        assert connected
        fresh = await first.receive_json_from()
        settings.TELEMETRY_STALE_AFTER_S = 0  # as if 30 s had passed without a word from the collector
        second, connected = await connect(headers)
        assert connected
        quiet = await second.receive_json_from()
        await first.disconnect()
        await second.disconnect()
        return fresh, quiet

    fresh, quiet = async_to_sync(scenario)()
    assert not any(gpu["stale"] for gpu in fresh["gpus"])
    assert all(gpu["stale"] and not gpu["available"] for gpu in quiet["gpus"])
