"""Celery and Channels on the real Redis."""

import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.conf import settings

from labs.models import Node
from portal.celery import app as celery_app

ROOT = Path(__file__).resolve().parent.parent


def test_celery_is_json_only_with_late_acks_and_time_limits():
    conf = celery_app.conf
    assert conf.task_serializer == "json" and conf.accept_content == ["json"]
    assert conf.task_acks_late is True and conf.task_reject_on_worker_lost is True
    assert conf.task_time_limit == 300 and conf.task_soft_time_limit == 240
    assert conf.broker_url.startswith("redis://")


def test_a_request_thread_that_queues_a_task_reuses_the_one_result_backend():
    # Under ASGI each request is a new thread: Celery built its (disabled) result backend again in each, scanning
    # every installed package's entry points, some 10-20 ms of CPU per Start pressed (bench_portal, issue 32).
    import threading

    seen = []
    threads = [threading.Thread(target=lambda: seen.append(celery_app.backend)) for _ in range(2)]
    for thread in threads:
        thread.start()
        thread.join()
    assert seen[0] is seen[1] is celery_app.backend


@pytest.mark.django_db(transaction=True)
@pytest.mark.filterwarnings("ignore::celery.exceptions.AlwaysEagerIgnored")  # send_task always goes to the broker
def test_a_real_worker_runs_the_inventory_sync(tmp_path):
    inventory = tmp_path / "lab.yaml"
    inventory.write_text("nodes:\n  - name: w01\n    gpus: [{index: 0}]\n  - name: w02\n    gpus: [{index: 0}]\n")
    db = settings.DATABASES["default"]
    queue = f"test-{uuid.uuid4().hex[:8]}"
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "portal.settings",
        "DATABASE_URL": f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}",
        "REDIS_URL": settings.REDIS_URL,
        "INVENTORY_BACKEND": "local",
        "INVENTORY_FILE": str(inventory),
    }
    worker = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "portal",
            "worker",
            "--pool",
            "solo",
            "-Q",
            queue,
            "--without-gossip",
            "--without-mingle",
            "--without-heartbeat",
            "-l",
            "warning",
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        celery_app.send_task("labs.tasks.inventory_sync", queue=queue)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and Node.objects.count() < 2:
            time.sleep(0.3)
        assert sorted(Node.objects.values_list("name", flat=True)) == ["w01", "w02"]
    finally:
        worker.terminate()
        output = worker.communicate(timeout=30)[0]
    assert "Traceback" not in output, output


def test_channel_layer_is_redis_and_delivers_group_messages():
    layer = get_channel_layer()
    assert type(layer).__module__.startswith("channels_redis")
    assert layer.capacity >= 1000

    async def roundtrip():
        channel = await layer.new_channel()
        await layer.group_add("test-gpus", channel)
        for n in range(300):  # more than the default capacity of 100
            await layer.group_send("test-gpus", {"type": "gpu.update", "n": n})
        received = [await layer.receive(channel) for _ in range(300)]
        await layer.group_discard("test-gpus", channel)
        return [message["n"] for message in received]

    assert async_to_sync(roundtrip)() == list(range(300))
