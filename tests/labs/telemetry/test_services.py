"""telemetry.services.agent_push: one check of each pushed reading (the collector's), the whole push or nothing."""

import logging

import pytest

from accounts.errors import InvalidInput, NotPermitted
from labs.inventory import demo_specs
from labs.models import Node
from labs.services import inventory_sync
from labs.telemetry import store
from labs.telemetry.agents import agent_token_issue
from labs.telemetry.samples import GpuSample, problem_with
from labs.telemetry.services import agent_push
from tests.labs.telemetry.test_collector import clean_store  # noqa: F401  (fixture)

pytestmark = pytest.mark.django_db

NOW = 1_767_600_000.0  # 2026-01-05 08:00 UTC


@pytest.fixture
def token(clean_store):  # noqa: F811
    inventory_sync(specs=demo_specs(2), source="demo")
    token, _ = agent_token_issue(node=Node.objects.get(name="gpu01"))
    return token


def reading(**values):
    return {"index": 0, "util_pct": 42.0, "mem_used_mb": 2048.0, "mem_total_mb": 24564.0, "temp_c": 55.0, **values}


def test_a_good_push_is_kept_and_a_reading_without_a_time_is_taken_as_now(token):
    assert agent_push(token=token, node="gpu01", samples=[reading(uuid="", model="RTX")], now=NOW) == 1
    (kept,) = store.read_inboxes(["gpu01"])
    assert (kept.node, kept.index, kept.sampled_at, kept.util_pct, kept.uuid, kept.model) == (
        "gpu01",
        0,
        NOW,
        42.0,
        None,
        "RTX",
    )


@pytest.mark.parametrize(
    "values,sentence",
    [
        ({"sampled_at": NOW + 3600}, "Sample 0, sampled_at: This time is in the future; check the node's clock."),
        (
            {"sampled_at": NOW - 3600},
            "Sample 0, sampled_at: This time is more than 5 minutes ago; send current samples and check the node's "
            "clock.",
        ),
        ({"mem_used_mb": 30_000.0}, "Sample 0, mem_used_mb: More memory used than the GPU has."),
        ({"temp_c": 10_000.0}, "Sample 0, temp_c: No GPU reads 10000; check the sensor."),
        ({"power_w": float("nan")}, "Sample 0, power_w: Give a number."),
    ],
)
def test_an_impossible_reading_refuses_the_whole_push_with_what_to_fix(token, values, sentence, caplog):
    # The collector's own check finds the same reading impossible: one rule for both ways in.
    assert problem_with(GpuSample(node="gpu01", **{"sampled_at": NOW, **reading(**values)}), now=NOW) is not None
    with caplog.at_level(logging.WARNING, logger="labs.telemetry"), pytest.raises(InvalidInput) as error:
        agent_push(token=token, node="gpu01", samples=[reading(index=0), {**reading(**values), "index": 0}], now=NOW)
    assert error.value.fields == {"samples": sentence.replace("Sample 0", "Sample 1")}
    assert "refused a push for gpu01" in caplog.text
    assert store.read_inboxes(["gpu01"]) == []


def test_another_nodes_name_or_an_unknown_gpu_is_refused(token):
    with pytest.raises(NotPermitted, match="This key belongs to node gpu01, not gpu02."):
        agent_push(token=token, node="gpu02", samples=[reading()], now=NOW)
    with pytest.raises(InvalidInput, match="GPU index 3 is not in the inventory of gpu01."):
        agent_push(token=token, node="gpu01", samples=[reading(), reading(index=3)], now=NOW)
    assert store.read_inboxes(["gpu01", "gpu02"]) == []
