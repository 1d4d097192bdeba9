"""Made-up records for examples and tutorials: ``make_people()``, a Bag of random people.

Why made here and not by a faker library: a tutorial needs nested records (a name pair, an
address dict, a credit card) that look like people, not realistic ones; a few short word
lists and NumPy's generator make them with nothing to install. As with the dataframe's
``timeseries``, each partition is a small task (its seed and size) that makes its records
where it runs; partition ``i`` is seeded by ``(seed, i)`` alone, so the same call gives the
same records wherever and in whatever order it is computed.

>>> from xsched.bag.demo import make_people
>>> people = make_people(npartitions=2, records_per_partition=3, seed=0)
>>> people.count().compute(), sorted(people.take(1)[0])
(6, ['address', 'age', 'credit-card', 'name', 'occupation', 'telephone'])
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..graph.layers import annotations_in_force, chunk_key, new_token, per_task
from ..graph.spec import Task
from .core import Bag, _check_count

__all__ = ["make_people"]

_FIRST = ("Alice", "Bob", "Charlie", "Dana", "Edith", "Farid", "Grace", "Hiro", "Ines", "Jamal", "Kiri",
          "Lena", "Mateo", "Nadia", "Oskar", "Priya", "Quentin", "Rosa", "Sven", "Tomoko", "Uma", "Viktor",
          "Wen", "Ximena", "Yusuf", "Zofia")
_LAST = ("Anders", "Baker", "Castillo", "Dubois", "Eze", "Fischer", "Garcia", "Haddad", "Ivanova", "Jensen",
         "Kowalski", "Lindqvist", "Moreau", "Nakamura", "Okafor", "Petrov", "Quispe", "Rossi", "Santos",
         "Tanaka", "Ueda", "Varga", "Weber", "Xu", "Yilmaz", "Zhang")
_OCCUPATIONS = ("accountant", "architect", "baker", "biologist", "carpenter", "chemist", "data analyst",
                "dentist", "electrician", "engineer", "farmer", "geologist", "historian", "journalist",
                "librarian", "mechanic", "musician", "nurse", "pharmacist", "pilot", "plumber",
                "programmer", "statistician", "teacher", "translator", "veterinarian")
_STREETS = ("Acacia", "Birch", "Cedar", "Dock", "Elm", "Ferry", "Garden", "Harbour", "Ivy", "Juniper",
            "Kings", "Lake", "Mill", "North", "Orchard", "Park", "Queens", "River", "Station", "Tower")
_KINDS = ("Street", "Road", "Avenue", "Lane", "Way", "Place")
_CITIES = ("Aberdeen", "Bergen", "Coimbra", "Dresden", "Eindhoven", "Florence", "Geneva", "Hobart",
           "Innsbruck", "Jaipur", "Kyoto", "Lyon", "Montreal", "Nairobi", "Oslo", "Porto", "Quito",
           "Reykjavik", "Seville", "Tartu", "Utrecht", "Valparaiso", "Wellington", "Yokohama", "Zagreb")


def make_people(npartitions: int = 10, records_per_partition: int = 1000, seed: int | None = None) -> Bag:
    """A Bag of ``npartitions * records_per_partition`` made-up people, each a dict with
    ``age`` (0-120), ``name`` (a first name and a surname), ``occupation``, ``telephone``,
    ``address`` (``{"address": ..., "city": ...}``) and ``credit-card`` (``{"number": ...,
    "expiration-date": "MM/YY"}``), as in dask's tutorials. ``seed=None`` draws one, so two
    calls differ; give a seed for the same records every time.

    >>> import json, xsched.bag as xb
    >>> people = make_people(npartitions=2, records_per_partition=50, seed=1)
    >>> adults = people.filter(lambda p: p["age"] >= 18).map(json.dumps)
    >>> adults.count().compute() <= 100, make_people(2, 50, seed=1).take(2) == people.take(2)
    (True, True)
    """
    _check_count(npartitions, "make_people", "npartitions", minimum=1)
    _check_count(records_per_partition, "make_people", "records_per_partition")
    if seed is None:
        seed = int(np.random.SeedSequence().entropy % 2**32)
    name = f"make-people-{new_token('make-people', npartitions, records_per_partition, seed)}"
    ann = annotations_in_force()
    layer = {chunk_key(name, (i,)): Task(_people, (records_per_partition, seed, i), {}, per_task(ann))
             for i in range(npartitions)}
    return Bag(layer, name, npartitions)


def _pick(rng: np.random.Generator, words: tuple, n: int) -> list[str]:
    return [words[i] for i in rng.integers(0, len(words), n)]


def _people(n: int, seed: int, number: int) -> list[dict[str, Any]]:
    """Run on the workers: ``n`` people from a generator seeded by ``(seed, number)``."""
    rng = np.random.default_rng([int(seed), int(number)])
    ages = rng.integers(0, 121, n)
    first, last, jobs = _pick(rng, _FIRST, n), _pick(rng, _LAST, n), _pick(rng, _OCCUPATIONS, n)
    streets, kinds, cities = _pick(rng, _STREETS, n), _pick(rng, _KINDS, n), _pick(rng, _CITIES, n)
    houses = rng.integers(1, 1000, n)
    phones = rng.integers(0, 10, (n, 10))
    cards = rng.integers(0, 10, (n, 16))
    months, years = rng.integers(1, 13, n), rng.integers(26, 36, n)
    people = []
    for i in range(n):
        p, c = "".join(map(str, phones[i])), "".join(map(str, cards[i]))
        people.append({
            "age": int(ages[i]),
            "name": (first[i], last[i]),
            "occupation": jobs[i],
            "telephone": f"+1-({p[:3]})-{p[3:6]}-{p[6:]}",
            "address": {"address": f"{houses[i]} {streets[i]} {kinds[i]}", "city": cities[i]},
            "credit-card": {"number": " ".join(c[j:j + 4] for j in range(0, 16, 4)),
                            "expiration-date": f"{months[i]:02d}/{years[i]:02d}"},
        })
    return people
