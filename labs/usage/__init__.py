"""Usage: GPU-hours from the one ledger by person, course, node, kind and time; reservation utilisation; how well each
job attempt and notebook session used its GPUs (efficiency rows from the telemetry history); the pages, the API and
the CSV exports that show them."""
