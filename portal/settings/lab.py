"""The lab: its nodes (inventory, the Kubernetes API), reservations, the reconciler, and whether the lab is one
machine. The periodic tasks these intervals drive are scheduled in workers.py."""

from __future__ import annotations

from accounts.env import envbool, envchoice, envint, envmatch, envstr

# Who people ask about the lab (the help pages, /help/): a sentence, an address or both, e.g.
# "gpu-lab@uni.example, room B-204". Blank: the help pages name the lab's admins.
LAB_CONTACT = envstr("LAB_CONTACT", "")

# --- Nodes ----------------------------------------------------------------------------

INVENTORY_BACKEND = envchoice("INVENTORY_BACKEND", "local", ("local", "kubernetes"))
INVENTORY_FILE = envstr("INVENTORY_FILE", "")
INVENTORY_SYNC_INTERVAL_S = envint("INVENTORY_SYNC_INTERVAL_S", 60, minimum=5)  # the kubernetes inventory's sync
KUBERNETES_IN_CLUSTER = envbool("KUBERNETES_IN_CLUSTER", default=False)
KUBERNETES_API_URL = envstr("KUBERNETES_API_URL", "")
KUBERNETES_TOKEN = envstr("KUBERNETES_TOKEN", "")
KUBERNETES_VERIFY_TLS = envbool("KUBERNETES_VERIFY_TLS", default=True)
KUBERNETES_TIMEOUT_S = envint("KUBERNETES_TIMEOUT_S", 10, minimum=1)
KUBERNETES_GPU_RESOURCE = envstr("KUBERNETES_GPU_RESOURCE", "nvidia.com/gpu")

# Reservations: people on reserved nodes are told this long before the window; a reservation
# whose nodes nobody used this long after its start goes back to the pool (0 = never).
RESERVATION_WARN_LEAD_MIN = envint("RESERVATION_WARN_LEAD_MIN", 15, minimum=0)
RESERVATION_NO_SHOW_MIN = envint("RESERVATION_NO_SHOW_MIN", 30, minimum=0)
RESERVATION_TICK_S = envint("RESERVATION_TICK_S", 60, minimum=5)

# --- Reconciler (labs/reconcile.py): the ledger, jobs and notebooks against what the backends run
# Which portal this is: its Kubernetes Jobs carry it as a label, and it stops only what carries its own.
PORTAL_INSTANCE_ID = envmatch(
    "PORTAL_INSTANCE_ID",
    "default",
    r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?",
    "must be a Kubernetes label value (letters, digits, -_.).",
)
# How often beat runs a reconcile pass, and how long something the portal does not know (a Job, a hub server) or a
# starting attempt the cluster never shows is left alone before it is stopped or given up.
RECONCILE_INTERVAL_S = envint("RECONCILE_INTERVAL_S", 60, minimum=5)
RECONCILE_GRACE_S = envint("RECONCILE_GRACE_S", 300, minimum=0)

# --- Where user code runs
# Students' jobs and notebooks run on the cluster (JOBS_BACKEND=kubernetes in jobs.py, HUB_SPAWNER=kubernetes in
# notebooks.py: the hub's spawner, which compose passes to the hub and the portal alike). "local" runs them as
# processes on this machine, always in a bubblewrap sandbox (jobs/backends/sandbox.py): for development (DEBUG) and,
# declared with SINGLE_MACHINE_LAB=true, a lab that is one machine. Anything else outside DEBUG refuses to start
# (the check jobs.E003, jobs/checks.py).
SINGLE_MACHINE_LAB = envbool("SINGLE_MACHINE_LAB", default=False)
