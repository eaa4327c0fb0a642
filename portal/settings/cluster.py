"""The lab's cluster (deploy/README.md): the NetworkPolicy self-check, GPU sharing and storage tiers for jobs, the fast
network of multi-node training, and the kiosk seat."""

from __future__ import annotations

from accounts.env import envbool, envchoice, envhostport, envint, envstr

# The NetworkPolicy self-check (portal/netcheck.py): the canary's port every policy refuses to web, and the one they
# admit (deploy/components/netpolicy-check), as host:port; empty: the check is off (the embedded run).
NETPOLICY_CANARY = envhostport("NETPOLICY_CANARY")
NETPOLICY_CANARY_CONTROL = envhostport("NETPOLICY_CANARY_CONTROL")
NETPOLICY_CHECK_TIMEOUT_MS = envint("NETPOLICY_CHECK_TIMEOUT_MS", 1000, minimum=100, maximum=4000)
# Jobs on the lab's cluster (jobs/backends/resources.py). GPU sharing: none (whole GPUs only), timeslice (the
# device plugin's replicas), hami (gpumem/gpucores caps; with its scheduler) or mps; a job may then ask for a part
# of one GPU. JOBS_GPU_MEMORY_MB is one GPU's memory (an RTX 4090's), which a part of it is taken of.
JOBS_GPU_SHARING = envchoice("JOBS_GPU_SHARING", "none", ("none", "timeslice", "hami", "mps"))
JOBS_GPU_REPLICAS = envint("JOBS_GPU_REPLICAS", 4, minimum=1, maximum=64)
JOBS_GPU_MEMORY_MB = envint("JOBS_GPU_MEMORY_MB", 24564, minimum=1024)
JOBS_SCHEDULER_NAME = envstr("JOBS_SCHEDULER_NAME", "")
# Storage tiers: scratch on the node (empty class: an emptyDir on the node's disk), bulk on a shared class; the
# most each role may ask for ("role:scratch=SIZE,bulk=SIZE;..."; a role not listed may ask for neither). Read by
# jobs.backends.resources.parse_storage_limits; jobs.checks refuses the start on a value it cannot read.
JOBS_SCRATCH_STORAGE_CLASS = envstr("JOBS_SCRATCH_STORAGE_CLASS", "")
JOBS_BULK_STORAGE_CLASS = envstr("JOBS_BULK_STORAGE_CLASS", "")
JOBS_STORAGE_LIMITS = envstr(
    "JOBS_STORAGE_LIMITS", "student:scratch=50Gi,bulk=100Gi;teacher:scratch=200Gi,bulk=1Ti;admin:scratch=500Gi,bulk=2Ti"
)
# Multi-node training on the lab's network: NCCL_IB_DISABLE ("" leaves NCCL's default; "1" on Ethernet only), an
# RDMA device resource each pod asks for (e.g. rdma/rdma_shared_device_a; it adds IPC_LOCK), IPC_LOCK alone, and
# the host's network for multi-node pods (outside every NetworkPolicy: deploy/README.md).
JOBS_NCCL_IB_DISABLE = envchoice("JOBS_NCCL_IB_DISABLE", "", ("", "0", "1"))
JOBS_RDMA_RESOURCE = envstr("JOBS_RDMA_RESOURCE", "")
JOBS_IPC_LOCK = envbool("JOBS_IPC_LOCK", default=False)
JOBS_HOST_NETWORK = envbool("JOBS_HOST_NETWORK", default=False)
# The kiosk page (/kiosk/, portal/web/kiosk.py): the slug of the notebook profile a lab machine's seat starts.
KIOSK_PROFILE = envstr("KIOSK_PROFILE", "desktop").strip()
