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

from ooo_agent.train._tool_schema import array_param as _arr
from ooo_agent.train._tool_schema import param as _p
from ooo_agent.train._tool_schema import pick as _pick
from ooo_agent.train._tool_schema import python_tool as _tool

__all__ = ["SCIENCE_DOMAINS", "SCIENCE_GENERATORS", "SCIENCE_TOOLS"]

Args = dict[str, Any]
Make = Callable[[random.Random], tuple[str, Args]]


_LENGTHS = ["meters", "feet", "inches", "kilometers", "miles", "centimeters", "yards"]
_SCALES = ["celsius", "fahrenheit", "kelvin"]
_FORMULAS = ["H2O", "CO2", "NaCl", "C6H12O6", "CH4", "NH3", "H2SO4", "C2H5OH"]
_TEAMS = ["Chicago Bulls", "Boston Celtics", "Real Madrid", "Manchester United", "Yankees"]
_ARTISTS = ["Adele", "Coldplay", "Miles Davis", "Taylor Swift", "Daft Punk", "Shakira"]
_GENRES = ["jazz", "pop", "rock", "electronic", "classical"]
_EVENTS = [
    "the fall of the Berlin Wall",
    "the first Moon landing",
    "the French Revolution",
    "the signing of the Magna Carta",
    "the invention of the printing press",
]
_REGIONS = ["Europe", "Asia", "North America", "Africa", "South America"]
_INGREDIENTS = ["chicken", "rice", "spinach", "tomatoes", "lentils", "tofu", "mushrooms", "eggs"]
_DIETS = ["vegetarian", "vegan", "gluten-free", "keto"]
_CITIES = ["Paris", "Berlin", "Madrid", "Rome", "Vienna", "Prague", "Lisbon", "Dublin"]

SCIENCE_TOOLS: dict[str, Any] = {
    t["function"]["name"]: t
    for t in [
        _tool(
            "physics.kinetic_energy_of_body",
            "Compute the kinetic energy of a moving body.",
            {
                "mass": _p("number", "Mass of the body in kilograms."),
                "velocity": _p("number", "Speed of the body in m/s."),
                "unit": _p("string", "Optional. Energy unit of the result. Default is 'joules'."),
            },
            ["mass", "velocity"],
        ),
        _tool(
            "physics.free_fall_distance",
            "Distance an object falls from rest in a given time, without air resistance.",
            {
                "time": _p("integer", "Falling time in seconds."),
                "gravity": _p("number", "Acceleration due to gravity in m/s^2. Default is 9.81."),
            },
            ["time"],
        ),
        _tool(
            "travel.average_speed",
            "Average speed over a trip of a given distance and duration.",
            {
                "distance": _p("integer", "Distance covered, in kilometers."),
                "duration": _p("integer", "Time taken, in hours."),
                "unit": _p("string", "Optional. Unit of the result. Default is 'km/h'."),
            },
            ["distance", "duration"],
        ),
        _tool(
            "electric.current_from_ohms_law",
            "Current through a resistor from the voltage across it (Ohm's law).",
            {
                "voltage": _p("number", "Voltage in volts."),
                "resistance": _p("integer", "Resistance in ohms."),
            },
            ["voltage", "resistance"],
        ),
        _tool(
            "chemistry.molar_mass_of",
            "Molar mass of a compound given its chemical formula.",
            {"formula": _p("string", "Chemical formula, e.g. 'H2O'.")},
            ["formula"],
        ),
        _tool(
            "chemistry.gas_volume",
            "Volume of an ideal gas from amount, temperature and pressure.",
            {
                "moles": _p("number", "Amount of gas in moles."),
                "temperature": _p("integer", "Temperature in kelvin."),
                "pressure": _p("number", "Pressure in atmospheres. Default is 1."),
            },
            ["moles", "temperature"],
        ),
        _tool(
            "shapes.rectangle_area",
            "Area of a rectangle.",
            {
                "length": _p("integer", "Length of the rectangle."),
                "width": _p("integer", "Width of the rectangle."),
                "unit": _p("string", "Optional. Unit of the sides, e.g. 'cm'. Default is 'm'."),
            },
            ["length", "width"],
        ),
        _tool(
            "shapes.sphere_volume",
            "Volume of a sphere from its radius.",
            {
                "radius": _p("number", "Radius of the sphere."),
                "round_to": _p("integer", "Decimal places of the result. Default is 2."),
            },
            ["radius"],
        ),
        _tool(
            "savings.compound_growth",
            "Future value of a deposit with compound interest.",
            {
                "principal": _p("integer", "Initial deposit."),
                "rate": _p("number", "Annual interest rate as a decimal, e.g. 0.05 for 5%."),
                "years": _p("integer", "Number of years."),
                "compounds_per_year": _p("integer", "Compounding periods per year. Default 1."),
            },
            ["principal", "rate", "years"],
        ),
        _tool(
            "loans.monthly_installment",
            "Monthly payment of a fixed-rate loan.",
            {
                "loan_amount": _p("integer", "Amount borrowed."),
                "annual_rate": _p("number", "Annual interest rate in percent, e.g. 4.5."),
                "years": _p("integer", "Length of the loan in years."),
            },
            ["loan_amount", "annual_rate", "years"],
        ),
        _tool(
            "numbers.least_common_multiple",
            "Least common multiple of a list of integers.",
            {"numbers": _arr("The integers.", "integer")},
            ["numbers"],
        ),
        _tool(
            "numbers.mean_value",
            "Arithmetic mean of a list of numbers.",
            {
                "values": _arr("The numbers to average.", "number"),
                "round_to": _p("integer", "Decimal places of the result. Default is 2."),
            },
            ["values"],
        ),
        _tool(
            "numbers.modular_power",
            "Raise a base to an exponent, optionally modulo a number.",
            {
                "base": _p("integer", "The base."),
                "exponent": _p("integer", "The exponent."),
                "modulus": _p("integer", "Optional modulus. Default is none."),
            },
            ["base", "exponent"],
        ),
        _tool(
            "stats.binomial_chance",
            "Probability of exactly k successes in n independent trials.",
            {
                "trials": _p("integer", "Number of trials."),
                "successes": _p("integer", "Number of successes."),
                "p": _p("number", "Probability of success in one trial."),
            },
            ["trials", "successes", "p"],
        ),
        _tool(
            "units.convert_length",
            "Convert a length from one unit to another.",
            {
                "value": _p("number", "The length to convert."),
                "from_unit": _p("string", "Unit of the value.", enum=_LENGTHS),
                "to_unit": _p("string", "Unit to convert to.", enum=_LENGTHS),
            },
            ["value", "from_unit", "to_unit"],
        ),
        _tool(
            "units.convert_temperature",
            "Convert a temperature between scales.",
            {
                "temperature": _p("number", "The temperature to convert."),
                "from_scale": _p("string", "Scale of the value.", enum=_SCALES),
                "to_scale": _p("string", "Scale to convert to.", enum=_SCALES),
            },
            ["temperature", "from_scale", "to_scale"],
        ),
        _tool(
            "maps.city_distance",
            "Straight-line distance between two cities.",
            {
                "origin": _p("string", "First city."),
                "destination": _p("string", "Second city."),
                "unit": _p("string", "Distance unit. Default is 'km'.", enum=["km", "miles"]),
            },
            ["origin", "destination"],
        ),
        _tool(
            "biology.cells_after_divisions",
            "Number of cells after a number of divisions.",
            {
                "initial_cells": _p("integer", "Cells at the start."),
                "divisions": _p("integer", "Number of division cycles."),
            },
            ["initial_cells", "divisions"],
        ),
        _tool(
            "sports.team_season_record",
            "Win/loss record and statistics of a team for one season.",
            {
                "team": _p("string", "Team name."),
                "season": _p("integer", "Season year, e.g. 2019."),
                "include_playoffs": _p("boolean", "Include playoff games. Default is false."),
            },
            ["team", "season"],
        ),
        _tool(
            "history.event_date_lookup",
            "Date of a historical event.",
            {
                "event": _p("string", "The event."),
                "region": _p("string", "Optional. Region to disambiguate the event."),
            },
            ["event"],
        ),
        _tool(
            "music.songs_by_artist",
            "Find songs by an artist.",
            {
                "artist": _p("string", "Artist name."),
                "year": _p("integer", "Optional. Release year."),
                "genre": _p("string", "Optional. Genre filter."),
            },
            ["artist"],
        ),
        _tool(
            "recipes.find_dishes",
            "Find recipes that use the given ingredients.",
            {
                "ingredients": _arr("Ingredients to use.", "string"),
                "max_calories": _p("integer", "Optional. Calorie limit per serving."),
                "diet": _p("string", "Optional diet.", enum=_DIETS),
            },
            ["ingredients"],
        ),
    ]
}


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
    f = rng.choice(_FORMULAS)
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
    src, dst = rng.sample(_LENGTHS, 2)
    return _pick(rng, f"Convert {v} {src} to {dst}.", f"How many {dst} is {v} {src}?"), {
        "value": v,
        "from_unit": src,
        "to_unit": dst,
    }


def _temperature(rng: random.Random) -> tuple[str, Args]:
    t = _num(rng, -20, 120, 0.3)
    src, dst = rng.sample(_SCALES, 2)
    return f"Convert {t} degrees {src} to {dst}.", {
        "temperature": t,
        "from_scale": src,
        "to_scale": dst,
    }


def _distance(rng: random.Random) -> tuple[str, Args]:
    a, b = rng.sample(_CITIES, 2)
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
    team, year = rng.choice(_TEAMS), rng.randint(1995, 2023)
    if rng.random() < 0.35:
        return f"Show the {year} season record of the {team}, playoffs included.", {
            "team": team,
            "season": year,
            "include_playoffs": True,
        }
    return f"How did the {team} do in the {year} season?", {"team": team, "season": year}


def _event_date(rng: random.Random) -> tuple[str, Args]:
    event = rng.choice(_EVENTS)
    if rng.random() < 0.3:
        region = rng.choice(_REGIONS)
        return f"When did {event} happen in {region}?", {"event": event, "region": region}
    return f"When was {event}?", {"event": event}


def _songs(rng: random.Random) -> tuple[str, Args]:
    artist = rng.choice(_ARTISTS)
    args: Args = {"artist": artist}
    text = f"Find songs by {artist}"
    if rng.random() < 0.35:
        args["year"] = rng.randint(1970, 2022)
        text += f" released in {args['year']}"
    if rng.random() < 0.25:
        args["genre"] = rng.choice(_GENRES)
        text += f" in the {args['genre']} genre"
    return text + ".", args


def _dishes(rng: random.Random) -> tuple[str, Args]:
    items = rng.sample(_INGREDIENTS, rng.randint(1, 3))
    args: Args = {"ingredients": items}
    text = f"Suggest recipes with {_list(items)}"
    if rng.random() < 0.35:
        args["max_calories"] = rng.choice([400, 500, 600, 800])
        text += f" under {args['max_calories']} calories"
    if rng.random() < 0.3:
        args["diet"] = rng.choice(_DIETS)
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
    "physics": (
        "physics.kinetic_energy_of_body",
        "physics.free_fall_distance",
        "travel.average_speed",
        "electric.current_from_ohms_law",
    ),
    "chemistry": (
        "chemistry.molar_mass_of",
        "chemistry.gas_volume",
        "biology.cells_after_divisions",
    ),
    "geometry": ("shapes.rectangle_area", "shapes.sphere_volume", "units.convert_length"),
    "money": ("savings.compound_growth", "loans.monthly_installment", "stats.binomial_chance"),
    "numbers": (
        "numbers.least_common_multiple",
        "numbers.mean_value",
        "numbers.modular_power",
        "stats.binomial_chance",
    ),
    "units": ("units.convert_length", "units.convert_temperature", "maps.city_distance"),
    "knowledge": (
        "sports.team_season_record",
        "history.event_date_lookup",
        "music.songs_by_artist",
        "recipes.find_dishes",
        "maps.city_distance",
    ),
}
