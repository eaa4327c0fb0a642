"""Outside systems behind small interfaces. Each has a real and a local implementation."""
