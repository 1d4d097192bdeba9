"""The telemetry's profile part asks the workers to sample in turn, the longest unasked
first, at most PROFILE_FETCHES per poll: on a wide cluster every worker is sampled, not the
first few again and again. The fetch itself is replaced by an immediate answer (the real
one is tested on a cluster: tests/cluster/test_labserver.py)."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace as NS

from xsched.scheduler.extensions import telemetry as tm


def test_every_worker_is_asked_in_turn(monkeypatch):
    asked: list[str] = []

    async def answered_at_once(self, address):
        asked.append(address)
        self.profile.merge([[0, "spin", "", 1, 0]])
        self._profiling.discard(address)

    monkeypatch.setattr(tm.TelemetryExtension, "_fetch_profile", answered_at_once)
    workers = {f"tcp://10.0.0.{i}:1": None for i in range(20)}
    scheduler = NS(state=NS(workers=workers, transition_hooks=[]), register_op=lambda op, handler: None)
    ext = tm.TelemetryExtension(scheduler)

    async def polls(n):
        for _ in range(n):
            part = ext.profile_part()
            await asyncio.sleep(0)  # (the spawned fetches run)
            await asyncio.sleep(0)
        return part

    part = asyncio.run(polls(5))
    assert len(asked) == 5 * tm.PROFILE_FETCHES
    first_round = asked[:len(workers)]
    assert sorted(first_round) == sorted(workers)  # all 20 before any is asked twice
    assert part["samples"] == len(asked) - tm.PROFILE_FETCHES  # (the last poll's answers came after its reply)
    assert part["rows"] == [[0, "spin", "", part["samples"], 0]]


def test_a_reset_starts_the_profile_again_and_drops_answers_to_asks_made_before_it(monkeypatch):
    asked: list = []

    async def answer_later(self, address, msg, timeout, what):  # the worker's answer, when the test says
        asked.append((address, msg["op"]))
        await self.release.wait()
        return {"tree": [[0, "old", "", 1, 0]]}

    monkeypatch.setattr(tm.TelemetryExtension, "_ask", answer_later)
    scheduler = NS(state=NS(workers={"tcp://10.0.0.1:1": None}, transition_hooks=[], log=[]),
                   register_op=lambda op, handler: None)
    ext = tm.TelemetryExtension(scheduler)

    async def scenario():
        ext.release = asyncio.Event()
        before = ext.poll(["profile"])["profile"]
        await asyncio.sleep(0)
        assert [a for a, _ in asked] == ["tcp://10.0.0.1:1"]  # sampling, its answer not back yet
        ext.profile.merge([[0, "spin", "", 3, 0]])
        assert ext.poll(["profile"])["profile"]["samples"] == 3
        after = ext.poll(["profile"], reset=["profile"])["profile"]
        ext.release.set()
        for _ in range(3):
            await asyncio.sleep(0)
        return before, after, ext.poll(["profile"])["profile"]

    before, after, later = asyncio.run(scenario())
    assert after["samples"] == 0 and after["rows"] == [] and after["since"] >= before["since"]
    assert later["since"] == after["since"] and "old" not in [r[1] for r in later["rows"]]  # the old ask's answer went nowhere
