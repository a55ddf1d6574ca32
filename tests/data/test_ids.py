import numpy as np
import pyarrow as pa

from dynagnn.data.ids import dense_ids


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
