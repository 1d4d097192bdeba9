"""The p2p shuffle on a real cluster: rows moved worker to worker onto disk, exact against
pandas, with a bounded buffer, cleaned up after, and rerun exactly when a worker dies."""

from __future__ import annotations

import os

import numpy as np
import pandas as pd
import pytest

import xsched
import xsched.dataframe as xd
from xsched import Client, get_worker
from xsched.keys import key_split

from tests.support.helpers import Gate, kill_worker, pid_gone, wait_until

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(120)]


def frame(n=4000, seed=0):
    rng = np.random.default_rng(seed)
    names = np.array(["Alice", "Bob", "Carol", "Dan", "Edith", "Frank"])
    return pd.DataFrame({"id": np.arange(n), "name": names[rng.integers(0, len(names), n)],
                         "k": rng.integers(0, 300, n), "x": rng.random(n)})


def _held_by_workers() -> dict:
    """What this worker's shuffle service holds: shuffle id -> (run, inputs heard from)."""
    return {sid: (r.run, len(r.inputs)) for sid, r in get_worker().shuffles.runs.items()}


def _service_state() -> tuple:
    s = get_worker().shuffles
    d = s._home.path if s._home is not None else None
    files = sorted(n for n in os.listdir(d) if n != "worker.lock") if d else []  # (the directory's lock stays)
    return len(s.runs), s.buffered, files, s.written


def test_merge_set_index_sort_and_dedup_move_worker_to_worker(client):
    left, right = frame(4000, 1), frame(1500, 2).rename(columns={"x": "y", "id": "rid"})
    with xsched.config.set({"shuffle.method": "p2p"}):
        lx, rx = xd.from_pandas(left, npartitions=7), xd.from_pandas(right, npartitions=3)
        merged = lx.merge(rx[["k", "y"]], on="k", npartitions=5)
        indexed = lx.set_index("x")
        ordered = lx.sort_values(["name", "id"], ascending=[True, False])
        unique = lx[["name", "k"]].drop_duplicates()
        applied = lx.groupby("name").apply(lambda g: g.x.max() - g.x.min(), meta=("x", "f8"))
    keys = list(merged.__xsched_graph__())
    # both sides in one exchange; each output merges its pieces (no separate merge step)
    assert {"shuffle-transfer", "shuffle-barrier", "p2p-merge"} == {key_split(k) for k in keys} - {"from-pandas",
                                                                                                  "getitem"}
    assert not any(k.startswith(("split-", "pick-")) for k in keys)  # (the task exchange's layers)
    got = merged.compute()
    expected = left.merge(right[["k", "y"]], on="k")
    cols = ["id", "k", "y"]
    pd.testing.assert_frame_equal(got.sort_values(cols).reset_index(drop=True),
                                  expected.sort_values(cols).reset_index(drop=True))
    outer = lx.merge(rx[["k", "y"]].assign(k=rx.k + 250), on="k", how="outer").compute()
    expected = left.merge(right[["k", "y"]].assign(k=right.k + 250), on="k", how="outer")
    pd.testing.assert_frame_equal(outer.sort_values(cols).reset_index(drop=True),
                                  expected.sort_values(cols).reset_index(drop=True))
    pd.testing.assert_frame_equal(indexed.compute(), left.set_index("x").sort_index())
    pd.testing.assert_frame_equal(ordered.compute(), left.sort_values(["name", "id"], ascending=[True, False]))
    pd.testing.assert_frame_equal(unique.compute().sort_values(["name", "k"]),
                                  left[["name", "k"]].drop_duplicates().sort_values(["name", "k"]))
    pd.testing.assert_series_equal(applied.compute().sort_index(),
                                   left.groupby("name").apply(lambda g: g.x.max() - g.x.min()), check_names=False)
    # every run ended: nothing left in memory or on disk on any worker
    wait_until(lambda: all(state[:3] == (0, 0, []) for state in client.run(_service_state).values()),
               msg="the workers dropping the shuffles' pieces")
    assert client.run_on_scheduler(lambda scheduler: len(scheduler.extensions["shuffle"].shuffles)) == 0


def test_grouped_methods_on_whole_groups_move_worker_to_worker(client):
    left = frame(3000, 3)
    with xsched.config.set({"shuffle.method": "p2p"}):
        lx = xd.from_pandas(left, npartitions=6)
        median = lx.groupby("name").x.median()
        counts = lx.groupby("name").k.value_counts()
        rolled = lx.groupby("name").x.rolling(3).mean()
    assert "shuffle-transfer" in {key_split(k) for k in median.__xsched_graph__()}
    pd.testing.assert_series_equal(median.compute(), left.groupby("name").x.median())
    got, expected = counts.compute(), left.groupby("name").k.value_counts()  # (equal counts in any order)
    pd.testing.assert_series_equal(got.sort_index(), expected.sort_index())
    assert all(g.is_monotonic_decreasing for _, g in got.groupby(level=0, sort=False))
    pd.testing.assert_series_equal(rolled.compute().sort_index(), left.groupby("name").x.rolling(3).mean().sort_index())


def test_duplicated_goes_worker_to_worker_and_back(client):
    """Equal keys meet through one exchange, their flags return through a second."""
    left = frame(3000, 3)
    with xsched.config.set({"shuffle.method": "p2p"}):
        lx = xd.from_pandas(left, npartitions=6)
        flags = lx.duplicated(subset=["name", "k"], keep="last")
    assert "shuffle-transfer" in {key_split(k) for k in flags.__xsched_graph__()}
    pd.testing.assert_series_equal(flags.compute(), left.duplicated(subset=["name", "k"], keep="last"))


def test_rank_goes_worker_to_worker_and_back(client):
    """Values sorted through one exchange, their ranks return through a second."""
    left = frame(3000, 3)
    with xsched.config.set({"shuffle.method": "p2p"}):
        lx = xd.from_pandas(left, npartitions=6)
        ranks = lx.x.rank(method="dense", pct=True)
    assert "shuffle-transfer" in {key_split(k) for k in ranks.__xsched_graph__()}
    pd.testing.assert_series_equal(ranks.compute(), left.x.rank(method="dense", pct=True))


def test_p2p_merge_of_a_column_on_an_index_labels_unmatched_rows_missing(client):
    """An output whose column side received no rows labels its rows NaN, as the whole merge."""
    left = pd.DataFrame({"k": [1, 2, 3, 4, 2, 9], "x": range(6)}, index=range(10, 16))
    right = pd.DataFrame({"y": list("abcd")}, index=[2, 1, 4, 7])
    with xsched.config.set({"shuffle.method": "p2p"}):
        lx, rx = xd.from_pandas(left, 3, sort=False), xd.from_pandas(right, 2, sort=False)
        got = lx.merge(rx, left_on="k", right_index=True, how="outer").compute()
        flipped = rx.merge(lx, left_index=True, right_on="k", how="outer").compute()
    expected = left.merge(right, left_on="k", right_index=True, how="outer")
    pd.testing.assert_frame_equal(got.sort_values(["k", "x"]), expected.sort_values(["k", "x"]))
    expected = right.merge(left, left_index=True, right_on="k", how="outer")
    pd.testing.assert_frame_equal(flipped.sort_values(["k", "x"]), expected.sort_values(["k", "x"]))


@pytest.mark.parametrize("how", ["left", "outer"])
def test_p2p_merge_outputs_have_the_metas_dtypes(client, how):
    """Every output of the exchange has the meta's dtypes, those whose rows all matched too."""
    a = pd.DataFrame({"k": [1, 2, 3, 4, 5, 6], "x": [True, False] * 3})
    b = pd.DataFrame({"k": [1, 3, 5, 7], "y": [10, 30, 50, 70]})
    m = xd.merge(xd.from_pandas(a, 3), xd.from_pandas(b, 2), on="k", how=how, broadcast=False,
                 shuffle_method="p2p", npartitions=4)
    expected = pd.merge(a, b, on="k", how=how)
    assert dict(m.dtypes) == dict(expected.dtypes)
    parts = client.compute(m.to_delayed())
    assert [dict(p.dtypes) for p in client.gather(parts)] == [dict(expected.dtypes)] * 4
    got = m.compute()
    pd.testing.assert_frame_equal(got.sort_values("k").reset_index(drop=True), expected)


def test_pieces_beyond_the_buffer_go_to_disk(own_cluster):
    with xsched.config.set({"shuffle.buffer": "16KiB"}):
        cluster = own_cluster(n_workers=2)
    with Client(cluster, set_as_default=False) as client:
        pdf = frame(20000, 3)
        with xsched.config.set({"shuffle.method": "p2p"}):
            moved = xd.from_pandas(pdf, npartitions=8).shuffle("k", npartitions=6)
        parts = client.compute(moved.to_delayed())
        pieces = [f.result() for f in parts]
        for part in pieces:  # each key in one partition, every row there once
            assert all(len({*p.k} & {*part.k}) == 0 for p in pieces if p is not part)
        pd.testing.assert_frame_equal(pd.concat(pieces).sort_values("id"), pdf)
        states = client.run(_service_state)
        # (the buffer of 16 KiB is far below one input's pieces: every worker wrote its share)
        assert all(written > 20000 * 8 for *_, written in states.values()), states


def _hold_last(part, gate, last_id):
    """The partition holding ``last_id`` waits at the gate; the other transfers finish meanwhile."""
    return gate.wait(part) if last_id in set(part.id) else part


def _kill_a_worker_holding_pieces(client, gate, future):
    """Nine of ten transfers done (every worker holds pieces of nine inputs, the tenth input
    held at ``gate``): kill a worker running nothing, open the gate; ``future``'s result,
    once a second run was made (the first one's pieces on the dead worker were lost)."""
    # (and a worker whose last transfer the scheduler has heard finish: under load a worker
    # holds its pieces a moment before its transfer task leaves "processing")
    wait_until(lambda: (all(held and list(held.values())[0][1] == 9
                            for held in client.run(_held_by_workers).values())
                        and any(not ks for ks in client.processing().values())) or None,
               msg="every worker holding nine inputs' pieces, one running nothing")
    busy = {w for w, ks in client.processing().items() if ks}
    pid = kill_worker(client, sorted(set(client.scheduler_info()["workers"]) - busy)[0])
    gate.open()
    result = future.result(timeout=90)
    assert pid_gone(pid)
    # (the scheduler tells the workers once the second run ended, which may come just after the result)
    wait_until(lambda: any(max(r.values(), default=0) >= 3
                           for r in client.run(lambda: dict(get_worker().shuffles.refused)).values()),
               msg="a worker refusing the pieces of the runs before the second's end")
    return result


def test_a_worker_dying_mid_shuffle_restarts_it_exactly(own_cluster, tmp_path):
    cluster = own_cluster(n_workers=3)
    with Client(cluster, set_as_default=False) as client:
        pdf = frame(6000, 4)
        gate = Gate(tmp_path)
        with xsched.config.set({"shuffle.method": "p2p"}):
            df = xd.from_pandas(pdf, npartitions=10)
            held = df.map_partitions(_hold_last, gate, int(pdf.id.iloc[-1]), meta=df._meta)
            total = held.shuffle("name", npartitions=6).groupby("name").x.sum()
        result = _kill_a_worker_holding_pieces(client, gate, client.compute(total))
        pd.testing.assert_series_equal(result, pdf.groupby("name").x.sum())


def _hold_block(block, gate, index, block_info=None):
    """Block ``index`` waits at the gate; the other transfers finish meanwhile."""
    return gate.wait(block) if block_info[0]["chunk-location"] == index else block


def test_a_worker_dying_mid_rechunk_restarts_it_exactly(own_cluster, tmp_path):
    """An array's p2p rechunk (rows to columns: each input reaches every output) survives
    the loss of a worker holding pieces: a new run, and the blocks are exact."""
    import xsched.array as xa

    cluster = own_cluster(n_workers=3)
    with Client(cluster, set_as_default=False) as client:
        a = np.random.default_rng(5).random((40, 30))
        gate = Gate(tmp_path)
        x = xa.from_array(a, chunks=(4, 30)).map_blocks(_hold_block, gate, (9, 0), dtype=a.dtype)
        future = client.compute(x.rechunk((40, 5), method="p2p"))
        np.testing.assert_array_equal(_kill_a_worker_holding_pieces(client, gate, future), a)


def _residue(x):
    return x % 7


def test_a_bag_groupby_moves_worker_to_worker(client):
    import xsched.bag as xb

    with xsched.config.set({"shuffle.method": "p2p"}):
        grouped = xb.from_sequence(range(1000), npartitions=5).groupby(_residue, npartitions=3)
    assert any(key_split(k) == "shuffle-transfer" for k in grouped.__xsched_graph__())
    got = sorted(grouped.compute())
    assert got == [(r, [x for x in range(1000) if x % 7 == r]) for r in range(7)]


def test_a_cancelled_shuffle_leaves_nothing_behind(client, tmp_path):
    pdf = frame(3000, 5)
    gate = Gate(tmp_path)
    with xsched.config.set({"shuffle.method": "p2p"}):
        df = xd.from_pandas(pdf, npartitions=6)
        held = df.map_partitions(_hold_last, gate, int(pdf.id.iloc[-1]), meta=df._meta)
        moved = held.shuffle("k", npartitions=4)
    future = client.compute(moved)
    wait_until(lambda: all(h and list(h.values())[0][1] == 5 for h in client.run(_held_by_workers).values()) or None,
               msg="every worker holding five inputs' pieces")
    client.cancel([future])
    del future
    gate.open()
    # the pieces of the cancelled shuffle go from every worker, and the scheduler forgets it
    wait_until(lambda: all(state[:3] == (0, 0, []) for state in client.run(_service_state).values()),
               msg="the workers dropping the cancelled shuffle's pieces")
    wait_until(lambda: client.run_on_scheduler(lambda scheduler: len(scheduler.extensions["shuffle"].shuffles)) == 0,
               msg="the scheduler forgetting the shuffle")
    pd.testing.assert_frame_equal(moved.compute().sort_values("id"), pdf)  # (and it runs again)


def test_an_output_lost_after_the_shuffle_is_built_again(own_cluster):
    cluster = own_cluster(n_workers=2)
    with Client(cluster, set_as_default=False) as client:
        pdf = frame(3000, 6)
        with xsched.config.set({"shuffle.method": "p2p"}):
            moved = xd.from_pandas(pdf, npartitions=6).shuffle("k", npartitions=4)
        kept = client.persist(moved)
        xsched.wait(kept)
        # the shuffle ended: its pieces are gone; the outputs are ordinary data now
        wait_until(lambda: all(state[:3] == (0, 0, []) for state in client.run(_service_state).values()),
                   msg="the shuffle ending")
        lost, survivor = sorted(client.has_what())
        pid = kill_worker(client, lost)
        with client.as_current():
            got = kept.compute()
        pd.testing.assert_frame_equal(got.sort_values("id"), pdf)
        assert pid_gone(pid)
        # it took a second run, whose pieces of the outputs not lost are dropped at its end too:
        # the survivor hears it once the run ended (which may be before the nanny's new worker
        # joins, as the scheduler recomputes the lost outputs the client holds at once)
        wait_until(lambda: max(client.run(lambda: dict(get_worker().shuffles.refused),
                                          workers=[survivor])[survivor].values(), default=0) >= 3,
                   msg="the survivor refusing the pieces of the runs before the second's end")
        wait_until(lambda: all(state[:3] == (0, 0, []) for state in client.run(_service_state).values()),
                   msg="the second run ending")
