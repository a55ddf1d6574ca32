"""Training: feature caches (and, later, the epoch engine and strategies)."""
