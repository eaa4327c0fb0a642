"""The portal on a machine with a real NVIDIA GPU, end to end: never part of the tests or CI (they have no GPU).

    python scripts/device_check.py            # prints what it saw; exits 1 when a check fails

1. NVML as the node agent reads it (labs.telemetry.nvml.NvmlReader) against `nvidia-smi` on the same GPU.
2. A PyTorch training job submitted as the demo teacher, scheduled, dispatched by the local backend into the
   bubblewrap sandbox (an unprivileged uid, no capabilities, seccomp), followed to its end; while it runs the
   agent's NVML samples are pushed for the job's node and the collector shows the GPU busy with its holder.
3. The ledger books the job's GPU time to its owner.

It runs the embedded defaults (SQLite in a fresh folder, tasks in-process), needs root (setpriv) and bwrap on
PATH, and the Python that runs it must have torch with CUDA (the job runs this interpreter inside the sandbox).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TRAIN_SECONDS = int(os.environ.get("DEVICE_CHECK_TRAIN_S", "40"))
# A rehearsal without a GPU (DEVICE_CHECK_DRY=1): a plain Python job and made-up NVML readings, to test the plumbing.
DRY = os.environ.get("DEVICE_CHECK_DRY") == "1"
FAILED: list[str] = []


def check(ok: bool, what: str) -> None:
    print(("PASS " if ok else "FAIL ") + what, flush=True)
    if not ok:
        FAILED.append(what)


def nvidia_smi() -> list[dict[str, str]]:
    fields = "index,uuid,name,memory.total,memory.used,utilization.gpu,temperature.gpu,power.draw"
    out = subprocess.run(  # noqa: S603 - a fixed command line
        ["nvidia-smi", f"--query-gpu={fields}", "--format=csv,noheader,nounits"],  # noqa: S607 - the driver's tool
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    names = fields.split(",")
    return [dict(zip(names, (v.strip() for v in line.split(",")), strict=True)) for line in out.splitlines()]


def compare_nvml() -> None:
    from labs.telemetry.nvml import NvmlReader

    reader = NvmlReader()
    try:
        ours = reader.read()
    finally:
        reader.close()
    theirs = nvidia_smi()
    print("nvidia-smi:", json.dumps(theirs), flush=True)
    print("NvmlReader:", json.dumps(ours, default=str), flush=True)
    check(len(ours) == len(theirs) and len(ours) > 0, f"NVML sees {len(ours)} GPU(s), nvidia-smi {len(theirs)}")
    for mine, smi in zip(ours, theirs, strict=False):
        check(mine["uuid"] == smi["uuid"], f"GPU {mine['index']}: same UUID {smi['uuid']}")
        check(mine["model"] == smi["name"], f"GPU {mine['index']}: same model {smi['name']!r}")
        check(abs(mine["mem_total_mb"] - float(smi["memory.total"])) <= 1, "same total memory (MiB)")
        check(abs(mine["temp_c"] - float(smi["temperature.gpu"])) <= 3, "temperature within 3 °C")
        if mine["power_w"] is not None and smi["power.draw"] not in ("[N/A]", "N/A"):
            check(abs(mine["power_w"] - float(smi["power.draw"])) <= 30, "power within 30 W")


TRAIN = """\
import os, time, torch
print("sandbox uid", os.getuid(), "gid", os.getgid(), flush=True)
assert os.getuid() != 0, "the job runs as root"
assert torch.cuda.is_available(), "no CUDA in the sandbox"
device = torch.device("cuda")
print("device", torch.cuda.get_device_name(0), "visible", torch.cuda.device_count(), flush=True)
torch.manual_seed(0)
x = torch.randn(8192, 1024, device=device)
w_true = torch.randn(1024, 1, device=device)
y = x @ w_true
model = torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.ReLU(), torch.nn.Linear(4096, 1)).to(device)
opt = torch.optim.SGD(model.parameters(), lr=1e-4)
start, step, first = time.time(), 0, None
while time.time() - start < {seconds}:
    loss = torch.nn.functional.mse_loss(model(x), y)
    opt.zero_grad(); loss.backward(); opt.step(); step += 1
    if first is None: first = loss.item()
    if step % 2000 == 0: print("step", step, "loss", round(loss.item(), 4), flush=True)
torch.cuda.synchronize()
print("trained", step, "steps; loss", round(first, 3), "->", round(loss.item(), 3), flush=True)
assert loss.item() < first
"""


DRY_TRAIN = """\
import os, time
print("sandbox uid", os.getuid(), flush=True)
assert os.getuid() != 0
start = time.time()
while time.time() - start < {seconds}:
    sum(range(100000))
print("trained (dry run)", flush=True)
"""


class DryReader:
    def read(self) -> list[dict]:
        reading = {"index": 0, "util_pct": 100.0, "mem_used_mb": 1000.0, "mem_total_mb": 24564.0}
        return [dict(reading, sampled_at=time.time())]

    def close(self) -> None:
        pass


def run_job() -> None:
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", "--no-input", verbosity=0)
    call_command("seed_demo", verbosity=0)

    from django.utils import timezone

    from accounts.models import User
    from jobs.services.dispatch import jobs_follow
    from jobs.services.scheduling import scheduling_pass
    from jobs.services.submit import job_submit
    from labs.ledger import gpu_seconds
    from labs.models import Allocation, Node
    from labs.telemetry.agents import agent_token_issue
    from labs.telemetry.collector import Collector
    from labs.telemetry.nvml import NvmlReader
    from labs.telemetry.selectors import gpu_states_now
    from labs.telemetry.services import agent_push

    teacher = User.objects.get(username="teacher")
    started = timezone.now()
    train = DRY_TRAIN if DRY else TRAIN
    script = f"{sys.executable} - <<'PY'\n{train.format(seconds=TRAIN_SECONDS)}PY\n"
    job = job_submit(
        user=teacher,
        name="device-check-train",
        image="pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime",
        script=script,
        gpus=1,
        max_runtime_s=600,
    )
    print(f"submitted job {job.pk}: {job.state} ({job.reason})", flush=True)
    reader = DryReader() if DRY else NvmlReader()
    collector = Collector()
    seen_busy: list[tuple[float, list]] = []
    deadline = time.time() + TRAIN_SECONDS + 240
    while time.time() < deadline:
        scheduling_pass()
        jobs_follow()
        job.refresh_from_db()
        if job.state == "running" and job.node_names:
            node = Node.objects.get(name=job.node_names[0])
            token, _ = agent_token_issue(node=node)
            samples = [dict(s, index=job.gpu_indices[0][0]) for s in reader.read()[:1]]
            agent_push(token=token, node=node.name, samples=samples, client="device_check")
            import asyncio

            asyncio.run(collector.tick())
            state = next(s for s in gpu_states_now(node=node.name) if s.get("index") == job.gpu_indices[0][0])
            util = state.get("util_pct")
            holders = [h.get("user") or h.get("username") or h for h in state.get("holders", [])]
            print(f"  {node.name} GPU {job.gpu_indices[0][0]}: util {util} % holders {holders}", flush=True)
            if util is not None and util >= 90:
                seen_busy.append((util, holders))
        if job.state in ("succeeded", "failed", "cancelled"):
            break
        time.sleep(2)
    reader.close()
    job.refresh_from_db()
    log = (Path(os.environ["PORTAL_VAR_DIR"]) / "jobs").rglob("*.log")
    for path in log:
        print(f"--- {path.name}\n{path.read_text(errors='replace')[-2000:]}", flush=True)
    check(job.state == "succeeded", f"the job ended {job.state} (exit {job.exit_code}, {job.reason})")
    check(bool(seen_busy), f"the collector saw the job's GPU at >= 90 % ({len(seen_busy)} samples)")
    check(
        any("teacher" in json.dumps(h, default=str) for _, h in seen_busy), "the busy GPU's holder is the job's owner"
    )
    booked = gpu_seconds(
        Allocation.objects.filter(user=teacher), start=started, end=timezone.now() + dt.timedelta(seconds=1)
    )
    print(f"ledger: {booked} GPU-seconds booked to teacher", flush=True)
    check(booked >= TRAIN_SECONDS * 0.9, f"the ledger booked {booked} GPU-s to the owner (>= {TRAIN_SECONDS * 0.9})")


def main() -> int:
    var = tempfile.mkdtemp(prefix="device-check-")
    os.chmod(var, 0o755)  # noqa: S103 - the sandboxed job's user must reach its folder below
    for name in ("DATABASE_URL", "REDIS_URL"):
        os.environ.pop(name, None)
    os.environ.update(
        DJANGO_SETTINGS_MODULE="portal.settings",
        DEBUG="true",
        PORTAL_VAR_DIR=var,
        INVENTORY_BACKEND="local",
        JOBS_BACKEND="local",
        TELEMETRY_SOURCE="agent",
    )
    sys.path.insert(0, str(ROOT))
    print("uid", os.geteuid(), "python", sys.executable, flush=True)
    if not DRY:
        compare_nvml()
    run_job()
    print("device check:", "FAILED: " + "; ".join(FAILED) if FAILED else "all passed", flush=True)
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())
