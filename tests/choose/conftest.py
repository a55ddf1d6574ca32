from tests.train.conftest import class_store, link_store, regress_store, small_store  # noqa: F401  (the stores' fixtures)
