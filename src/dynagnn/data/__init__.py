"""Data: readers of temporal graph sources, synthetic generators, discretisation, the snapshot store."""
