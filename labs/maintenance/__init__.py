"""Maintenance windows and announcements: an admin takes nodes (or the lab) out of service for a time; the scheduler
keeps work out of the window (labs/placement.py reads `maintenance_windows`), people are told ahead, a banner shows
on every page, and the reservation tick drains, cordons and restores the nodes (tick.py)."""
