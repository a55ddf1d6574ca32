import numpy as np
import pyarrow as pa
import pytest

from dynagnn.data.ids import dense_ids
from dynagnn.errors import InputError


def check(cols, mapped, table):
    for c, m in zip(cols, mapped):
        assert [table[i] for i in m] == list(c)
    assert list(table) == sorted(set().union(*[set(c) for c in cols]))


def test_integer_ids_compact_and_sparse():
    for cols in ([[5, 9, 5], [100, 9, 7]], [[10**15, 3], [7, 3]]):
        arrays = [np.array(c) for c in cols]
        mapped, table = dense_ids(*arrays)
        check(cols, mapped, table)
        assert all(m.dtype == np.int64 for m in mapped)


def test_string_ids_from_numpy_and_arrow():
    cols = [["b", "a", "zz"], ["c", "a", "b"]]
    mapped, table = dense_ids(np.array(cols[0], dtype=object), pa.chunked_array([pa.array(cols[1])]))
    check(cols, mapped, table)
    assert mapped[0].tolist() == [1, 0, 3]


def test_unsigned_ids_past_int64_refused_not_wrapped():
    """uint64 ids >= 2**63 would wrap to negative int64 ids (reordered, and stored wrong)."""
    with pytest.raises(InputError, match=f"node id {2**64 - 1} does not fit in 64 bits"):
        dense_ids(np.array([1, 2**64 - 1], dtype=np.uint64), np.array([3], dtype=np.uint64))
    mapped, table = dense_ids(np.array([2**63 - 1, 5], dtype=np.uint64))
    assert table.tolist() == [5, 2**63 - 1] and mapped[0].tolist() == [1, 0]
