"""The GPU Lab Portal's side of JupyterHub: signed spawn options, the sign-in through the portal, the spawners.

Loaded by deploy/jupyterhub/jupyterhub_config.py, which puts deploy/jupyterhub on sys.path. Nothing here imports
the portal (Django); the contract between the two is the signed user_options dict described in `options`.
"""
