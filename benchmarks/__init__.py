"""dynagnn benchmarks: each measures alternatives side by side in one run and prints ratios."""
