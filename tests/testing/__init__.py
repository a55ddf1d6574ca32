"""What test modules share (PyG's ``torch_geometric.testing`` in spirit): the devices an equivalence
test runs on, the small stores and event streams tests build, a strategy step taken for comparison,
the workflow's tiny config and how a test runs Snakemake, and the hang guards. A test module imports
its helpers from here, never from another test module or a conftest."""
