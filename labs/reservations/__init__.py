"""Reservations: teachers book whole nodes for a window; the tick makes the booking mean something.

services (book, cancel, decide), selectors (what people may see), api, views, forms, urls, tasks.
"""
