"""Generated requests with numeric arguments: science, maths, units, finance, knowledge look-ups.

The business tools of :mod:`ooo_agent.train.generated` take mostly strings. Agents also call
tools whose arguments are numbers, and that is where a small model slips: it writes ``2.0``
for an ``integer`` slot, drops a required number, or forgets the optional argument the user
named ("round to 3 places", "in miles"). These tools are typed the way Python functions are
(``integer`` vs ``number``, arrays of numbers, enums, optional arguments with a stated
default), every value is written in the request, and optional arguments appear exactly when
the request names them. Integers stay integers; a ``number`` is written as the user wrote it.

The function names are our own and must not be an evaluation category's (a test checks).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from ooo_agent.train._tool_schema import load_table, table_tools
from ooo_agent.train._tool_schema import pick as _pick

__all__ = ["SCIENCE_DOMAINS", "SCIENCE_GENERATORS", "SCIENCE_TOOLS"]

Args = dict[str, Any]
Make = Callable[[random.Random], tuple[str, Args]]


_T = load_table("science")
"""Tools, domains and value pools (``tables/science.json``)."""

SCIENCE_TOOLS: dict[str, Any] = table_tools(_T["tools"], python=True)


def _num(rng: random.Random, low: int, high: int, decimals: float = 0.4) -> int | float:
    """An integer, or (with probability ``decimals``) a one- or two-decimal number."""
    if rng.random() < decimals:
        value = round(rng.uniform(low, high), rng.choice([1, 2]))
        return int(value) if value.is_integer() else value
    return rng.randint(low, high)


def _list(words: list[str]) -> str:
    return ", ".join(words[:-1]) + " and " + words[-1] if len(words) > 1 else words[0]


def _kinetic(rng: random.Random) -> tuple[str, Args]:
    m, v = _num(rng, 1, 90), _num(rng, 1, 40)
    args: Args = {"mass": m, "velocity": v}
    text = _pick(
        rng,
        f"What is the kinetic energy of a {m} kg object moving at {v} m/s",
        f"Compute the kinetic energy for a mass of {m} kg and a velocity of {v} m/s",
    )
    if rng.random() < 0.3:
        args["unit"] = rng.choice(["kilojoules", "calories"])
        text += f", in {args['unit']}"
    return text + "?", args


def _free_fall(rng: random.Random) -> tuple[str, Args]:
    t = rng.randint(1, 12)
    if rng.random() < 0.35:
        g = rng.choice([1.62, 3.71, 24.79, 8.87])
        return f"How far does a stone fall in {t} seconds where gravity is {g} m/s^2?", {
            "time": t,
            "gravity": g,
        }
    return _pick(
        rng,
        f"How far does an object dropped from rest fall in {t} seconds?",
        f"Find the free-fall distance after {t} seconds.",
    ), {"time": t}


def _speed(rng: random.Random) -> tuple[str, Args]:
    d, h = rng.randint(20, 900), rng.randint(1, 12)
    args: Args = {"distance": d, "duration": h}
    text = _pick(
        rng,
        f"A train covers {d} kilometers in {h} hours. What is its average speed",
        f"Calculate the average speed for a trip of {d} km that took {h} hours",
    )
    if rng.random() < 0.3:
        args["unit"] = "m/s"
        text += " in m/s"
    return text + "?", args


def _ohm(rng: random.Random) -> tuple[str, Args]:
    v, r = _num(rng, 3, 240), rng.randint(2, 500)
    return _pick(
        rng,
        f"What current flows through a {r} ohm resistor with {v} volts across it?",
        f"Use Ohm's law: voltage {v} V, resistance {r} ohms. Find the current.",
    ), {"voltage": v, "resistance": r}


def _molar(rng: random.Random) -> tuple[str, Args]:
    f = rng.choice(_T["formulas"])
    return _pick(rng, f"What is the molar mass of {f}?", f"Give me the molar mass of {f}."), {
        "formula": f
    }


def _gas(rng: random.Random) -> tuple[str, Args]:
    n, t = _num(rng, 1, 9, 0.6), rng.randint(250, 400)
    args: Args = {"moles": n, "temperature": t}
    text = f"What volume do {n} moles of an ideal gas occupy at {t} K"
    if rng.random() < 0.4:
        args["pressure"] = rng.choice([2, 0.5, 1.5, 3])
        text += f" and {args['pressure']} atm"
    return text + "?", args


def _rectangle(rng: random.Random) -> tuple[str, Args]:
    a, b = rng.randint(2, 80), rng.randint(2, 80)
    args: Args = {"length": a, "width": b}
    if rng.random() < 0.4:
        args["unit"] = rng.choice(["cm", "ft", "in"])
        return (
            f"Find the area of a rectangle {a} {args['unit']} long and {b} {args['unit']} wide.",
            args,
        )
    return _pick(
        rng,
        f"Find the area of a rectangle with length {a} and width {b}.",
        f"What's the area of a {a} by {b} rectangle?",
    ), args


def _sphere(rng: random.Random) -> tuple[str, Args]:
    r = _num(rng, 1, 30)
    if rng.random() < 0.35:
        d = rng.choice([0, 1, 3, 4])
        return f"Volume of a sphere of radius {r}, rounded to {d} decimal places.", {
            "radius": r,
            "round_to": d,
        }
    return _pick(
        rng,
        f"What is the volume of a sphere with a radius of {r}?",
        f"Calculate the volume of a ball whose radius is {r}.",
    ), {"radius": r}


def _compound(rng: random.Random) -> tuple[str, Args]:
    p, y = rng.choice([500, 1000, 2500, 5000, 10000]), rng.randint(2, 30)
    rate = rng.choice([0.02, 0.03, 0.04, 0.05, 0.06, 0.07])
    args: Args = {"principal": p, "rate": rate, "years": y}
    text = f"How much will {p} dollars grow to in {y} years at an annual rate of {rate}"
    if rng.random() < 0.4:
        args["compounds_per_year"] = rng.choice([4, 12, 365])
        text += f", compounded {args['compounds_per_year']} times a year"
    return text + "?", args


def _loan(rng: random.Random) -> tuple[str, Args]:
    a, r, y = (
        rng.choice([15000, 200000, 350000, 8000]),
        rng.choice([3.5, 4.2, 5, 6.75]),
        rng.choice([5, 10, 15, 30]),
    )
    return _pick(
        rng,
        f"What is the monthly payment on a {a} loan at {r}% for {y} years?",
        f"I borrow {a} over {y} years at {r} percent a year. Monthly installment?",
    ), {"loan_amount": a, "annual_rate": r, "years": y}


def _lcm(rng: random.Random) -> tuple[str, Args]:
    nums = rng.sample(range(2, 60), rng.randint(2, 4))
    return f"Find the least common multiple of {_list([str(n) for n in nums])}.", {"numbers": nums}


def _mean(rng: random.Random) -> tuple[str, Args]:
    vals = [_num(rng, 1, 99, 0.3) for _ in range(rng.randint(3, 6))]
    args: Args = {"values": vals}
    text = f"What is the average of {_list([str(v) for v in vals])}"
    if rng.random() < 0.3:
        args["round_to"] = rng.choice([0, 1, 3])
        text += f", rounded to {args['round_to']} decimals"
    return text + "?", args


def _power(rng: random.Random) -> tuple[str, Args]:
    b, e = rng.randint(2, 20), rng.randint(2, 40)
    if rng.random() < 0.4:
        m = rng.choice([7, 13, 97, 1000])
        return f"Compute {b} to the power of {e} modulo {m}.", {
            "base": b,
            "exponent": e,
            "modulus": m,
        }
    return f"What is {b} raised to the power {e}?", {"base": b, "exponent": e}


def _binomial(rng: random.Random) -> tuple[str, Args]:
    n = rng.randint(5, 30)
    k, p = rng.randint(1, n), rng.choice([0.1, 0.25, 0.3, 0.5, 0.6])
    return _pick(
        rng,
        f"What is the probability of getting exactly {k} successes in {n} trials if each succeeds with probability {p}?",
        f"Binomial probability: {n} trials, {k} successes, success chance {p}.",
    ), {"trials": n, "successes": k, "p": p}


def _length(rng: random.Random) -> tuple[str, Args]:
    v = _num(rng, 1, 500)
    src, dst = rng.sample(_T["lengths"], 2)
    return _pick(rng, f"Convert {v} {src} to {dst}.", f"How many {dst} is {v} {src}?"), {
        "value": v,
        "from_unit": src,
        "to_unit": dst,
    }


def _temperature(rng: random.Random) -> tuple[str, Args]:
    t = _num(rng, -20, 120, 0.3)
    src, dst = rng.sample(_T["scales"], 2)
    return f"Convert {t} degrees {src} to {dst}.", {
        "temperature": t,
        "from_scale": src,
        "to_scale": dst,
    }


def _distance(rng: random.Random) -> tuple[str, Args]:
    a, b = rng.sample(_T["cities"], 2)
    if rng.random() < 0.4:
        return f"How far is {a} from {b} in miles?", {
            "origin": a,
            "destination": b,
            "unit": "miles",
        }
    return f"What's the distance between {a} and {b}?", {"origin": a, "destination": b}


def _cells(rng: random.Random) -> tuple[str, Args]:
    c, d = rng.randint(1, 50), rng.randint(2, 20)
    return f"Starting from {c} cells, how many cells are there after {d} divisions?", {
        "initial_cells": c,
        "divisions": d,
    }


def _season(rng: random.Random) -> tuple[str, Args]:
    team, year = rng.choice(_T["teams"]), rng.randint(1995, 2023)
    if rng.random() < 0.35:
        return f"Show the {year} season record of the {team}, playoffs included.", {
            "team": team,
            "season": year,
            "include_playoffs": True,
        }
    return f"How did the {team} do in the {year} season?", {"team": team, "season": year}


def _event_date(rng: random.Random) -> tuple[str, Args]:
    event = rng.choice(_T["events"])
    if rng.random() < 0.3:
        region = rng.choice(_T["regions"])
        return f"When did {event} happen in {region}?", {"event": event, "region": region}
    return f"When was {event}?", {"event": event}


def _songs(rng: random.Random) -> tuple[str, Args]:
    artist = rng.choice(_T["artists"])
    args: Args = {"artist": artist}
    text = f"Find songs by {artist}"
    if rng.random() < 0.35:
        args["year"] = rng.randint(1970, 2022)
        text += f" released in {args['year']}"
    if rng.random() < 0.25:
        args["genre"] = rng.choice(_T["genres"])
        text += f" in the {args['genre']} genre"
    return text + ".", args


def _dishes(rng: random.Random) -> tuple[str, Args]:
    items = rng.sample(_T["ingredients"], rng.randint(1, 3))
    args: Args = {"ingredients": items}
    text = f"Suggest recipes with {_list(items)}"
    if rng.random() < 0.35:
        args["max_calories"] = rng.choice([400, 500, 600, 800])
        text += f" under {args['max_calories']} calories"
    if rng.random() < 0.3:
        args["diet"] = rng.choice(_T["diets"])
        text += f", {args['diet']}"
    return text + ".", args


SCIENCE_GENERATORS: list[tuple[str, Make]] = [
    ("physics.kinetic_energy_of_body", _kinetic),
    ("physics.free_fall_distance", _free_fall),
    ("travel.average_speed", _speed),
    ("electric.current_from_ohms_law", _ohm),
    ("chemistry.molar_mass_of", _molar),
    ("chemistry.gas_volume", _gas),
    ("shapes.rectangle_area", _rectangle),
    ("shapes.sphere_volume", _sphere),
    ("savings.compound_growth", _compound),
    ("loans.monthly_installment", _loan),
    ("numbers.least_common_multiple", _lcm),
    ("numbers.mean_value", _mean),
    ("numbers.modular_power", _power),
    ("stats.binomial_chance", _binomial),
    ("units.convert_length", _length),
    ("units.convert_temperature", _temperature),
    ("maps.city_distance", _distance),
    ("biology.cells_after_divisions", _cells),
    ("sports.team_season_record", _season),
    ("history.event_date_lookup", _event_date),
    ("music.songs_by_artist", _songs),
    ("recipes.find_dishes", _dishes),
]

SCIENCE_DOMAINS: dict[str, tuple[str, ...]] = {
    name: tuple(members) for name, members in _T["domains"].items()
}
