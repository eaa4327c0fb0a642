"""Notebooks: students start JupyterLab through JupyterHub on a share of a GPU; the pass starts and follows them.

services (start, stop, extend), passes (the pass: place, spawn, follow), upkeep (idle, session length, quota stops),
selectors, profiles and ceilings, hub_client (the JupyterHub REST client), enqueue (sends the pass after commit),
tasks, api, views, forms, urls, reconcile and receivers (wired in LabsConfig.ready()); localhub is test harness.
"""
