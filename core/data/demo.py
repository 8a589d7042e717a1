"""A generated, labeled, multi-domain NER demo data set, so the app is useful on first start.

Why generated: no data can be downloaded on first start, and the CrossNER files may not be
there, yet every page (similarity, selection, projection, training) needs a TC, a large mixed
DC, and labeled LC/dev/test splits. The sentences come from hand-written lexicons (invented or
real-sounding names, many of them multi-token) and 40+ sentence patterns per domain, combined
with connective clauses, dates and numbers, so that:

- the five domains (music, science, politics, literature, ai, as in CrossNER) differ in
  vocabulary *and* in entity types, and a selection strategy has something real to find
  when it picks target-domain sentences out of the mixed DC;
- density lands between CoNLL-2003 (~1.7 entities per sentence) and CrossNER (~6);
- the output is a pure function of the seed (one `random.Random`, never the global one).

>>> demo = generate_demo(seed=13, target_domain="music", dc_size=500)
>>> len(demo.dc), len(demo.lc), demo.target_domain
(500, 150, 'music')
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from core.data.atomic import temp_path_for
from core.data.corpus import Corpus
from core.data.neardup import NearIndex, near_duplicate
from core.data.workspace import CorpusRole, Workspace
from core.errors import UserError
from core.progress import Progress

DOMAINS: tuple[str, ...] = ("music", "science", "politics", "literature", "ai")
DEMO_NAMES: dict[CorpusRole, str] = {CorpusRole.TC: "demo-tc", CorpusRole.DC: "demo-dc", CorpusRole.LC: "demo-lc",
                               CorpusRole.DEV: "demo-dev", CorpusRole.TEST: "demo-test"}
DC_CHUNK = 50_000  # DC sentences generated (and written) at a time: memory stays flat for a 10M-sentence DC
GENERATOR_VERSION = 2  # bump when the output for a given seed changes, so stored demos are rewritten
MAX_TOKENS = 40
MIN_TOKENS = 6


# --------------------------------------------------------------------------- lexicons
#
# The word lists and sentence patterns are data: demo_lexicon.json beside this module, read once.
# Entry syntax: "the |Royal Society" puts an untagged article before the name (templates never
# write "the" before such types); "<year>", "<country>", "<city>" are filled at generation time
# and become part of the entity ("the 1998 general election"). Patterns: {type} an entity; {type:sub} one from
# a narrower list, labeled `type` ({organisation:label}); {type+} a list of 2-4; {place} "City , Country" that
# fit; {#kind} a number or date (untagged); [a|b] a choice; <his>/<he>/<him> pronouns agreeing with the first
# person named in the sentence. Fillers are sentences without entities: real NER sets have many, and they keep
# density honest.


def _frozen(value: Any) -> Any:
    """JSON lists back to the tuples the generator indexes (dicts keep their order)."""
    if isinstance(value, list):
        return tuple(_frozen(v) for v in value)
    if isinstance(value, dict):
        return {k: _frozen(v) for k, v in value.items()}
    return value


_LEX: dict[str, Any] = _frozen(json.loads((Path(__file__).with_name("demo_lexicon.json")).read_text("utf-8")))
_FIRST_MALE: tuple[str, ...] = _LEX["first_male"]
_FIRST_FEMALE: tuple[str, ...] = _LEX["first_female"]
_SURNAMES: tuple[str, ...] = _LEX["surnames"]
_STAGE_NAMES: tuple[str, ...] = _LEX["stage_names"]
_PERSON_TYPES = frozenset({"musicalartist", "scientist", "politician", "writer", "researcher", "person"})
_CITIES: tuple[str, ...] = _LEX["cities"]
_COUNTRIES: tuple[str, ...] = _LEX["countries"]
_UNIVERSITIES: tuple[str, ...] = _LEX["universities"]
_CITY_COUNTRY: dict[str, str] = _LEX["city_country"]  # "{place}" renders "City , Country" with a country that fits
_CITY_PAIRS = tuple(_CITY_COUNTRY.items())
_SHARED: dict[str, tuple[str, ...]] = {"location": _CITIES, "country": _COUNTRIES, "university": _UNIVERSITIES}
_LEXICON: dict[str, dict[str, tuple[str, ...]]] = _LEX["lexicon"]
_TEMPLATES: dict[str, tuple[str, ...]] = _LEX["templates"]
_FILLERS: dict[str, tuple[str, ...]] = _LEX["fillers"]
_GENERIC_FILLERS: tuple[str, ...] = _LEX["generic_fillers"]
_GENERIC_PREFIXES: tuple[str, ...] = _LEX["generic_prefixes"]
_PREFIXES: dict[str, tuple[str, ...]] = _LEX["prefixes"]
_GENERIC_SUFFIXES: tuple[str, ...] = _LEX["generic_suffixes"]
_SUFFIXES: dict[str, tuple[str, ...]] = _LEX["suffixes"]
_JOINERS = (", and", ";", ", while", ", although")
_NO_PREFIX_START = frozenset({"in", "during", "after", "before", "while", "following", "under", "unlike", "at", "like",
                              "although", "despite", "since"})
_CONNECTIVES = tuple(p for p in _GENERIC_PREFIXES if "{" not in p and not p.startswith("@"))


def _timeless(pattern: str) -> bool:
    """Statements like "X is a rock band" take no "In 1998 ," before and no ", which surprised
    many observers" after them."""
    return bool({"is", "are", "born", "can"} & set(pattern.split()))


def _takes_prefix(pattern: str) -> bool:
    """Whether "In 1998 , ..." can go before the pattern: not before another adverbial opening."""
    return pattern.split()[0].lower() not in _NO_PREFIX_START and not _timeless(pattern)


def _prefix_fits(prefix: str, pattern: str) -> bool:
    """A "@" prefix ("While living in Oslo ,") only before a pattern that opens with a person or band."""
    if not prefix.startswith("@"):
        return True
    first = _SLOT_RE.match(pattern)
    return first is not None and first.group(1) in _PERSON_TYPES | {"band"}

_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November",
           "December")
_ORDINALS = ("second", "third", "fourth", "fifth", "sixth", "seventh", "eighth")
_NUMBER_WORDS = ("two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve")

_TOKEN_RE = re.compile(r"\d+(?:[.,]\d+)+|'s\b|\w+(?:['-]\w+)*(?<!'s)|[^\w\s]")
_SLOT_RE = re.compile(r"\{([^{}]+)\}")
_CHOICE_RE = re.compile(r"\[([^\[\]]*)\]")
_PRONOUNS = {"male": {"<his>": "his", "<he>": "he", "<him>": "him", "<His>": "His", "<He>": "He"},
             "female": {"<his>": "her", "<he>": "she", "<him>": "her", "<His>": "Her", "<He>": "She"}}


@lru_cache(maxsize=8192)
def _tokenize(text: str) -> tuple[str, ...]:
    """Whitespace tokens with punctuation and possessive 's split off ("Paris ," / "Halley 's")."""
    return tuple(_TOKEN_RE.findall(text))


def domain_entity_types(domain: str) -> list[str]:
    """The entity types a domain's sentences are labeled with (every slot its patterns use)."""
    _check_domain(domain)
    return sorted(_slot_types(domain))


@cache
def _slot_types(domain: str) -> frozenset[str]:
    patterns = _TEMPLATES[domain] + _FILLERS[domain] + _PREFIXES[domain] + _SUFFIXES[domain]
    types = {slot.rstrip("+").split(":")[0] for p in patterns for slot in _SLOT_RE.findall(p) if not slot.startswith("#")}
    if "place" in types:
        types = (types - {"place"}) | {"location", "country"}
    return frozenset(types)


def _check_domain(domain: str) -> None:
    if domain not in _TEMPLATES:
        raise UserError(f"unknown demo domain {domain!r}; choose one of {', '.join(DOMAINS)}")


# --------------------------------------------------------------------------- generation


class _SentenceMaker:
    """Renders patterns of one domain into (tokens, tags); all randomness from one rng."""

    def __init__(self, domain: str, rng: random.Random):
        _check_domain(domain)
        self.domain = domain
        self.rng = rng
        self.lexicon = {**_SHARED, **_LEXICON[domain]}
        self.templates = _TEMPLATES[domain]
        self.fillers = _FILLERS[domain] + _GENERIC_FILLERS
        self.prefixes = _PREFIXES[domain]
        self.suffixes = _SUFFIXES[domain]
        patterns = self.templates + self.fillers + self.prefixes + self.suffixes
        slots = {slot.rstrip("+") for p in patterns for slot in _SLOT_RE.findall(p) if not slot.startswith("#")}
        missing = sorted(t for t in slots if t not in self.lexicon and t not in _PERSON_TYPES | {"place"})
        if missing:
            raise KeyError(f"demo domain {domain!r} uses entity types without a lexicon: {missing}")

    # ---- pieces: (tokens, entity type or None)
    def _number(self, kind: str) -> list[str]:
        r = self.rng
        if kind == "year":
            return [str(r.randint(1952, 2023))]
        if kind == "num":
            n = r.randint(2, 12)
            return [_NUMBER_WORDS[n - 2] if r.random() < 0.5 else str(n)]
        if kind == "big":
            return [f"{r.choice((5, 10, 12, 20, 25, 40, 50, 75, 120, 250, 400)) * 1000:,}"]
        if kind == "hundreds":
            return [str(r.randint(1, 9) * 100 + r.choice((0, 0, 50)))]
        if kind == "pct":
            value = f"{r.randint(10, 95)}" if r.random() < 0.6 else f"{r.uniform(10, 95):.1f}"
            return [value, "%"] if r.random() < 0.7 else [value, "per", "cent"]
        if kind == "decimal":
            return [f"{r.uniform(0.55, 0.97):.2f}" if r.random() < 0.5 else f"{r.uniform(55, 97):.1f}"]
        if kind == "seats":
            return [str(r.randint(12, 340))]
        if kind == "rank":
            return [str(r.randint(1, 40))]
        if kind == "age":
            return [str(r.randint(5, 16))]
        if kind == "young":
            return [str(r.randint(21, 34))]
        if kind == "old":
            return [str(r.choice((50, 60, 65, 70, 75)))]
        if kind == "ord":
            return [r.choice(_ORDINALS)]
        if kind == "month":
            return [r.choice(_MONTHS)]
        if kind == "day":
            return [str(r.randint(1, 28))]
        if kind == "decade":
            return [f"{r.randrange(1950, 2020, 10)}s"]
        raise KeyError(f"unknown number slot {{#{kind}}}")

    def _person(self, typ: str, gender: str | None) -> list[str]:
        r = self.rng
        if typ == "musicalartist" and gender is None and r.random() < 0.2:
            return list(_tokenize(r.choice(_STAGE_NAMES)))
        gender = gender or r.choice(("male", "female"))
        first = r.choice(_FIRST_MALE if gender == "male" else _FIRST_FEMALE)
        middle = [f"{r.choice('ABCDEFGHJKLMNPRSTW')}."] if typ in ("scientist", "researcher") and r.random() < 0.2 else []
        return [first, *middle, *r.choice(_SURNAMES).split()]

    def _entity(self, typ: str, state: dict) -> list[tuple[list[str], str | None]]:
        r = self.rng
        used: set[str] = state["used"]
        if typ == "place":
            city, country = r.choice(_CITY_PAIRS)
            return [(list(_tokenize(city)), "location"), ([","], None), (list(_tokenize(country)), "country")]
        for _ in range(6):
            if typ in _PERSON_TYPES:
                gender = None if state["named"] else state["gender"]
                pieces = [(self._person(typ, gender), typ)]
                state["named"] = True
            else:
                entry = r.choice(self.lexicon[typ])
                entry = entry.replace("<year>", str(r.randint(1952, 2023)))
                entry = entry.replace("<country>", r.choice(_COUNTRIES)).replace("<city>", r.choice(_CITIES))
                article, _, name = entry.rpartition("|")
                label = typ.split(":")[0]
                pieces = ([(list(_tokenize(article)), None)] if article.strip() else []) + [(list(_tokenize(name)), label)]
            key = " ".join(pieces[-1][0])
            if key not in used:
                break
        used.add(key)
        return pieces

    def _render(self, template: str, state: dict) -> list[tuple[list[str], str | None]]:
        template = template.lstrip("@")
        for marker, word in _PRONOUNS[state["gender"]].items():
            template = template.replace(marker, word)
        while "[" in template:
            template = _CHOICE_RE.sub(lambda m: self.rng.choice(m.group(1).split("|")), template)
        pieces: list[tuple[list[str], str | None]] = []
        for i, part in enumerate(_SLOT_RE.split(template)):
            if i % 2 == 0:
                if part.strip():
                    pieces.append((list(_tokenize(part)), None))
            elif part.startswith("#"):
                pieces.append((self._number(part[1:]), None))
            elif part.endswith("+"):
                typ = part[:-1]
                n = self.rng.choice((2, 2, 3, 3, 4))
                for k in range(n):
                    if k:
                        pieces.append((["and"] if k == n - 1 else [","], None))
                    pieces.extend(self._entity(typ, state))
            else:
                pieces.extend(self._entity(part, state))
        return [p for p in pieces if p[0]]

    def sentence(self) -> tuple[list[str], list[str]]:
        """One sentence of this domain as (tokens, BIO tags), MIN_TOKENS..MAX_TOKENS long."""
        r = self.rng
        for _ in range(20):
            state = {"used": set(), "gender": r.choice(("male", "female")), "named": False}
            if r.random() < 0.1:
                filler = r.choice(self.fillers)
                clauses = []
                if r.random() < 0.25 and _takes_prefix(filler):
                    clauses.append(self._render(r.choice(_CONNECTIVES), state))
                clauses.append(self._render(filler, state))
            else:
                main = r.choice(self.templates)
                clauses = []
                if r.random() < 0.3 and _takes_prefix(main):
                    prefixes = self.prefixes if r.random() < 0.4 else _GENERIC_PREFIXES
                    # one date per sentence: "In 1998 , X released Y in 2005" reads wrong
                    prefixes = [p for p in prefixes if _prefix_fits(p, main) and not ("{#" in main and "{#" in p)]
                    if prefixes:
                        clauses.append(self._render(r.choice(prefixes), state))
                clauses.append(self._render(main, state))
                roll = r.random()
                if roll < 0.12:
                    second = r.choice(self.templates)
                    joiner = r.choice(_JOINERS)
                    if joiner.split()[-1] in second.split():  # not "..., although X , although Y"
                        joiner = ";"
                    clauses.append([(list(_tokenize(joiner)), None)])
                    clauses.append(self._render(second, state))
                elif roll < 0.35 and not _timeless(main):
                    suffixes = self.suffixes if r.random() < 0.5 else _GENERIC_SUFFIXES
                    clauses.append([([","], None)])
                    clauses.append(self._render(r.choice(suffixes), state))
            tokens, tags = _assemble(clauses)
            if MIN_TOKENS <= len(tokens) <= MAX_TOKENS:
                return tokens, tags
        return tokens, tags


def _assemble(clauses: list[list[tuple[list[str], str | None]]]) -> tuple[list[str], list[str]]:
    """Join clauses into BIO-tagged tokens: capitalise the sentence start, lower-case literal
    clause starts after it, fix a/an before filled-in names, end with a full stop."""
    tokens: list[str] = []
    tags: list[str] = []
    for c, clause in enumerate(clauses):
        for p, (toks, typ) in enumerate(clause):
            toks = list(toks)
            # Patterns are capitalised as sentence starts; proper nouns are always slots, so a literal
            # clause start that is not an acronym reads lower-case inside the sentence.
            if c > 0 and p == 0 and typ is None and not toks[0].isupper():
                toks[0] = toks[0][:1].lower() + toks[0][1:]
            tokens.extend(toks)
            if typ is None:
                tags.extend("O" for _ in toks)
            else:
                tags.extend([f"B-{typ}"] + [f"I-{typ}"] * (len(toks) - 1))
    if tokens:
        tokens[0] = tokens[0][:1].upper() + tokens[0][1:]
    for i in range(len(tokens) - 1):
        # Patterns spell their own articles right; only an article before a filled-in name may need fixing.
        if tags[i] == "O" and tokens[i].lower() in ("a", "an") and tags[i + 1] != "O":
            article = "an" if tokens[i + 1][:1].lower() in "aeio" else "a"
            tokens[i] = article.capitalize() if tokens[i][0].isupper() else article
    tokens.append(".")
    tags.append("O")
    return tokens, tags


# --------------------------------------------------------------------------- the data set


@dataclass
class DemoData:
    """The five demo corpora: TC and DC unlabeled, LC/dev/test labeled with BIO tags."""

    tc: Corpus
    dc: Corpus
    lc: Corpus
    dev: Corpus
    test: Corpus
    target_domain: str

    def by_role(self) -> dict[CorpusRole, Corpus]:
        return {CorpusRole.TC: self.tc, CorpusRole.DC: self.dc, CorpusRole.LC: self.lc, CorpusRole.DEV: self.dev,
                CorpusRole.TEST: self.test}


def _corpus(rows: list[tuple[list[str], list[str]]], domains: list[str], prefix: str, labeled: bool, name: str) -> Corpus:
    return Corpus(tokens=[t for t, _ in rows], tags=[g for _, g in rows] if labeled else None,
                  fields={"id": [f"{prefix}-{i:06d}" for i in range(len(rows))], "domain": domains}, name=name)


def _dc_chunks(rng: random.Random, makers: dict[str, _SentenceMaker], test_texts: set[str], dc_size: int,
               chunk: int) -> Iterator[Corpus]:
    """DC in chunks of `chunk` sentences (ids dc-000000..., a `domain` field), drawn from `rng`
    in one fixed sequence, so the chunking never changes the data."""
    dc_domains = [DOMAINS[i % len(DOMAINS)] for i in range(dc_size)]
    rng.shuffle(dc_domains)
    for start in range(0, dc_size, chunk):
        rows: list[tuple[list[str], list[str]]] = []
        domains = dc_domains[start:start + chunk]
        for domain in domains:
            tokens, tags = makers[domain].sentence()
            while " ".join(tokens) in test_texts:
                tokens, tags = makers[domain].sentence()
            rows.append((tokens, tags))
        yield Corpus(tokens=[t for t, _ in rows], fields={"id": [f"dc-{i:06d}" for i in range(start, start + len(rows))],
                                                          "domain": domains}, name="demo-dc")


def _target_splits(seed: int, target_domain: str, tc_size: int, lc_size: int, dev_size: int, test_size: int):
    """(rng, makers, test, lc, dev, tc): the target-domain splits, and the generator state DC continues from."""
    _check_domain(target_domain)
    if min(tc_size, lc_size, dev_size, test_size) < 1:
        raise UserError("every demo corpus needs at least one sentence")
    rng = random.Random(seed)
    makers = {d: _SentenceMaker(d, rng) for d in DOMAINS}

    need = test_size + lc_size + dev_size + tc_size
    target: list[tuple[list[str], list[str]]] = []
    seen: set[str] = set()
    for _ in range(need * 20):
        tokens, tags = makers[target_domain].sentence()
        text = " ".join(tokens)
        if text not in seen:
            seen.add(text)
            target.append((tokens, tags))
            if len(target) == need:
                break
    if len(target) < need:
        raise RuntimeError(f"could only generate {len(target)} distinct {target_domain} sentences of {need}")
    test, rest = target[:test_size], target[test_size:]
    lc, dev, tc = rest[:lc_size], rest[lc_size:lc_size + dev_size], rest[lc_size + dev_size:]
    return rng, makers, test, lc, dev, _clean_tc(tc, dev + test, seen, seed, target_domain)


def _clean_tc(tc: list, held_out: list, seen: set[str], seed: int, domain: str) -> list:
    """TC without near duplicates of DEV/TEST (templated sentences often share most of their word pairs), topped up
    from a generator of its own, so the rest of the demo (DC continues from the main one) does not change. An
    experiment refuses DEV text in TC (core.experiments.guard): the demo must pass its own check."""
    against = NearIndex(" ".join(t) for t, _ in held_out)
    kept = [s for s in tc if not near_duplicate(" ".join(s[0]), against)]
    extra = _SentenceMaker(domain, random.Random(f"{seed}-tc"))
    for _ in range(len(tc) * 50):
        if len(kept) == len(tc):
            return kept
        tokens, tags = extra.sentence()
        text = " ".join(tokens)
        if text not in seen and not near_duplicate(text, against):
            seen.add(text)
            kept.append((tokens, tags))
    raise RuntimeError(f"could only generate {len(kept)} {domain} TC sentences unlike DEV/TEST of {len(tc)}")


def generate_demo(seed: int = 13, target_domain: str = "music", dc_size: int = 6000, tc_size: int = 400,
                  lc_size: int = 150, dev_size: int = 150, test_size: int = 200) -> DemoData:
    """The demo data set, a pure function of its arguments.

    TC, LC, dev and test are distinct target-domain sentences (deduplicated by text, so test
    shares no sentence with the others); DC mixes all domains in equal shares and contains
    no test sentence, so pretraining on a selection never sees evaluation text.
    """
    if dc_size < 1:
        raise UserError("every demo corpus needs at least one sentence")
    rng, makers, test, lc, dev, tc = _target_splits(seed, target_domain, tc_size, lc_size, dev_size, test_size)
    test_texts = {" ".join(t) for t, _ in test}

    dc = Corpus.concat(_dc_chunks(rng, makers, test_texts, dc_size, DC_CHUNK), name="demo-dc")

    def same(n: int) -> list[str]:
        return [target_domain] * n

    return DemoData(
        tc=_corpus(tc, same(len(tc)), "tc", False, "demo-tc"),
        dc=dc,
        lc=_corpus(lc, same(len(lc)), "lc", True, "demo-lc"),
        dev=_corpus(dev, same(len(dev)), "dev", True, "demo-dev"),
        test=_corpus(test, same(len(test)), "test", True, "demo-test"),
        target_domain=target_domain,
    )


# --------------------------------------------------------------------------- workspace


def _demo_stamp(seed: int, target_domain: str, dc_size: int) -> dict:
    return {"version": GENERATOR_VERSION, "seed": seed, "target_domain": target_domain, "dc_size": dc_size}


def _demo_in_place(ws: Workspace, stamp: dict) -> bool:
    """True when the workspace already holds exactly this demo with its roles (then nothing is written)."""
    settings = ws.settings()
    recorded = settings.demo or {}
    if any(recorded.get(k) != v for k, v in stamp.items()):
        return False
    if settings.target_domain != stamp["target_domain"] or settings.demo_seed != stamp["seed"]:
        return False
    roles = ws.roles()
    hashes = recorded.get("hashes") or {}
    for role, name in DEMO_NAMES.items():
        if roles.get(role) != name or not ws.has_corpus(name) or ws.corpus_info(name).hash != hashes.get(name):
            return False
    return True


def write_demo_workspace(root: str | Path | None, seed: int = 13, target_domain: str = "music",
                         dc_size: int = 6000, progress: Progress | None = None) -> Workspace:
    """Store the demo corpora as demo-tc/-dc/-lc/-dev/-test with their roles and the target domain.

    Idempotent: when the folder already holds this demo, nothing is written (no file changes).
    A demo corpus from another seed is replaced; a user's corpus under a demo name is not.
    DC is generated and written in chunks (`DC_CHUNK` sentences), so `dc_size` may be ten
    million on a small machine; the result equals `generate_demo(...).dc`.
    """
    ws = Workspace(root)
    stamp = _demo_stamp(seed, target_domain, dc_size)
    if _demo_in_place(ws, stamp):
        return ws
    if dc_size < 1:
        raise UserError("every demo corpus needs at least one sentence")
    rng, makers, test, lc, dev, tc = _target_splits(seed, target_domain, 400, 150, 150, 200)
    test_texts = {" ".join(t) for t, _ in test}
    report = progress or (lambda f, m="": None)
    source = f"demo (seed {seed})"
    hashes: dict[str, str] = {}

    def replace(name: str) -> bool:
        return ws.has_corpus(name) and ws.corpus_info(name).source.startswith("demo (")

    # DC first: it continues the generator right after the target splits, as in generate_demo.
    dc_name = DEMO_NAMES[CorpusRole.DC]
    tmp = temp_path_for(ws.corpora_dir / f"{dc_name}.demo.parquet")
    writer = None
    try:
        done = 0
        for chunk in _dc_chunks(rng, makers, test_texts, dc_size, DC_CHUNK):
            table = chunk.to_arrow()
            writer = writer or pq.ParquetWriter(tmp, table.schema)
            writer.write_table(table)
            done += len(chunk)
            report(0.9 * done / dc_size, f"generated {done:,}/{dc_size:,} DC sentences")
        writer.close()
        writer = None
        report(0.9, "storing DC in the workspace")
        hashes[dc_name] = ws.import_corpus(tmp, role=CorpusRole.DC, name=dc_name, fmt="parquet", overwrite=replace(dc_name),
                                           source=source).hash
    finally:
        if writer is not None:
            writer.close()
        tmp.unlink(missing_ok=True)

    def same(n: int) -> list[str]:
        return [target_domain] * n

    small = {CorpusRole.TC: _corpus(tc, same(len(tc)), "tc", False, "demo-tc"),
             CorpusRole.LC: _corpus(lc, same(len(lc)), "lc", True, "demo-lc"),
             CorpusRole.DEV: _corpus(dev, same(len(dev)), "dev", True, "demo-dev"),
             CorpusRole.TEST: _corpus(test, same(len(test)), "test", True, "demo-test")}
    for role, corpus in small.items():
        name = DEMO_NAMES[role]
        hashes[name] = ws.save_corpus(corpus, name, role=role, source=source, overwrite=replace(name)).hash
    ws.update_settings(target_domain=target_domain, demo_seed=seed, demo={**stamp, "hashes": hashes})
    report(1.0, f"demo workspace with a {dc_size:,}-sentence DC")
    return ws


def ensure_demo_workspace(root: str | Path | None = None, seed: int = 13, target_domain: str = "music") -> Workspace:
    """The workspace at `root`, with the demo written into it only if it holds no corpus yet."""
    ws = Workspace(root)
    if ws.list_corpora():
        return ws
    return write_demo_workspace(ws.root, seed=seed, target_domain=target_domain)
