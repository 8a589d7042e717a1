"""Masked-LM augmentation of the labeled corpus for low-resource NER (Tokarchuk et al. 2021, Section 4);
self-training (Section 3) is core.adapt.selftrain.

MLM augmentation: tokens chosen by a sampling mode are masked at the word level and replaced
by a masked LM's prediction, keeping the label sequence as is:

- sampling "entity" masks single-token entity spans, "context" the O tokens right next to an
  entity, "random-context" a random subset of O tokens, "mixed" a random number of tokens anywhere;
- order "independent" predicts every mask on the original sentence, "conditional" on the
  sentence with the previous replacements already made;
- criterion "top" takes the most probable of the 5 best whole-word predictions, "joint" the
  one maximising probability x Levenshtein distance (characters) to the original sentence.

WordPiece: a word's sub-tokens are replaced by ONE [MASK], and only predictions that are whole
words are accepted (not "##" continuations, not special tokens; for byte-level BPE /
SentencePiece vocabularies, only pieces that start a word), so a replacement is always exactly
one word and the labels stay aligned. The 5 candidates are the 5 most probable such words that
differ from the original (looked for among the 50 most probable tokens).
"""

from __future__ import annotations

import dataclasses
import json
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.data.atomic import json_default
from core.data.corpus import Corpus, read_corpus, write_corpus
from core.data.tags import spans_from_tags
from core.errors import ModelError, UserError
from core.progress import Progress
from core.recipes.presets import DEFAULT_PRESET, MLM
from core.runner.params import SAMPLINGS, AugmentSettings
from core.train.ner_model import load_ner_model
from core.train.ner_predict import predict_corpus

if TYPE_CHECKING:
    from core.data.workspace import Workspace
    from core.runner.jobs import JobContext
    from core.runner.params import AugmentParams



# --------------------------------------------------------------------------- confidence error rate


# --------------------------------------------------------------------------- self-training


# --------------------------------------------------------------------------- MLM augmentation: sampling


def check_settings(settings: AugmentSettings) -> None:
    """A UserError naming the first setting outside what augmentation accepts."""
    for f in dataclasses.fields(settings):  # the choices AugmentSettings declares (core.runner.params.choice)
        if (allowed := f.metadata.get("choices")) and (value := getattr(settings, f.name)) not in allowed:
            raise UserError(f"unknown {f.name} {value!r}: expected one of {', '.join(allowed)}")
    if not 0.0 <= settings.min_token_prob <= 1.0 or not 0.0 <= settings.min_confidence <= 1.0:
        raise UserError("min_token_prob and min_confidence must lie in [0, 1]")
    if settings.per_sentence < 1 or settings.top_k < 1:
        raise UserError("per_sentence and top_k must be at least 1")


def sample_positions(tags: Sequence[str], sampling: str, rng: random.Random, random_rate: float = 0.15,
                     mixed_max_rate: float = 0.3) -> list[int]:
    """Token positions a sampling mode may mask, sorted (see the module docstring)."""
    n = len(tags)
    spans = spans_from_tags(tags)
    outside = [i for i, t in enumerate(tags) if t == "O"]
    if sampling == "entity":
        return [s.start for s in spans if s.end - s.start == 1]
    if sampling == "context":
        near = {i for s in spans for i in (s.start - 1, s.end) if 0 <= i < n}
        return sorted(i for i in near if tags[i] == "O")
    if sampling == "random-context":
        if not outside:
            return []
        picked = [i for i in outside if rng.random() < random_rate]
        return sorted(picked or [rng.choice(outside)])
    if sampling == "mixed":
        if n == 0:
            return []
        count = rng.randint(1, max(1, round(mixed_max_rate * n)))
        return sorted(rng.sample(range(n), count))
    raise UserError(f"unknown sampling {sampling!r}: expected one of {', '.join(SAMPLINGS)}")


def levenshtein(a: str, b: str) -> int:
    """Character edit distance; hand-written (two-row DP) to avoid a dependency for a
    function called on one sentence pair per candidate."""
    if len(a) < len(b):
        a, b = b, a
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return prev[-1]


# --------------------------------------------------------------------------- MLM augmentation: the masked LM


class MaskedLM:
    """A masked LM with a trained head, predicting whole-word replacements for one masked word."""

    def __init__(self, model: str | Path, device: str = "auto", candidates_searched: int = 50):
        import torch

        from core.lm.models import load_masked_lm, load_tokenizer, pick_device, resolve_model

        ref = resolve_model(str(model))
        self.name = str(model)
        self.model, head_missing = load_masked_lm(ref)
        if head_missing:
            hint = "the default encoder ships without one" if ref.is_default else "it was saved without one"
            raise ModelError(f"model {model!r} has no trained MLM head ({hint}: {', '.join(head_missing[:3])} missing); "
                             "augmenting with it would produce noise. Use an MLM run's model folder (Runs page, MLM pretraining) "
                             "or a Hugging Face masked LM such as bert-base-cased.")
        self.tokenizer = load_tokenizer(ref)
        if self.tokenizer.mask_token_id is None:
            raise ModelError(f"the tokenizer of {model!r} has no mask token")
        self.device = pick_device(device)
        self.model.to(self.device).eval()
        self.torch = torch
        self.searched = candidates_searched
        self.max_len = min(int(getattr(self.model.config, "max_position_embeddings", 512)), 512)
        self.lowercases = self.tokenizer.tokenize("A")[:1] == ["a"]
        vocab = self.tokenizer.convert_ids_to_tokens(list(range(len(self.tokenizer))))
        self._word_piece = any(t.startswith("##") for t in vocab)
        self._special = set(self.tokenizer.all_special_ids)
        self._vocab = vocab

    def _word(self, token_id: int) -> str | None:
        """The whole word a vocabulary entry stands for, or None for pieces and specials."""
        if token_id in self._special:
            return None
        piece = self._vocab[token_id]
        if self._word_piece:
            return None if piece.startswith("##") else piece
        if piece.startswith(("Ġ", "▁")) and len(piece) > 1:
            return piece[1:]
        return None

    def _ids(self, words: Sequence[str], masked: int) -> tuple[list[int], int]:
        pieces: list[list[int]] = []
        for j, w in enumerate(words):
            if j == masked:
                pieces.append([self.tokenizer.mask_token_id])
            else:
                text = w if self._word_piece or j == 0 else " " + w  # BPE marks word starts with a leading space
                pieces.append(self.tokenizer.encode(text, add_special_tokens=False) or [self.tokenizer.unk_token_id])
        mask_at = sum(len(p) for p in pieces[:masked])
        flat = [i for p in pieces for i in p]
        budget = self.max_len - 2
        if len(flat) > budget:  # keep a window centred on the mask
            lo = max(0, min(mask_at - budget // 2, len(flat) - budget))
            flat, mask_at = flat[lo:lo + budget], mask_at - lo
        cls = self.tokenizer.cls_token_id if self.tokenizer.cls_token_id is not None else self.tokenizer.bos_token_id
        sep = self.tokenizer.sep_token_id if self.tokenizer.sep_token_id is not None else self.tokenizer.eos_token_id
        return [cls, *flat, sep], mask_at + 1

    def candidates(self, requests: Sequence[tuple[Sequence[str], int]], top_k: int = 5, batch_size: int = 32
                   ) -> list[list[tuple[str, float]]]:
        """For each (words, masked position): up to top_k (word, probability) whole-word
        predictions that differ from the original word, most probable first."""
        out: list[list[tuple[str, float]]] = []
        for chunk, top_p, top_i in self._top(requests, batch_size):
            for (words, pos), ps, ids in zip(chunk, top_p, top_i):
                original = words[pos]
                found: list[tuple[str, float]] = []
                for p, i in zip(ps, ids):
                    word = self._word(i)
                    if word is None or not word.strip():
                        continue
                    word = self._match_case(word, original)
                    same = word.lower() == original.lower() if self.lowercases else word == original
                    if same or any(c.isalnum() for c in word) != any(c.isalnum() for c in original):
                        continue  # never swap punctuation for a word or back: labels would no longer fit
                    found.append((word, float(p)))
                    if len(found) == top_k:
                        break
                out.append(found)
        return out

    def _top(self, requests: Sequence[tuple[Sequence[str], int]], batch_size: int):
        """Per batch: (requests, top probabilities, top vocabulary ids) at each masked position."""
        torch = self.torch
        for b in range(0, len(requests), batch_size):
            chunk = requests[b:b + batch_size]
            encoded = [self._ids(words, pos) for words, pos in chunk]
            width = max(len(ids) for ids, _ in encoded)
            pad = self.tokenizer.pad_token_id or 0
            input_ids = torch.tensor([ids + [pad] * (width - len(ids)) for ids, _ in encoded], device=self.device)
            attention = torch.tensor([[1] * len(ids) + [0] * (width - len(ids)) for ids, _ in encoded], device=self.device)
            with torch.no_grad():
                logits = self.model(input_ids=input_ids, attention_mask=attention).logits  # (B, L, V)
            rows = torch.stack([logits[i, at] for i, (_, at) in enumerate(encoded)])  # (B, V)
            probs = torch.softmax(rows.float(), dim=-1)
            top_p, top_i = probs.topk(min(self.searched, probs.shape[-1]), dim=-1)
            yield chunk, top_p.tolist(), top_i.tolist()

    def accuracy(self, corpus: Corpus, n: int = 200, seed: int = 0, batch_size: int = 32) -> float | None:
        """Share of `n` masked words of `corpus` (text it did not augment, e.g. TC or DEV) that the model puts first:
        the plain measure of whether its MLM head learned anything. None when the corpus has no words."""
        rng = random.Random(seed)
        slots = [(i, j) for i, toks in enumerate(corpus.tokens) for j, w in enumerate(toks) if w.isalpha()]
        if not slots:
            return None
        picked = rng.sample(slots, min(n, len(slots)))
        requests = [(corpus.tokens[i], j) for i, j in picked]
        hits = 0
        for chunk, _, top_i in self._top(requests, batch_size):
            for (words, pos), ids in zip(chunk, top_i):
                first = next((w for w in (self._word(i) for i in ids) if w and w.strip()), None)
                hits += first is not None and first.lower() == words[pos].lower()
        return hits / len(requests)

    def _match_case(self, word: str, original: str) -> str:
        # An uncased vocabulary predicts lowercase; keep the original's casing pattern.
        if not self.lowercases or not original[:1].isupper():
            return word
        return word.upper() if original.isupper() and len(original) > 1 else word[:1].upper() + word[1:]


# --------------------------------------------------------------------------- MLM augmentation: generation


@dataclass
class AugmentResult:
    corpus: Corpus  # generated sentences, original tags, fields source_index and changed
    stats: dict[str, Any] = field(default_factory=dict)


def _choose(candidates: list[tuple[str, float]], words: list[str], pos: int, original_text: str, criterion: str,
            min_prob: float, rank: int = 0) -> str | None:
    """The candidate at `rank` by the criterion (0: the best); None when there are not that many usable ones."""
    usable = [(w, p) for w, p in candidates if p >= min_prob]
    if criterion != "top":
        def joint(item: tuple[str, float]) -> float:
            trial = words[:pos] + [item[0]] + words[pos + 1:]
            return item[1] * levenshtein(original_text, " ".join(trial))

        usable = sorted(usable, key=joint, reverse=True)  # stable: ties keep the MLM's order
    return usable[rank][0] if rank < len(usable) else None


# Sampling modes whose masked positions are fixed by the tags: every variant of a sentence masks the same tokens, so
# variant v takes each mask's (v+1)-th best candidate (the best every time repeated the first variant, dropped as a
# duplicate: per_sentence > 1 gave nothing more). The random modes draw other positions per variant instead.
FIXED_POSITIONS = ("entity", "context")


def augment_corpus(lc: Corpus, mlm: MaskedLM, config: AugmentSettings, ner_model: Any = None,
                   progress: Progress | None = None) -> AugmentResult:
    """Generate label-preserving variants of LC sentences (Section 4). A variant that equals
    an LC sentence or an earlier variant is dropped, as is one without any replacement."""
    check_settings(config)
    if not lc.labeled:
        raise UserError("augmentation needs a labeled corpus (LC)")
    if config.min_confidence > 0 and ner_model is None:
        raise UserError("a minimum NER confidence needs a NER model (--ner-model)")
    report = progress or (lambda f, m: None)
    rng = random.Random(config.seed)
    jobs: list[tuple[int, list[str], list[int]]] = []  # (source index, working words, positions)
    ranks: list[int] = []  # each job's candidate rank (FIXED_POSITIONS)
    for variant in range(config.per_sentence):
        for i, tags in enumerate(lc.tags):
            jobs.append((i, list(lc.tokens[i]), sample_positions(tags, config.sampling, rng, config.random_rate,
                                                                 config.mixed_max_rate)))
            ranks.append(variant if config.sampling in FIXED_POSITIONS else 0)
    masked_total = sum(len(p) for _, _, p in jobs)
    done = 0
    if config.order == "independent":
        requests = [(lc.tokens[i], pos) for i, _, positions in jobs for pos in positions]
        cands = mlm.candidates(requests, config.top_k, config.batch_size)
        k = 0
        for (i, words, positions), rank in zip(jobs, ranks):
            text = " ".join(lc.tokens[i])
            for pos in positions:
                choice = _choose(cands[k], list(lc.tokens[i]), pos, text, config.criterion, config.min_token_prob, rank)
                k += 1
                if choice is not None:
                    words[pos] = choice
        report(0.8, f"{len(requests)} masks predicted")
    else:
        rounds = max((len(p) for _, _, p in jobs), default=0)
        for r in range(rounds):  # round r: the r-th mask of every sentence, on its current words
            active = [(i, words, positions[r], rank) for (i, words, positions), rank in zip(jobs, ranks) if r < len(positions)]
            cands = mlm.candidates([(words, pos) for _, words, pos, _ in active], config.top_k, config.batch_size)
            for (i, words, pos, rank), cand in zip(active, cands):
                choice = _choose(cand, words, pos, " ".join(lc.tokens[i]), config.criterion, config.min_token_prob, rank)
                if choice is not None:
                    words[pos] = choice
            done += len(active)
            report(0.8 * done / max(masked_total, 1), f"{done}/{masked_total} masks predicted")
    seen = {tuple(t) for t in lc.tokens}
    rows: list[tuple[int, list[str]]] = []
    unchanged = duplicates = 0
    for i, words, _ in jobs:
        key = tuple(words)
        if key == tuple(lc.tokens[i]):
            unchanged += 1
        elif key in seen:
            duplicates += 1
        else:
            seen.add(key)
            rows.append((i, words))
    low_conf = 0
    if ner_model is not None and rows and config.min_confidence > 0:
        report(0.85, "scoring generated sentences with the NER model")
        preds = predict_corpus(ner_model, Corpus(tokens=[w for _, w in rows]))
        kept = [r for r, p in zip(rows, preds) if getattr(p, config.measure) >= config.min_confidence]
        low_conf = len(rows) - len(kept)
        rows = kept
    corpus = Corpus(tokens=[w for _, w in rows], tags=[list(lc.tags[i]) for i, _ in rows],
                    fields={"source_index": [i for i, _ in rows],
                            "changed": [",".join(str(j) for j, (a, b) in enumerate(zip(lc.tokens[i], w)) if a != b)
                                        for i, w in rows]},
                    name=f"{lc.name or 'lc'}-aug")
    stats = {"input_sentences": len(lc), "attempts": len(jobs), "generated": len(corpus),
             "masked_per_sentence": masked_total / max(len(jobs), 1),
             "replaced_tokens": sum(len(c.split(",")) for c in corpus.fields["changed"] if c),
             "dropped_unchanged": unchanged, "dropped_duplicates": duplicates, "dropped_low_confidence": low_conf,
             "config": {f.name: getattr(config, f.name) for f in fields(AugmentSettings)}, "model": mlm.name}
    report(1.0, f"{len(corpus)} sentences generated")
    return AugmentResult(corpus=corpus, stats=stats)


# --------------------------------------------------------------------------- MLM augmentation: quality gate

# Thresholds of the gate. A useful MLM fills entity slots with many different words (names, places);
# a degenerate one (a fresh or barely trained head) puts the same few function words everywhere:
# the README's first try replaced 116 of 116 entities with "the".
MIN_DISTINCT_SHARE = 0.2  # distinct replacement words / replacements
MAX_STOP_SHARE = 0.5  # replacements that are stop words ("the", "of", ...), beyond what the replaced words were:
STOP_SHARE_MARGIN = 0.2  # context sampling masks the O tokens beside entities, most of them stop words themselves
MAX_TOP_WORD_SHARE = 0.5  # the single most frequent replacement word
# top-1 accuracy on masked words of the check corpus (TC by default, which B1 trained on: a floor, not a held-out
# score) below this: an MLM whose head barely predicts words at all
WARN_MLM_ACCURACY = 0.15
MIN_REPLACEMENTS_JUDGED = 10  # fewer replacements say nothing either way


def replacement_quality(lc: Corpus, generated: Corpus) -> dict[str, Any]:
    """What the replacements look like: how many, how many distinct, the share of stop words and of
    the most frequent word (with the top words themselves, to show the user)."""
    from collections import Counter

    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    words: list[str] = []
    replaced: list[str] = []  # the LC words they replaced
    for src, toks, changed in zip(generated.fields.get("source_index", []), generated.tokens,
                                  generated.fields.get("changed", [])):
        at = [int(j) for j in str(changed).split(",") if j != ""]
        words += [toks[j].lower() for j in at]
        replaced += [lc.tokens[int(src)][j].lower() for j in at]
    counts = Counter(words)
    n = len(words)
    return {"replacements": n, "distinct_replacements": len(counts),
            "distinct_share": len(counts) / n if n else None,
            "stop_word_share": sum(c for w, c in counts.items() if w in ENGLISH_STOP_WORDS) / n if n else None,
            "replaced_stop_word_share": sum(w in ENGLISH_STOP_WORDS for w in replaced) / n if n else None,
            "top_word_share": counts.most_common(1)[0][1] / n if n else None,
            "top_words": [f"{w} ({c})" for w, c in counts.most_common(5)]}


def judge_augmentation(quality: dict[str, Any], mlm_accuracy: float | None, model: str,
                       mlm_info: dict[str, Any] | None = None) -> tuple[str, str]:
    """("ok" | "warn" | "degenerate", a sentence saying what was measured and what to do)."""
    n = quality["replacements"]
    figures = (f"{n} replacements, {quality['distinct_replacements']} distinct"
               + (f", {quality['stop_word_share']:.0%} stop words, top words {', '.join(quality['top_words'][:3])}" if n else "")
               + (f"; MLM top-1 accuracy on masked words of the check corpus {mlm_accuracy:.1%} (a floor: TC is text "
                  "B1 trained on, not held out)" if mlm_accuracy is not None else ""))
    steps = (mlm_info or {}).get("steps")
    trained = f"it was trained for {steps} steps" + (" from a fresh MLM head" if (mlm_info or {}).get("fresh_head") else "") \
        if steps is not None else ""
    # One advice for the page and the CLI (the job cannot know which started it): both names of the setting, and the
    # presets' own figures (core.recipes.presets), not a number that contradicts README.
    demo_steps = MLM[DEFAULT_PRESET]["max_steps"]
    more = max(demo_steps, 2 * int(steps or 0))
    how = (f"train B1 (MLM on TC) for at least {more} steps: the `{DEFAULT_PRESET}` preset's {demo_steps} steps were enough on the "
           f"demo; set it on the Runs page (MLM training, Max steps) or with `python -m core mlm ... --max-steps {more}`; "
           "or use a Hugging Face masked LM with a trained head (e.g. bert-base-cased).")
    advice = f"{trained[0].upper() + trained[1:]}; {how}" if trained else how[0].upper() + how[1:]
    if n >= MIN_REPLACEMENTS_JUDGED and (
            quality["distinct_share"] < MIN_DISTINCT_SHARE or quality["top_word_share"] > MAX_TOP_WORD_SHARE
            or quality["stop_word_share"] > max(MAX_STOP_SHARE,
                                                (quality.get("replaced_stop_word_share") or 0) + STOP_SHARE_MARGIN)):
        return "degenerate", f"the masked LM {model!r} is degenerate ({figures}). {advice}"
    if mlm_accuracy is not None and mlm_accuracy < WARN_MLM_ACCURACY:
        return "warn", f"the masked LM {model!r} is weak ({figures}). {advice}"
    if n == 0:
        return "warn", f"no token was replaced by {model!r}: nothing new was generated. {advice}"
    return "ok", figures


def combine_with_lc(lc: Corpus, generated: Corpus, name: str = "") -> Corpus:
    """LC followed by the generated sentences: a training corpus for an augmented NER run."""
    return Corpus(tokens=[*lc.tokens, *generated.tokens], tags=[*lc.tags, *generated.tags],
                  fields={"augmented": [False] * len(lc) + [True] * len(generated)}, name=name or f"{lc.name}+aug")


def augment_job(params: AugmentParams, ctx: JobContext) -> dict[str, Any]:
    """Job kind "augment": rewrite LC with a masked LM (the AugmentSettings fields), judge the result, and write
    augmented.conll / .jsonl into the run folder unless the masked LM is degenerate."""
    ws = ctx.workspace
    check_settings(params)
    lc = ws.resolve_corpus(params.lc or "lc")
    lc_hash = ws.ref(params.lc or "lc").hash  # as read now: an LC re-imported during the job is another LC
    ctx.progress(0.01, "loading the masked LM")
    mlm = MaskedLM(params.model, device=params.device)
    ner_model = load_ner_model(params.ner_model) if params.ner_model else None
    result = augment_corpus(lc, mlm, params, ner_model=ner_model, progress=ctx.sub(0.05, 0.9))
    quality = replacement_quality(lc, result.corpus)
    accuracy = None
    if params.check_tc:  # text the MLM did not augment (TC: B1's own training text): does its head predict words at all?
        try:
            held_out = ws.resolve_corpus(params.check_tc)
        except UserError as exc:
            ctx.log(f"MLM accuracy not measured: {exc}")
        else:
            ctx.progress(0.92, "MLM accuracy on masked words of the check corpus")
            accuracy = mlm.accuracy(held_out, seed=params.seed, batch_size=params.batch_size)
    info_path = Path(params.model) / "mlm_info.json"
    info = json.loads(info_path.read_text("utf-8")) if info_path.is_file() else None
    verdict, message = judge_augmentation(quality, accuracy, str(params.model), info)
    quality.update(mlm_accuracy=accuracy, verdict=verdict, quality_message=message)
    ctx.log(f"augmentation quality: {verdict}: {message}")
    if verdict == "degenerate" and not params.allow_degenerate:
        raise UserError(f"refusing to write the augmented corpus: {message} "
                        "(to write it anyway: tick 'Write the output even if the masked LM looks degenerate' on the "
                        "Adapt page, or pass --allow-degenerate)")
    out = Path(params.out or ctx.run_dir / "augmented.conll")
    write_corpus(result.corpus, out, fmt="conll")
    write_corpus(result.corpus, out.with_suffix(".jsonl"), fmt="jsonl")
    ctx.log(json.dumps({k: v for k, v in result.stats.items() if k != "config"}, default=json_default))
    return {**result.stats, "quality": quality, "warning": message if verdict != "ok" else None,
            "conll": str(out), "jsonl": str(out.with_suffix(".jsonl")), "lc": params.lc or "lc",
            "lc_hash": lc_hash}


def augmented_pair(ws: Workspace, result: Mapping[str, Any]) -> tuple[Corpus, Corpus]:
    """(the LC an augment job rewrote, its output), for the preview beside each source sentence and "Save as corpus"
    with LC. The LC is read as it is now, so it must still be the one rewritten: deleted, or re-imported since, the
    pairs shown would be wrong (or the page failed), and LC + output saved would mix two corpora."""
    try:
        generated = read_corpus(result["jsonl"])
    except (KeyError, OSError) as exc:
        raise UserError(f"the augment job's output is gone ({exc}): run the augmentation again") from None
    try:
        source = ws.resolve_corpus(result["lc"])
    except UserError as exc:
        raise UserError(f"the LC this augmentation rewrote is gone ({exc}): run it again on the current LC") from None
    then = result.get("lc_hash")
    changed = (then != ws.ref(result["lc"]).hash) if then else any(
        int(i) >= len(source) for i in generated.fields.get("source_index", []))
    if changed:
        raise UserError(f"LC {result['lc']!r} holds other sentences than when this augmentation rewrote it: run the "
                        "augmentation again on the current LC")
    return source, generated
