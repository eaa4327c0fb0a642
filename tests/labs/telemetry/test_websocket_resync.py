"""/ws/gpus/: a client's resync gets a snapshot at most once per TELEMETRY_RESYNC_MIN_S per connection (a 17-byte
ask for some 12 KB); one asked for sooner comes, once, in place of the first update after the interval."""

import pytest
from asgiref.sync import async_to_sync

import labs.telemetry.consumers
from tests.labs.telemetry import test_websocket
from tests.labs.telemetry.test_collector import clean_store  # noqa: F401  (fixture)
from tests.labs.telemetry.test_websocket import collector, connect, token_headers

pytestmark = pytest.mark.django_db(transaction=True)
lab = test_websocket.lab  # the fixture: four nodes, DL-101 and its people


@pytest.fixture
def clock(monkeypatch):
    """The resync limit's clock, moved by the test (never slept)."""
    state = {"now": 1000.0}
    monkeypatch.setattr(labs.telemetry.consumers, "monotonic", lambda: state["now"])

    def move(seconds: float) -> None:
        state["now"] += seconds

    return move


def test_resyncs_beyond_one_per_interval_are_not_answered_at_once_and_one_is_owed(lab, settings, clock):
    settings.TELEMETRY_RESYNC_MIN_S = 5
    tick = collector()
    headers = token_headers(lab["student"])

    async def scenario():
        await tick.tick()
        socket, connected = await connect(headers)
        assert connected
        seen = [await socket.receive_json_from()]  # the first snapshot
        await socket.send_to(text_data='{"type": "resync"}')  # the first ask is answered
        seen.append(await socket.receive_json_from())
        clock(1)
        for _ in range(20):  # 20 more within the interval: 340 bytes that must not buy 20 snapshots
            await socket.send_to(text_data='{"type": "resync"}')
        await socket.send_to(text_data='{"type": "ping"}')
        seen.append(await socket.receive_json_from())
        await tick.tick()  # still within the interval: an update as usual
        seen.append(await socket.receive_json_from())
        clock(5)
        await tick.tick()  # the interval is over: the owed snapshot instead of the update
        seen.append(await socket.receive_json_from())
        await tick.tick()  # owed once, however many were asked: then updates again
        seen.append(await socket.receive_json_from())
        await socket.disconnect()
        return seen

    seen = async_to_sync(scenario)()
    assert [m["type"] for m in seen] == ["snapshot", "snapshot", "pong", "update", "snapshot", "update"]
    assert seen[4]["seq"] == seen[3]["seq"] + 1 and len(seen[4]["gpus"]) == 4
    assert seen[5]["seq"] == seen[4]["seq"] + 1


def test_a_resync_after_the_interval_is_answered_at_once(lab, settings, clock):
    settings.TELEMETRY_RESYNC_MIN_S = 5
    tick = collector()
    headers = token_headers(lab["student"])

    async def scenario():
        await tick.tick()
        socket, connected = await connect(headers)
        assert connected
        seen = [await socket.receive_json_from()]
        for _ in range(3):
            await socket.send_to(text_data='{"type": "resync"}')
            seen.append(await socket.receive_json_from())
            clock(5)
        await socket.disconnect()
        return seen

    assert [m["type"] for m in async_to_sync(scenario)()] == ["snapshot"] * 4
