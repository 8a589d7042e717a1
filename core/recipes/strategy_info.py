"""What each selection strategy is, for people and for the plan: its name (`Strategy`), label and description (the
Selection page), its score, and which models it reads. Plain data at the recipe stage, so a job's params refuse an
unknown strategy at submit and a row's '@b1' is judged when the row is parsed (core.recipes.strategy_row), without
importing the strategies' code (core.selection.strategies, torch and numpy)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum

from core.errors import UserError


class Strategy(str, Enum):
    """Every selection strategy's name; what each one reads and scores is STRATEGY_INFO."""

    COSINE = "cosine"
    COSINE_CONCAT = "cosine-concat"
    KNN = "knn"
    NER = "ner"
    ENTITY_GAIN = "entity-gain"
    ENTITY_GAIN_POOL = "entity-gain-pool"
    PPL = "ppl"
    MLM_PPL = "mlm-ppl"
    DSIR = "dsir"
    RANDOM = "random"
    ALL = "all"

    def __str__(self) -> str:
        return self.value

    @classmethod
    def parse(cls, name: str | Strategy) -> Strategy:
        return name if isinstance(name, Strategy) else cls(strategy_name(name))

    @property
    def info(self) -> StrategyInfo:
        return STRATEGY_INFO[self]


STRATEGIES = tuple(s.value for s in Strategy)


def strategy_name(name: str) -> str:
    """A strategy's name as results write it ('Entity_Gain' -> 'entity-gain'); UserError for one that does not exist.

    >>> strategy_name("dsri")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    core.errors.UserError: unknown strategy 'dsri': expected one of cosine, cosine-concat, knn, ...
    """
    norm = str(name).strip().lower().replace("_", "-")
    if norm not in STRATEGIES:  # a bare 'sampling=topk' is an option a comma cut from its row's strategy
        hint = (": options follow a strategy after ':' (dsir:length=chunk:sampling=topk); commas separate rows"
                if "=" in norm and ":" not in norm else f": expected one of {', '.join(STRATEGIES)}")
        raise UserError(f"unknown strategy {str(name).strip()!r}{hint}")
    return norm


ENTITY_AWARE = (Strategy.ENTITY_GAIN, Strategy.ENTITY_GAIN_POOL)  # issue 46's: they weigh entity types by LC's shares


@dataclass(frozen=True)
class StrategyInfo:
    label: str
    description: str
    score_name: str
    higher_is_better: bool
    models: tuple[str, ...] = ()  # which of model / model2 / ner_model it reads
    needs_trained_model: bool = False  # unusable with the default encoder alone

    def missing(self, given: Mapping[str, str | None]) -> list[str]:
        """The models this strategy cannot run without that `given` leaves empty (`model` falls back to the default
        encoder; model2 and ner_model have no default).

        >>> STRATEGY_INFO[Strategy.COSINE_CONCAT].missing({"model": "b1", "model2": ""})
        ['model2']
        """
        return [m for m in self.models if m != "model" and not (given.get(m) or "").strip()]


STRATEGY_INFO: dict[Strategy, StrategyInfo] = {
    Strategy.COSINE: StrategyInfo("Cosine to mean TC embedding", "Cosine similarity of each DC sentence to the mean TC embedding "
                                  "(pretrained encoder, or B1 = encoder after MLM on TC).", "cosine", True, ("model",)),
    Strategy.COSINE_CONCAT: StrategyInfo("Cosine on [B1 ; B2]", "Cosine to the mean TC embedding on concatenated embeddings of "
                                         "B1 (model) and B2 (model2, B1 fine-tuned for NER).", "cosine", True, ("model", "model2"), True),
    Strategy.KNN: StrategyInfo("kNN of TC sentences", "For each TC sentence its nearest DC sentences, unioned until the budget "
                               "(kNN-TAPT). Score: highest cosine to any TC sentence.", "max cosine", True, ("model",)),
    Strategy.NER: StrategyInfo("NER-Selected", "Sentences with the most entities predicted by a fine-tuned NER model (B2); "
                               "ties by CRF sequence confidence c1.", "entities", True, ("ner_model",), True),
    Strategy.ENTITY_GAIN: StrategyInfo("Entity gain", "Entity mentions a sentence adds that TC lacks (predicted by a fine-tuned "
                                       "NER model, B2; weighted by the type's share in LC), mixed with the cosine to the mean TC "
                                       "embedding (B1), as percentile ranks (option mix: the gain's share, 0.5).", "gain x domain rank",
                                       True, ("model", "ner_model"), True),
    Strategy.ENTITY_GAIN_POOL: StrategyInfo("Entity gain in the domain pool", "Among the DC sentences nearest TC (cosine to "
                                            "the mean TC embedding under B1; option pool: how many budgets, 3), those "
                                            "adding the most entity mentions TC lacks (B2, weighted by LC's type shares); "
                                            "ties and the rest by cosine.", "1 + gain in the pool, 0 outside",
                                            True, ("model", "ner_model"), True),
    Strategy.PPL: StrategyInfo("N-gram perplexity", "Lowest perplexity under a Kneser-Ney 3-gram LM of TC.", "perplexity", False),
    Strategy.MLM_PPL: StrategyInfo("MLM pseudo-perplexity", "Lowest masked-LM pseudo-perplexity under B1 (each token masked in turn).",
                                   "pseudo-perplexity", False, ("model",), True),
    Strategy.DSIR: StrategyInfo("DSIR", "Importance resampling on hashed 1-2-gram features (Xie et al. 2023): log p_TC/p_DC per "
                                "sentence, Gumbel-top-k sampled.", "log importance weight", True),
    Strategy.RANDOM: StrategyInfo("Random", "A uniform random sample of DC (seeded).", "random key", True),
    Strategy.ALL: StrategyInfo("All of DC", "Every DC sentence (budget ignored).", "none", True),
}


def strategy_models(name: str | Strategy, model_tag: str | None) -> tuple[bool, bool]:
    """(needs B1, needs B2) for a strategy row: B1 (the TAPT model) when it reads an encoder it must train or was
    asked for '@b1', or reads model2; B2 (B1 fine-tuned for NER) when it reads model2 or a NER model.

    >>> strategy_models("cosine", "b1"), strategy_models("cosine", None), strategy_models("ner", None)
    ((True, False), (False, False), (False, True))
    """
    info = STRATEGY_INFO[Strategy.parse(name)]
    uses, trained = set(info.models), info.needs_trained_model
    needs_b1 = ("model" in uses and (trained or model_tag == "b1")) or "model2" in uses
    needs_b2 = bool(uses & {"model2", "ner_model"})
    return needs_b1, needs_b2
