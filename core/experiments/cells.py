"""Running experiment cells: MLM then (optionally a checkpoint pick, then) NER then TEST F1, in resumable folders.

CellTrainer is shared by experiments and compare-sources; ExperimentCells adds the rows of an experiment
(baselines, strategies with B1/B2) and the cell layout described in core.experiments.experiment.
"""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from core.data.atomic import atomic_write_json, exclusive
from core.data.corpus import Corpus
from core.environment import visible_devices
from core.experiments.cell_phases import cell_phases, cell_weight, phase_spans
from core.experiments.plan import (
    BASELINES,
    CELL_FILE,
    PICK_FILE,
    StrategyRow,
    cell_key,
    parse_strategy,
    resolve_sc_budget,
    slug,
    sweep_budgets,
)
from core.experiments.records import Cell, check_inputs, check_recipe, corpus_fingerprint, load_cell, save_cell
from core.experiments.summary import keep_predictions
from core.progress import silent, sub
from core.recipes.modes import MODE_PHASES
from core.recipes.strategy_info import ENTITY_AWARE, strategy_models
from core.runner.jobresult import JobResult
from core.selection.strategies import select
from core.train.lineage import CorpusStamp, Lineage, MlmPhase, SelectionStamp, from_base, record_run, write_lineage

if TYPE_CHECKING:
    from core.runner.jobs import JobContext
    from core.runner.params import ExperimentParams


def pick_record(pick: dict[str, Any]) -> dict[str, Any]:
    """What a cell keeps of its checkpoint pick: the choice, whether pretraining helped on DEV, every score."""
    return {"probe": pick["probe"], "chosen": pick["chosen"]["label"], "chosen_step": pick["chosen"]["step"],
            "helped": pick["helped"], "gain_over_base": pick["gain_over_base"],
            "scores": {s["label"]: s["score"] for s in pick["scores"]}, "reason": pick["reason"],
            **({"probe_lc": pick["probe_lc"]} if "probe_lc" in pick else {})}  # LC sentences the probe fine-tuned on


def mlm_key(model: str, corpus_hash: str, config: Any, seed: int) -> str:
    """The name of a shared MLM model's folder: the seed, then a hash of the encoder, the corpus content and the
    recipe less the settings that do not change the model (core.recipes.presets.RUN_ONLY_SETTINGS)."""
    from core.recipes.presets import model_settings

    recipe = model_settings(config) | {"seed": seed}
    digest = hashlib.sha256(json.dumps({"model": model, "corpus": corpus_hash, "recipe": recipe}, sort_keys=True).encode())
    return f"seed-{seed}.{digest.hexdigest()[:16]}"


def numerics(summary: JobResult) -> dict[str, Any]:
    """How a cell's NER ran, numerically: a rerun is bit-identical only with the same device, precision (bf16 where the
    CPU has AVX512-BF16/AMX, else fp32) and torch thread count, so a cell says which it had."""
    import platform

    import torch

    return {"device": summary.device, "dtype": summary.precision, "torch_threads": torch.get_num_threads(),
            "machine": platform.machine(), "torch": torch.__version__,
            "head_seed": "after-encoder"}  # core.train.ner_model.build_ner_model: the head draws from the seed alone


def where_ran(summary: JobResult) -> str:
    """The device a cell's NER ran on, with the card's nvidia-smi index ('cuda:3'), not the process's own 'cuda:0'."""

    device = summary.device or "cpu"
    visible = visible_devices() or [""]
    if device.startswith("cuda") and visible[0].isdigit():
        return f"cuda:{visible[0]}"
    return device


class MlmClock:
    """An MLM model's training seconds over every session that worked on it: a run stopped at a session's end and
    resumed from its checkpoint counted only the last session's. The time so far is kept beside the checkpoint
    (at most every SAVE_EVERY seconds, from the training's metric calls) and the total written to seconds.json."""

    SAVE_EVERY = 30.0

    def __init__(self, folder: Path) -> None:
        self.partial, self.final = folder / "seconds.partial.json", folder / "seconds.json"
        self.before = float(json.loads(self.partial.read_text("utf-8"))["seconds"]) if self.partial.exists() else 0.0
        self.t0 = self.saved = time.time()

    def spent(self) -> float:
        return self.before + time.time() - self.t0

    def tick(self) -> None:
        if time.time() - self.saved >= self.SAVE_EVERY:
            atomic_write_json(self.partial, {"seconds": self.spent()})
            self.saved = time.time()

    def finish(self) -> None:
        atomic_write_json(self.final, {"seconds": self.spent()})
        self.partial.unlink(missing_ok=True)


class CellTrainer:
    """MLM then NER for one cell folder, resumable (a finished model is reused, an interrupted
    one resumes from its checkpoint); shared by experiments and compare-sources."""

    def __init__(self, ctx: JobContext, model: str, preset: str, lc: Corpus, dev: Corpus,
                 mlm_config: dict[str, Any] | None = None, ner_config: dict[str, Any] | None = None, pick: int = 0):
        from dataclasses import replace

        from core.train import mlm, ner_train

        self.ctx, self.model, self.preset, self.lc, self.dev = ctx, model, preset, lc, dev
        self.mlm_config = mlm.preset_config(preset, **(mlm_config or {}))
        self.ner_config = ner_train.preset_config(preset, **(ner_config or {}))
        self.run_dir = Path(ctx.run_dir)
        self.pick = int(pick or 0)  # checked >= 0 with the job's params (ExperimentParams)
        if self.pick and not self.mlm_config.snapshot_every:
            steps = self.mlm_config.max_steps  # evenly spaced over a step-capped run; else every checkpoint
            every = max(1, steps // self.pick) if steps else self.mlm_config.checkpoint_every
            self.mlm_config = replace(self.mlm_config, snapshot_every=every)

    def mlm_model(self, phases: list[tuple[str, list[str]]], folder: Path, seed: int, progress) -> str:
        from dataclasses import replace

        from core.train.mlm import finished_model, run_phases

        out = folder / "mlm" / "model"
        if finished_model(out):
            return str(out)
        # two cells running at once may need one model (a seed's B1): one trains it, the other waits and reuses it
        with exclusive(folder / "mlm.lock", lambda: progress(0.0, f"waiting: another cell is pretraining {folder.parent.name}")):
            if not finished_model(out):
                clock = MlmClock(folder / "mlm")
                run_phases(phases, self.model, out, replace(self.mlm_config, seed=seed), folder / "mlm", progress, self.ctx.log,
                           lambda **v: (self.ctx.metric(cell=folder.parent.name, seed=seed, stage="mlm", **v), clock.tick()))
                clock.finish()
        return str(out)

    def shared_mlm_model(self, name: str, corpus_hash: str, texts: list[str], seed: int, progress) -> tuple[str, Path]:
        """MLM on one corpus from the base encoder, kept in the workspace (artifact kind "mlm") by what decides the
        model: the encoder, the corpus content, the recipe (less its run-only settings) and the seed. Nothing after
        pretraining enters the key, so compare-sources for five targets pretrains on each source once per seed instead
        of five times. Locked while it trains: a second job that needs the same model waits for it instead of
        writing the same checkpoints. Returns the model and its folder (for `mlm_seconds`)."""
        folder = self.ctx.workspace.artifact_dir("mlm", slug(name)) / mlm_key(self.model, corpus_hash, self.mlm_config, seed)
        with exclusive(folder.parent / f"{folder.name}.lock",
                       lambda: progress(0.0, f"waiting: another job is pretraining on {name} (seed {seed})")):
            return self.mlm_model([(name, texts)], folder, seed, progress), folder

    def choose_encoder(self, trained: str, phases: list[tuple[str, list[str]]], folder: Path, seed: int,
                       progress, lc: Corpus) -> tuple[str, dict[str, Any] | None]:
        """With checkpoint selection on: the base encoder, a kept snapshot or the trained model, whichever a short
        NER fine-tune on the cell's LC (a sweep's sub-sample, not all of LC: the cell must not choose with labels it
        is meant not to have) scores best on DEV (the base wins ties: no pretraining unless it helped). Scores and
        the choice are stored per LC size, so a resumed experiment neither probes nor chooses again."""
        from core.train.checkpoint_pick import candidates, pick_checkpoint

        if not self.pick:
            return trained, None
        size = "" if len(lc) >= len(self.lc) else f".lc{len(lc)}"  # all of LC keeps the name older runs wrote
        saved = folder / "mlm" / (Path(PICK_FILE).stem + size + Path(PICK_FILE).suffix)
        if saved.exists():
            result = json.loads(saved.read_text("utf-8"))
            return result["chosen"]["path"], result
        cands = candidates(self.model, folder / "mlm" / f"phase-{phases[-1][0]}" / "snapshots", trained)
        done = [0]

        def probe(c) -> float:
            progress(done[0] / len(cands), f"checkpoint pick: probing {c.label} ({done[0] + 1} of {len(cands)})")
            # the base encoder's score is the same for every row of a seed: probed once per seed and LC
            where = (self.run_dir / "probe" / f"base.seed-{seed}.lc{len(lc)}" if c.step is None
                     else folder / "mlm" / "probe" / (c.label + size))
            score = self._probe_score(c, where, seed, lc)
            done[0] += 1
            progress(done[0] / len(cands), f"checkpoint pick: {c.label} DEV F1 {score:.4f}")
            return score

        result = {**pick_checkpoint(cands, probe, log=self.ctx.log), "probe_lc": len(lc)}
        atomic_write_json(saved, result)
        return result["chosen"]["path"], result

    def drift(self, trained: str, folder: Path, texts: list[str], name: str = "drift.json") -> dict[str, Any]:
        """How far MLM moved the encoder on these (TC) sentences (core.train.drift), kept beside the MLM model."""
        from core.train.drift import encoder_drift

        path = folder / "mlm" / name
        if not path.exists():
            atomic_write_json(path, encoder_drift(self.model, trained, texts))
        return json.loads(path.read_text("utf-8"))

    def chosen_drift(self, pick: dict[str, Any], chosen: str, trained: str, drift: dict[str, Any], folder: Path,
                     texts: list[str]) -> dict[str, Any]:
        """The drift of the encoder NER fine-tuned, which the pick may not have taken from the end of the MLM run
        (`drift`): the base encoder has not moved; the end of the run (its last snapshot or the final model) is
        `drift`; an earlier snapshot is measured on its own (issue 46 relates drift to F1)."""
        from core.train.checkpoint_pick import end_of_run

        label = str(pick["chosen"]["label"])
        if label == "base":
            return {"cosine": 1.0, "cka": 1.0, "sentences": drift["sentences"]}
        if chosen == trained or label == end_of_run(s["label"] for s in pick["scores"]):
            return drift
        return self.drift(chosen, folder, texts, f"drift-{slug(label)}.json")

    def _probe_score(self, cand, where: Path, seed: int, lc: Corpus) -> float:
        """DEV F1 of one candidate's short fine-tune, kept in `where/score.json`; the probe's model is deleted."""
        import shutil

        score_file = where / "score.json"
        with exclusive(where.parent / f"{where.name}.lock"):  # the base encoder's probe is shared by a seed's cells
            if not score_file.exists():
                score = self.short_fine_tune(cand, where / "work", seed, lc)
                atomic_write_json(score_file, {"dev_f1": score, "candidate": cand.label, "path": cand.path})
                shutil.rmtree(where / "work", ignore_errors=True)  # a probe model is ~100 MB and never used again
        return float(json.loads(score_file.read_text("utf-8"))["dev_f1"])

    def short_fine_tune(self, cand, work: Path, seed: int, lc: Corpus) -> float:
        from core.train.checkpoint_pick import dev_f1_probe

        return dev_f1_probe(lc, self.dev, work, self.preset, seed, log=self.ctx.log, config=self.ner_config)(cand)

    def mlm_seconds(self, folder: Path) -> float:
        path = folder / "mlm" / "seconds.json"
        return float(json.loads(path.read_text("utf-8"))["seconds"]) if path.exists() else 0.0

    def _as_recorded(self, encoder: str) -> str:
        """An encoder as a kept NER model records it: relative to the run folder when it lies inside it."""
        try:
            return Path(encoder).resolve().relative_to(self.run_dir.resolve()).as_posix()
        except ValueError:
            return encoder

    def ner_model(self, encoder: str, folder: Path, seed: int, progress, lc: Corpus | None = None) -> tuple[str, dict[str, Any]]:
        from dataclasses import replace

        from core.train.ner_model import CONFIG_FILE
        from core.train.ner_train import train_ner
        from core.train.training import Checkpointer

        out = folder / "ner" / "model"
        summary_path = folder / "ner" / "summary.json"
        with exclusive(folder / "ner.lock", lambda: progress(0.0, f"waiting: another cell is fine-tuning {folder.parent.name}")):
            kept = json.loads(summary_path.read_text("utf-8")) if summary_path.exists() else None
            # a kept model is reused only if fine-tuned from this encoder (one from before the record is taken as is);
            # recorded relative to the run folder when inside it, so a moved workspace still matches
            source = self._as_recorded(encoder)
            if not (out / CONFIG_FILE).exists() or kept is None or kept.get("encoder", source) != source:
                summary = train_ner(lc if lc is not None else self.lc, self.dev, encoder, out,
                                    replace(self.ner_config, seed=seed), progress, self.ctx.log,
                                    lambda **v: self.ctx.metric(cell=folder.parent.name, seed=seed, stage="ner", **v),
                                    checkpoint_dir=folder / "ner", overwrite=True)
                atomic_write_json(summary_path, {**summary, "encoder": source})
            # a finished cell keeps its model, not the resume state (optimizer moments twice: ~50 GB over a study)
            Checkpointer(folder / "ner").discard()
        return str(out), json.loads(summary_path.read_text("utf-8"))


class ExperimentCells(CellTrainer):
    """Runs the cells of one experiment in its run folder.

    Layout: `pretrain/KEY/seed-N/mlm/model` holds each MLM model (KEY: the row, plus the SC budget
    for a strategy, plus the LC size when the selection read B2), so an LC-size sweep pretrains
    once and fine-tunes many times; `cells/KEY/seed-N/` holds each cell's NER model and cell.json,
    KEY = row, SC budget (strategies) and LC size. B1 is the `tapt` MLM model of a seed, B2 the
    `tapt` cell's NER model at the cell's LC size."""

    def __init__(self, params: ExperimentParams, ctx: JobContext, refs: dict[str, Any], tc: Corpus, dc: Corpus, lc: Corpus,
                 dev: Corpus, test: Corpus):
        super().__init__(ctx, params.model, params.preset, lc, dev, params.mlm_config, params.ner_config,
                         pick=params.pick_checkpoint)
        self.params, self.refs = params, refs
        self.tc, self.dc, self.test = tc, dc, test
        self._lc_subsets: dict[tuple[int, int], Corpus] = {}
        self.recipe_checked = False  # a parallel run's parent checks once for its workers

    def inputs(self) -> dict[str, tuple[str, str]]:
        """What this run's cells read, role -> (name, corpus_fingerprint), for the run folder's check (records.check_inputs):
        TC and DC as the leakage guard left them, which the same inputs always give."""
        corpora = {"tc": self.tc, "dc": self.dc, "lc": self.lc, "dev": self.dev, "test": self.test}
        return {k: (str((self.refs.get(k) or {}).get("name") or k), corpus_fingerprint(c)) for k, c in corpora.items()}

    def phases_of(self, row: str) -> list[str]:
        """The phases a cell of `row` runs (core.experiments.cell_phases): its progress slices follow them."""
        if row == "none":
            return cell_phases(False)
        if row in BASELINES:
            return cell_phases(True, pick=bool(self.pick))
        needs_b1, needs_b2 = strategy_models(*parse_strategy(row))
        return cell_phases(True, selects=True, tapt_models=needs_b1 or needs_b2, pick=bool(self.pick))

    def cell_weight(self, row: str) -> float:
        """A cell of `row`'s clock relative to a pretraining cell's on this machine: its slice of the experiment."""
        return cell_weight(self.phases_of(row), self.device)

    @property
    def device(self) -> str:
        """Where this machine's cells train ('cuda' or 'cpu'): the phases' shares of a cell differ by device."""
        from core.lm.models import pick_device

        return pick_device(self.ner_config.device or "auto")

    # ------------------------------------------------------------------ folders and LC subsets

    def cell_dir(self, row: str, seed: int, budget: int | None = None, lc_size: int | None = None) -> Path:
        return self.run_dir / "cells" / cell_key(row, budget, lc_size if lc_size is not None else len(self.lc)) / f"seed-{seed}"

    def pretrain_dir(self, row: str, seed: int, budget: int | None = None, lc_size: int | None = None) -> Path:
        return self.run_dir / "pretrain" / cell_key(row, budget, lc_size) / f"seed-{seed}"

    def lc_subset(self, size: int, seed: int) -> Corpus:
        """LC itself at full size; else `size` sentences drawn with the cell's seed (nested: a
        smaller subset of a seed is a prefix of the same permutation, so sizes differ only in data)."""
        if size >= len(self.lc):
            return self.lc
        if (size, seed) not in self._lc_subsets:
            order = np.random.default_rng(seed).permutation(len(self.lc))[:size]
            self._lc_subsets[(size, seed)] = self.lc.subset(sorted(int(i) for i in order))
        return self._lc_subsets[(size, seed)]

    def tapt_models(self, seed: int, lc_size: int, progress) -> tuple[str, str]:
        """The TAPT row's models for this seed and LC size (trained here if the row has not run yet): B1 the MLM
        model, B2 the tapt cell's NER model, fine-tuned from the encoder that cell's checkpoint pick chooses (stored,
        so the cell and this agree whichever runs first: B2 was the final MLM model's when a B2 row ran first)."""
        span = phase_spans(["mlm", "pick", "ner"] if self.pick else ["mlm", "ner"], self.device)
        phases, folder, lc = self.rehearse([("tapt", self.tc.texts())], seed), self.pretrain_dir("tapt", seed), \
            self.lc_subset(lc_size, seed)
        b1 = self.mlm_model(phases, folder, seed, sub(progress, *span["mlm"]))
        encoder = self.choose_encoder(b1, phases, folder, seed, sub(progress, *span["pick"]), lc)[0] if self.pick else b1
        b2, _ = self.ner_model(encoder, self.cell_dir("tapt", seed, None, lc_size), seed, sub(progress, *span["ner"]), lc=lc)
        return b1, b2

    # ------------------------------------------------------------------ one cell

    def run_cell(self, row: str, seed: int, progress, budget: int | float | str | None = None,
                 lc_size: int | None = None) -> dict[str, Any]:
        """One cell: (row, seed, SC budget for a strategy, LC size). `budget` is what was asked for
        (count or ratio of DC, None: |TC|); the cell (core.experiments.records.Cell) records the SC sentences
        actually selected."""
        from core.train.mlm import mlm_phases
        from core.train.ner_model import load_ner_model
        from core.train.ner_predict import evaluate, predict_corpus

        cached = self.finished_cell(row, seed, budget, lc_size)
        if cached is not None:
            return cached
        lc_n = len(self.lc) if lc_size is None else int(lc_size)
        strategy = row not in BASELINES
        count = resolve_sc_budget(budget, len(self.tc), len(self.dc)) if strategy else None
        folder = self.cell_dir(row, seed, count, lc_n)
        key = folder.parent.name
        done = folder / CELL_FILE
        if not self.recipe_checked:  # only a cell still to train can mix recipes: finished folders stay readable
            check_recipe(self.run_dir, self.params, len(self.lc))
            check_inputs(self.run_dir, self.inputs())
            self.recipe_checked = True
        folder.mkdir(parents=True, exist_ok=True)
        t0 = time.time()
        span = phase_spans(self.phases_of(row), self.device)  # each phase's slice of the cell, by its share of the clock

        def part(phase: str):
            return sub(progress, *span[phase])
        lc = self.lc_subset(lc_n, seed)
        made: dict[str, Any] = {}  # what only some rows have: Cell's optional fields, by name
        tc_texts = self.tc.texts()
        lin = from_base(self.model)
        phases: list[tuple[str, list[str]]] = []
        mlm_folder: Path | None = None
        sc_ref: dict[str, Any] | None = None
        if row == "none":
            encoder = self.model
        elif not strategy:
            dc_texts = self.dc.texts() if "dapt" in row else None
            phases = self.rehearse(mlm_phases(row, tc_texts, None, dc_texts, seed), seed)
            mlm_folder = self.pretrain_dir(row, seed)
            encoder = self.mlm_model(phases, mlm_folder, seed, part("mlm"))
        else:
            spec = StrategyRow.parse(row)
            name, model_tag = spec.name, spec.model_tag
            needs_b1, needs_b2 = strategy_models(name, model_tag)
            kwargs: dict[str, Any] = {"model": self.model, "seed": seed, "workspace": self.ctx.workspace}
            if needs_b1 or needs_b2:
                self.ctx.log(f"{row}: training B1/B2 (TAPT) for seed {seed} first")
                b1, b2 = self.tapt_models(seed, lc_n, part("tapt models"))
                if needs_b1:
                    kwargs["model"] = b1
                    made["b1_mlm_seconds"] = self.mlm_seconds(self.pretrain_dir("tapt", seed))
                if needs_b2:
                    kwargs.update(model2=b2, ner_model=b2)
            if name in {s.value for s in ENTITY_AWARE}:  # types weighed by the cell's own LC (a sweep's sample, not all of LC)
                from core.selection.entity_gain import label_shares

                kwargs["options"] = {"type_weights": label_shares(lc)}
            if spec.options:  # the row's own (dsir:length=chunk); a type_weights given there wins over LC's
                kwargs["options"] = {**kwargs.get("options", {}), **spec.options}
            selection = select(self.tc, self.dc, name, count, progress=part("select"), **kwargs)
            selected = selection.selected
            sel_key = selection.key
            made.update(selection_key=sel_key, budget=len(selected),
                        budget_requested=budget if budget is not None else len(self.tc))
            sc_ref = {"name": f"selection:{sel_key}" if sel_key else f"selection:{name}", "hash": sel_key}
            lin.selection = SelectionStamp(sel_key, name, len(selected), model_tag or "base")
            phases = self.rehearse(mlm_phases("tc+sc", tc_texts, selected.texts(), None, seed), seed)
            mlm_folder = self.pretrain_dir(row, seed, count, lc_n if needs_b2 else None)
            encoder = self.mlm_model(phases, mlm_folder, seed, part("mlm"))
        if mlm_folder is not None:
            made["mlm_seconds"] = self.mlm_seconds(mlm_folder)
            made["mlm_sentences"] = sum(len(texts) for _, texts in phases)
            lin.mlm_phases += [MlmPhase(p, self._phase_corpora(p, sc_ref), len(texts)) for p, texts in phases]
            mlm_lineage = Lineage(**{**lin.__dict__, "seed": seed, "preset": self.preset, "wall_seconds": made["mlm_seconds"]})
            write_lineage(encoder, mlm_lineage)
            made["drift"] = self.drift(encoder, mlm_folder, tc_texts)
            chosen, pick = self.choose_encoder(encoder, phases, mlm_folder, seed, part("pick") if self.pick else silent, lc)
            if pick is not None:
                made["pick"] = {**pick_record(pick),
                                "drift": self.chosen_drift(pick, chosen, encoder, made["drift"], mlm_folder, tc_texts)}
                if pick["chosen"]["step"] is not None and chosen != encoder:
                    write_lineage(chosen, mlm_lineage)  # a snapshot: the same corpora and recipe, fewer steps
                encoder = chosen
            lin = from_base(encoder)
        ner_dir, trained = self.ner_model(encoder, folder, seed, part("ner"), lc=lc)
        summary = JobResult.from_dict(trained)
        model = load_ner_model(ner_dir)
        part("test")(0.0, "scoring TEST")
        predictions = predict_corpus(model, self.test, batch_size=self.ner_config.eval_batch_size)
        scores = evaluate(model, self.test, predictions=predictions)
        kept = keep_predictions(folder, predictions, self.test)  # intervals, paired tests
        run_id = f"{self.run_dir.name}.{key}.s{seed}"
        cell = Cell(row=row, seed=seed, key=key, lc_size=len(lc), f1=scores["f1"], precision=scores["precision"],
                    recall=scores["recall"], per_type=scores["per_type"], predictions=kept["predictions"],
                    test_counts=kept["test_counts"], best_dev_f1=summary.best_dev_f1,
                    ner_epochs=summary.epochs_run, encoder=encoder, numerics=numerics(summary), started=t0,
                    finished=time.time(), device=where_ran(summary), run=run_id, **made)
        lin.lc = CorpusStamp(**self.refs["lc"], sentences=len(lc), of=len(self.lc),
                             sample_seed=seed if len(lc) < len(self.lc) else None)
        lin.dev, lin.test = CorpusStamp(**self.refs["dev"]), CorpusStamp(**self.refs["test"])
        lin.seed, lin.preset, lin.wall_seconds = seed, self.preset, time.time() - t0
        record_run(self.ctx.workspace, run_id, "ner", lin, folder, ner_dir, f1=scores["f1"],
                   extra={"experiment": str(self.run_dir), "row": row, "budget": cell.budget, "lc_size": len(lc)})
        save_cell(done, cell)
        self.ctx.metric(cell=key, seed=seed, test_f1=scores["f1"])
        self.ctx.log(f"{key} seed {seed}: test F1 {scores['f1']:.4f}")
        return cell.to_dict()

    def finished_cell(self, row: str, seed: int, budget: int | float | str | None = None,
                      lc_size: int | None = None) -> dict[str, Any] | None:
        """The cell as it finished in an earlier run of this folder, or None when it is still to run."""
        lc_n = len(self.lc) if lc_size is None else int(lc_size)
        count = resolve_sc_budget(budget, len(self.tc), len(self.dc)) if row not in BASELINES else None
        folder = self.cell_dir(row, seed, count, lc_n)
        cached = load_cell(folder / CELL_FILE)
        if cached is not None and cached.key == folder.parent.name:
            return cached.to_dict()
        return self._legacy_cell(row, seed, lc_n)

    def _legacy_cell(self, row: str, seed: int, lc_n: int) -> dict[str, Any] | None:
        """A cell finished before sweeps existed (`cells/ROW/seed-N/cell.json`, one budget, all of LC), kept
        when this run asks for the same: resuming an older experiment does not train its cells again."""
        folder = self.run_dir / "cells" / slug(row) / f"seed-{seed}"
        single = len(sweep_budgets(self.params.budget, self.params.budgets)) == 1
        if not (single and lc_n == len(self.lc) and (folder / CELL_FILE).exists()):
            return None
        stored = json.loads((folder / CELL_FILE).read_text("utf-8"))
        if "lc_size" in stored:
            return None
        cell = Cell.from_dict({**stored, "key": stored.get("key") or folder.parent.name})
        cell.lc_size, cell.mlm_seconds = lc_n, self.mlm_seconds(folder)
        return cell.to_dict()

    def rehearse(self, phases: list[tuple[str, list[str]]], seed: int) -> list[tuple[str, list[str]]]:
        """The phases with `rehearsal_share` of random DC sentences mixed in (core.train.mlm_recipe.with_rehearsal)."""
        from core.train.mlm_recipe import with_rehearsal

        share = self.params.rehearsal_share
        return with_rehearsal(phases, self.dc.texts(), share, seed) if share else phases

    def _phase_corpora(self, phase: str, sc: dict[str, Any] | None) -> list[dict[str, Any]]:
        """{name, hash} of the corpora an MLM phase of this experiment reads (DC too when it is replayed)."""
        reads = {name: roles for phases in MODE_PHASES.values() for name, roles in phases}.get(phase, ())
        if self.params.rehearsal_share and "dc" not in reads:
            reads = (*reads, "dc")
        refs = {**self.refs, "sc": sc}
        return [refs[r] for r in reads if refs.get(r)]
