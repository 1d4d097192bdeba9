"""pandas operations the dataframes lacked: statistics, reshaping, named operators (equal to pandas)."""

import numpy as np
import pandas as pd
import pytest

import xsched.dataframe as xd

PARTS = [1, 2, 3]


@pytest.fixture
def numbers():
    return pd.DataFrame({"a": [1, 2, None, 4, 5, 6, 7], "b": [3.0, 1, 4, 1, None, 9, 2],
                         "c": pd.array([1, None, 3, 3, 2, 1, 1], dtype="Int64"),
                         "d": [True, False, True, True, False, False, True]},
                        index=[5, 3, 9, 1, 1, 0, 2])


@pytest.fixture
def mixed():
    return pd.DataFrame({"id": [1, 2, 3, 4, 5], "a": [1, 2, None, 4, 5], "b": list("xyzxy"),
                         "n": pd.array([1, None, 3, 3, 2], dtype="Int64"),
                         "c": pd.Categorical(list("pqpqp"), categories=list("qpr"))})


# --------------------------------------------------------------------------- statistics


@pytest.mark.parametrize("n", PARTS)
def test_corr_cov_equal_pandas_pairwise_with_missing(numbers, n):
    df = xd.from_pandas(numbers, npartitions=n, sort=False)
    pd.testing.assert_frame_equal(df.corr().compute(), numbers.corr())
    pd.testing.assert_frame_equal(df.cov().compute(), numbers.cov())
    pd.testing.assert_frame_equal(df.corr(min_periods=5).compute(), numbers.corr(min_periods=5))
    pd.testing.assert_frame_equal(df.cov(ddof=0).compute(), numbers.cov(ddof=0))  # (pandas: no ddof with NaN)
    full = numbers.fillna(0)
    pd.testing.assert_frame_equal(xd.from_pandas(full, npartitions=n).cov(ddof=0).compute(), full.cov(ddof=0))
    assert np.isclose(df.a.corr(df.b).compute(), numbers.a.corr(numbers.b))
    assert np.isclose(df.a.cov(df.c, ddof=0).compute(), numbers.a.cov(numbers.c, ddof=0))


def test_corr_keeps_precision_with_large_means():
    pdf = pd.DataFrame({"x": 1e9 + np.arange(20.0), "y": 1e9 + np.arange(20.0) ** 2})
    pd.testing.assert_frame_equal(xd.from_pandas(pdf, npartitions=3).corr().compute(), pdf.corr())


def test_corr_errors_when_built(mixed):
    df = xd.from_pandas(mixed, npartitions=2)
    with pytest.raises(ValueError, match="column 'b'.*numeric_only=True"):
        df.corr()
    pd.testing.assert_frame_equal(df.corr(numeric_only=True).compute(), mixed.corr(numeric_only=True))
    pd.testing.assert_frame_equal(df.corr(method="spearman", numeric_only=True).compute(),
                                  mixed.corr(method="spearman", numeric_only=True))
    with pytest.raises(NotImplementedError, match="kendall"):
        df.corr(method="kendall", numeric_only=True)


@pytest.mark.parametrize("n", PARTS)
def test_idxmax_idxmin_first_label_of_best(numbers, n):
    df = xd.from_pandas(numbers, npartitions=n, sort=False)
    pd.testing.assert_series_equal(df.idxmax().compute(), numbers.idxmax())
    pd.testing.assert_series_equal(df.idxmin().compute(), numbers.idxmin())
    for col in numbers:
        assert df[col].idxmax().compute() == numbers[col].idxmax()
        assert df[col].idxmin().compute() == numbers[col].idxmin()
    pd.testing.assert_series_equal(df.idxmax(axis=1).compute(), numbers.idxmax(axis=1))


def test_idxmax_missing_values_fail_as_pandas():
    df = xd.from_pandas(pd.Series([1.0, None, 3.0]), npartitions=2)
    with pytest.raises(ValueError, match="skipna=False"):
        df.idxmax(skipna=False).compute()
    with pytest.raises(ValueError, match="all NA"):
        xd.from_pandas(pd.Series([None, None], dtype=float), npartitions=2).idxmin().compute()


@pytest.mark.parametrize("n", PARTS)
def test_mode_and_median(numbers, mixed, n):
    df = xd.from_pandas(numbers, npartitions=n, sort=False)
    for col in numbers:
        pd.testing.assert_series_equal(df[col].mode().compute(), numbers[col].mode())
        pd.testing.assert_series_equal(df[col].mode(dropna=False).compute(), numbers[col].mode(dropna=False))
    pd.testing.assert_frame_equal(df.mode().compute(), numbers.mode())
    cats = xd.from_pandas(mixed, npartitions=n)
    pd.testing.assert_series_equal(cats.c.mode().compute(), mixed.c.mode())
    pd.testing.assert_series_equal(df.median().compute(), numbers.median())
    assert df.a.median().compute() == numbers.a.median()


def test_statistics_lazy_until_computed(numbers):
    df = xd.from_pandas(numbers, npartitions=2)
    for out in (df.corr(), df.cov(), df.idxmax(), df.mode(), df.median(), df.a.mode()):
        assert hasattr(out, "compute") and not isinstance(out, (pd.DataFrame, pd.Series))
    with pytest.raises(TypeError, match="median"):
        xd.from_pandas(pd.DataFrame({"s": ["x"]}), npartitions=1).median()


# --------------------------------------------------------------------------- reshaping


@pytest.mark.parametrize("n", PARTS)
@pytest.mark.parametrize("kwargs", [dict(id_vars="id"), dict(id_vars=["id"], value_vars=["a", "n"]),
                                    dict(value_vars="a", var_name="V", value_name="W"),
                                    dict(id_vars="id", ignore_index=False), {}])
def test_melt_keeps_pandas_order_and_numbering(mixed, n, kwargs):
    df = xd.from_pandas(mixed, npartitions=n)
    pd.testing.assert_frame_equal(df.melt(**kwargs).compute(), mixed.melt(**kwargs))
    pd.testing.assert_frame_equal(xd.melt(df, **kwargs).compute(), pd.melt(mixed, **kwargs))


@pytest.mark.parametrize("n", PARTS)
def test_categorize_then_get_dummies(mixed, n):
    df = xd.from_pandas(mixed, npartitions=n).categorize()
    expected = mixed.astype({"b": "category"})
    assert df.b.cat.known
    pd.testing.assert_frame_equal(df.compute(), expected)
    pd.testing.assert_frame_equal(xd.get_dummies(df).compute(), pd.get_dummies(expected))
    pd.testing.assert_frame_equal(xd.get_dummies(df.c, dummy_na=True, prefix="p", dtype=int).compute(),
                                  pd.get_dummies(expected.c, dummy_na=True, prefix="p", dtype=int))
    pd.testing.assert_frame_equal(xd.get_dummies(df, columns=["c"], drop_first=True).compute(),
                                  pd.get_dummies(expected, columns=["c"], drop_first=True))


@pytest.mark.parametrize("n", PARTS)
@pytest.mark.parametrize("aggfunc", ["mean", "sum", "count", "first", "last", "min", "max"])
@pytest.mark.parametrize("index", [[2.0, None, 1, 2, None, 3], ["b", None, "a", "b", None, "c"]])
def test_pivot_table_equal_pandas(n, aggfunc, index):
    pdf = pd.DataFrame({"i": index, "c": pd.Categorical(list("xyxyxx"), categories=list("yxz")),
                        "v": [1, 2, 3, 4, 5, 6], "w": pd.array([1, None, 3, 4, None, 6], dtype="Int64")})
    df = xd.from_pandas(pdf, npartitions=n)
    for values in ("v", "w"):
        pd.testing.assert_frame_equal(
            df.pivot_table(index="i", columns="c", values=values, aggfunc=aggfunc, observed=False,
                           dropna=False).compute(),
            pd.pivot_table(pdf, index="i", columns="c", values=values, aggfunc=aggfunc, observed=False,
                           dropna=False))
        for fill in (None, 0):  # (pandas' default, observed=True: "z", which has no row, is left out)
            got = df.pivot_table(index="i", columns="c", values=values, aggfunc=aggfunc, fill_value=fill).compute()
            assert got["z"].isna().all() if fill is None else (got["z"] == fill).all()
            pd.testing.assert_frame_equal(
                got.drop(columns="z"),
                pd.pivot_table(pdf, index="i", columns="c", values=values, aggfunc=aggfunc, fill_value=fill),
                check_column_type=False)


def test_unknown_categories_fail_when_built_naming_the_fix(mixed):
    df = xd.from_pandas(mixed, npartitions=2)
    with pytest.raises(ValueError, match=r"get_dummies: column 'b'.*categorize"):
        xd.get_dummies(df)
    with pytest.raises(ValueError, match=r"pivot_table: column 'b'.*categorize"):
        df.pivot_table(index="id", columns="b", values="a")
    with pytest.raises(ValueError, match=r"column 'b'.*as_known"):
        xd.get_dummies(df.b.astype("category"))
    with pytest.raises(ValueError, match="aggfunc"):
        df.pivot_table(index="id", columns="c", values="a", aggfunc="median")
    with pytest.raises(KeyError, match="'nope'"):
        df.pivot_table(index="nope", columns="c", values="a")


# --------------------------------------------------------------------------- named operators


@pytest.mark.parametrize("n", PARTS)
def test_named_operators_with_fill_value(n):
    pdf = pd.DataFrame({"a": [1, 2, None, 4, 5], "b": [2.0, None, 1, 4, 3]})
    df = xd.from_pandas(pdf, npartitions=n)
    for op in ["add", "sub", "rsub", "div", "divide", "eq", "lt", "pow", "rfloordiv"]:
        pd.testing.assert_frame_equal(getattr(df, op)(2).compute(), getattr(pdf, op)(2))
        pd.testing.assert_series_equal(getattr(df.a, op)(df.b, fill_value=1).compute(),
                                       getattr(pdf.a, op)(pdf.b, fill_value=1))
    pd.testing.assert_frame_equal(df.add(df.a, axis=0).compute(), pdf.add(pdf.a, axis=0))
    pd.testing.assert_series_equal(df.isnull().sum().compute(), pdf.isnull().sum())
    pd.testing.assert_series_equal(df.notnull().sum().compute(), pdf.notnull().sum())
    pd.testing.assert_series_equal(df.product().compute(), pdf.product())
    pd.testing.assert_series_equal(df.pipe(lambda d, k: d.a * k, 2).compute(), pdf.pipe(lambda d, k: d.a * k, 2))


@pytest.mark.parametrize("n", [1, 2, 3])
def test_values_and_to_xsched_array_as_pandas_to_numpy(n):
    import xsched.array as xa

    pdf = pd.DataFrame({"a": [1, 2, 3, 4, 5], "b": [4.0, 5, 6, 7, 8], "c": list("vwxyz")})
    df = xd.from_pandas(pdf, npartitions=n)
    x = df[["a", "b"]].to_xsched_array(lengths=True)
    assert isinstance(x, xa.Array) and sum(x.chunks[0]) == 5 and x.chunks[1] == (2,)
    np.testing.assert_array_equal(x.compute(), pdf[["a", "b"]].to_numpy())
    assert np.isnan(df.values.chunks[0][0]) and df.values.dtype == object
    np.testing.assert_array_equal(df.values.compute(), pdf.to_numpy())
    kept = df[df.a > 2].a.values
    np.testing.assert_array_equal(kept.compute(), [3, 4, 5])
    assert sum(kept.compute_chunk_sizes().chunks[0]) == 3
    nullable = xd.from_pandas(pd.DataFrame({"a": pd.array([1, None, 3], dtype="Int64"), "b": [1, 2, 3]}),
                              npartitions=n).values
    assert nullable.dtype == np.float64
    np.testing.assert_array_equal(nullable.compute(), [[1.0, 1.0], [np.nan, 2.0], [3.0, 3.0]])
    with pytest.raises(ValueError, match="lengths for"):
        df.to_xsched_array(lengths=[1] * (n + 1))


@pytest.mark.parametrize("n", [1, 3])
def test_a_column_from_an_xsched_array_pairs_its_blocks_with_the_partitions(n):
    import xsched.array as xa

    pdf = pd.DataFrame({"a": np.arange(10), "b": np.arange(10.0) / 4}, index=np.arange(10)[::-1])
    df = xd.from_pandas(pdf, npartitions=n, sort=False)
    lengths = tuple(df.map_partitions(len).compute())
    want = pdf.assign(z=np.arange(10) * 3)
    df2 = df.copy()
    df2["z"] = xa.arange(10, chunks=(lengths,)) * 3
    pd.testing.assert_frame_equal(df2.compute(), want)
    pd.testing.assert_frame_equal(df.assign(z=df.a.to_xsched_array() * 3).compute(), want)
    kept = df[df.a % 2 == 0]
    pd.testing.assert_frame_equal(kept.assign(c=kept.b.values + kept.a.values, d=lambda f: f.c * 2).compute(),
                                  pdf[pdf.a % 2 == 0].assign(c=lambda f: f.b + f.a, d=lambda f: f.c * 2))
    assert df2.dtypes["z"] == np.int64 and "z" not in df.columns
    with pytest.raises(ValueError, match=f"the array has 2 blocks and the frame {n} partitions"):
        df.assign(z=xa.arange(10, chunks=5))
    with pytest.raises(ValueError, match=r"takes a 1-d array, not shape \(10, 2\)"):
        df.assign(z=xa.ones((10, 2), chunks=(lengths, 2)))
    if n > 1:
        wrong = df.assign(z=xa.arange(10, chunks=((1, 1, 8),)))  # (from_pandas cuts 10 rows in 3 more evenly)
        with pytest.raises(ValueError, match="block 0 has .* rows but partition 0 of the frame has"):
            wrong.compute()


@pytest.mark.parametrize("npartitions", [1, 2])
def test_divmod_gives_quotient_and_remainder_as_pandas(npartitions):
    pdf = pd.DataFrame({"a": [7, 9, 10, -3], "b": [1.5, 2.0, 3.0, 4.0]})
    df = xd.from_pandas(pdf, npartitions=npartitions)
    cases = [(divmod(df, 4), divmod(pdf, 4)), (divmod(df.a, df.b), divmod(pdf.a, pdf.b)),
             (divmod(20, df.a), divmod(20, pdf.a)), (df.a.divmod(3, fill_value=1), pdf.a.divmod(3, fill_value=1)),
             (df.a.rdivmod(3), pdf.a.rdivmod(3))]
    for got, want in cases:
        assert len(got) == 2
        for g, w in zip(got, want):
            if isinstance(w, pd.DataFrame):
                pd.testing.assert_frame_equal(g.compute(), w)
            else:
                pd.testing.assert_series_equal(g.compute(), w)


@pytest.mark.parametrize("npartitions", [1, 2])
def test_to_datetime_keeps_the_fractions_a_partition_s_text_has(npartitions):
    text = pd.Series(["2024-01-05", "bad", "2024-01-07 11:12:13.500001", "2024-01-08"])
    got = xd.to_datetime(xd.from_pandas(text, npartitions=npartitions), errors="coerce", format="mixed").compute()
    pd.testing.assert_series_equal(got, pd.to_datetime(text, errors="coerce", format="mixed"))
    zoned = pd.Series(["2024-01-05 10:00+01:00", "2024-01-06 11:00:00.5+01:00"])
    got = xd.to_datetime(xd.from_pandas(zoned, npartitions=npartitions), format="ISO8601").compute()
    pd.testing.assert_series_equal(got, pd.to_datetime(zoned, format="ISO8601"))
    seconds = pd.Series([1_700_000_000, 1_700_000_001])
    got = xd.to_datetime(xd.from_pandas(seconds, npartitions=npartitions), unit="s", utc=True).compute()
    pd.testing.assert_series_equal(got, pd.to_datetime(seconds, unit="s", utc=True))


@pytest.mark.parametrize("n", PARTS)
@pytest.mark.parametrize("normalize", [False, True, "index", "columns", 1])
@pytest.mark.parametrize("agg", [None, "sum", "mean"])
def test_crosstab_equal_pandas(n, normalize, agg):
    rng = np.random.default_rng(n)
    a = pd.Series(rng.integers(0, 4, 24).astype(float), name="a")
    a[[3, 9]] = np.nan
    b = pd.Series(pd.Categorical(rng.choice(list("xy"), 24), categories=list("xyz")), name="b")
    pdf = pd.DataFrame({"a": a, "b": b, "v": rng.random(24)})
    df = xd.from_pandas(pdf, npartitions=n)
    kwargs = {} if agg is None else {"aggfunc": agg}
    got = xd.crosstab(df.a, df.b, normalize=normalize, values=None if agg is None else df.v, **kwargs).compute()
    expected = pd.crosstab(a, b, normalize=normalize, values=None if agg is None else pdf.v, **kwargs)
    assert (got["z"] == 0).all() if agg is None or normalize is not False else got["z"].isna().all()
    pd.testing.assert_frame_equal(got.drop(columns="z"), expected, check_column_type=False, check_categorical=False)


def test_crosstab_names_and_refusals():
    pdf = pd.DataFrame({"a": [1, 2, 1], "b": pd.Categorical(list("xyx"))})
    df = xd.from_pandas(pdf, npartitions=2)
    got = xd.crosstab(df.a.rename(None), df.b.rename(None)).compute()
    assert (got.index.name, got.columns.name) == ("row_0", "col_0")
    got = xd.crosstab(df.a, df.b, rownames=["r"], colnames=["c"], dropna=False).compute()
    pd.testing.assert_frame_equal(got, pd.crosstab(pdf.a, pdf.b, rownames=["r"], colnames=["c"], dropna=False),
                                  check_column_type=False, check_categorical=False)
    with pytest.raises(TypeError, match="one xsched Series"):
        xd.crosstab(pdf.a, df.b)
    with pytest.raises(NotImplementedError, match="margins"):
        xd.crosstab(df.a, df.b, margins=True)
    with pytest.raises(ValueError, match="go together"):
        xd.crosstab(df.a, df.b, aggfunc="sum")
    with pytest.raises(ValueError, match="normalize='rows'"):
        xd.crosstab(df.a, df.b, normalize="rows")
    with pytest.raises(ValueError, match=r"crosstab\(columns=\): column 'a' \(str\).*cat\.as_known\(\)"):
        xd.crosstab(df.b.astype(str), df.a.astype(str))


@pytest.mark.parametrize("n", [1, 3])
def test_ignore_index_numbers_across_partitions_in_explode_and_columns_in_concat(n):
    pdf = pd.DataFrame({"a": [[1, 2], [3], [], [4, 5]], "b": range(4)})
    df = xd.from_pandas(pdf, npartitions=n)
    pd.testing.assert_frame_equal(df.explode("a", ignore_index=True).compute(), pdf.explode("a", ignore_index=True))
    pd.testing.assert_frame_equal(df.explode("a").compute(), pdf.explode("a"))
    pd.testing.assert_series_equal(df.a.explode(ignore_index=True).compute(), pdf.a.explode(ignore_index=True))
    other = pd.DataFrame({"c": range(4)})
    got = xd.concat([df, xd.from_pandas(other, npartitions=n)], axis=1, ignore_index=True)
    assert list(got.columns) == [0, 1, 2]
    pd.testing.assert_frame_equal(got.compute(), pd.concat([pdf, other], axis=1, ignore_index=True))


def test_query_and_eval_read_the_callers_at_variables_as_pandas():
    pdf = pd.DataFrame({"a": range(10), "b": range(10)})
    df = xd.from_pandas(pdf, npartitions=3)
    low, high = 4, 7  # (read by the expressions below as @low and @high)
    assert low < high
    pd.testing.assert_frame_equal(df.query("a > @low and b < @high").compute(), pdf.query("a > @low and b < @high"))
    pd.testing.assert_frame_equal(df.eval("c = a * @high").compute(), pdf.eval("c = a * @high"))
    assert df.query("a > @x", local_dict={"x": 8}).a.compute().tolist() == [9]
    with pytest.raises(Exception, match="nowhere"):
        df.query("a > @nowhere")


def test_repartition_takes_a_pandas_object_as_dasks_function_does():
    pdf = pd.DataFrame({"a": range(4)}, index=[3, 0, 2, 1])
    got = xd.repartition(pdf, divisions=[0, 2, 3])
    assert got.divisions == (0, 2, 3) and got.npartitions == 2
    pd.testing.assert_frame_equal(got.compute(), pdf.sort_index())
    assert xd.repartition(pdf.a, npartitions=2).compute().tolist() == pdf.a.sort_index().tolist()
    with pytest.raises(TypeError, match="xsched or pandas DataFrame or Series, not list"):
        xd.repartition([1, 2], npartitions=2)


@pytest.mark.parametrize("aggfunc", [["sum", "count"], np.sum, "median"])
def test_pivot_table_names_the_aggfuncs_it_merges_and_the_way_to_others(aggfunc):
    df = xd.from_pandas(pd.DataFrame({"i": [1, 2], "c": ["a", "b"], "v": [1.0, 2.0]}), npartitions=1).categorize()
    with pytest.raises(ValueError, match=r"partitions merge one of 'mean', 'sum'.*concat them with axis=1"):
        xd.pivot_table(df, index="i", columns="c", values="v", aggfunc=aggfunc)


def test_a_name_given_with_meta_names_the_computed_series_too():
    pdf = pd.DataFrame({"a": range(4), "b": [1.0] * 4})
    df = xd.from_pandas(pdf, npartitions=2)
    rows = df.apply(lambda row: row.a * row.b, axis=1, meta=("x", "f8"))
    assert rows.name == rows.compute().name == "x"
    assert rows.to_frame()["x"].sum().compute() == 6.0
    doubled = df.a.apply(lambda v: v * 2, meta=("y", "i8"))
    assert list(xd.concat([df, doubled], axis=1).compute().columns) == ["a", "b", "y"]
    assert df.map_partitions(lambda p: p.a + 1, meta=("z", "i8")).compute().name == "z"
    assert df.map_partitions(lambda p: p.a + 1, meta=pd.Series([], name="w", dtype="i8")).compute().name == "w"
    # the same function under another name is another collection, with keys of its own
    def total(row):
        return row.a + row.b
    first, second = df.apply(total, axis=1, meta=("x", "f8")), df.apply(total, axis=1, meta=("y", "f8"))
    assert first.compute().name == "x" and second.compute().name == "y" and first._name != second._name
    # a bare dtype is an unnamed Series of it, a value per row (not one per partition)
    want = pdf.a + pdf.b
    pd.testing.assert_series_equal(df.apply(total, axis=1, meta="f8").compute(), want)
    pd.testing.assert_series_equal(df.apply(total, axis=1).compute(), want)
    doubled = df.a.apply(lambda v: v * 2, meta="i8")
    assert doubled.name == "a"
    pd.testing.assert_series_equal(doubled.compute(), pdf.a * 2)
