"""The cost model of the training operators (BLAD §5): operator micro-benchmarks
(:mod:`.profile`) and the per-operator linear-regression predictor fitted to them (:mod:`.predictor`)."""
