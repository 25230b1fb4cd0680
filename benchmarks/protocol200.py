"""The paper's protocol at 200 seeds, run across sessions from committed chunks.

A cell is a method's training rows (the 200 seeds plus what the method adds) trained ``--runs`` times; its F1 runs,
and for an LLM method its rows, land in ``benchmarks/results/protocol200/`` as they are made, so a stop loses at most
one chunk or one training run and the next session (any machine, an empty response cache) resumes from what is
committed.

- **Rows** of an LLM method are generated in chunks of ``--chunk-size`` seeds by the library of one fixed commit (the
  *generator*): a git worktree of that commit under ``benchmarks/.gen/`` is put on ``PYTHONPATH`` of a worker process
  (``protocol200_worker.py``). Each chunk is one gzipped JSON Lines file, ``<dataset>/<method>/<generator>/chunk-NNN
  .jsonl.gz``: a header line (generator commit, method, seed indices, the chunk's run summary), then every row the
  method emitted for those seeds (tokens, tag names, source seed index, status, reason; no traces). A chunk whose
  header names another commit or other seeds is refused, never mixed in.
- **Cells**: ``noaug``, ``eda``, ``mr``, ``mr-train`` (rules, rebuilt by the current code: deterministic), an LLM
  method with its generator (``rgda@seeds:2096b68``), and ``rgda@seeds+mr:2096b68`` (its rows and MR's together);
  ``mr@1``: a rule's rows at 1 a seed instead of ``--ratio`` (what MR's rows are worth in an LLM cell's number). Every
  LLM method's augmenter sees only the 200 seeds (``@seeds``). Training: the encoder for the same number of optimizer
  steps in every cell (the steps a full 1:ratio set takes at ``--epochs``), seeds 1000, 1001, ...; F1 (seqeval, strict
  IOB2) on the whole test split. Each run's test predictions are kept (gzipped) for the paired bootstrap, which pools
  the runs: each resample of test sentences compares the mean F1 over a cell's runs with the other cell's.
- ``--commit`` commits each chunk and each run as it lands (only the results folder; retried while the index is busy).

Usage (what the background job runs, niced; a rerun resumes):
    python -m benchmarks.protocol200 run --commit
    python -m benchmarks.protocol200 generate rgda@seeds:2096b68 --commit     # one cell's rows
    python -m benchmarks.protocol200 train noaug mr --commit                  # cells' training runs
    python -m benchmarks.protocol200 report --readme                          # the table, also into benchmarks/README.md
    python -m benchmarks.protocol200 compare rgda@seeds:f4b6d2f rgda@seeds:2096b68   # one cell against others
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.common import DATA_DIR, DOMAINS, ROOT, header, load, seed_key

OUT = ROOT / "benchmarks" / "results" / "protocol200"
GEN = ROOT / "benchmarks" / ".gen"
CACHE = ROOT / "benchmarks" / ".cache"
RULES = ("noaug", "eda", "mr", "mr-train")
LLM_METHODS = ("naive", "gda", "rgda", "rgda-no-gr", "rgda-no-ac", "rgda-gated")
#: a method named ``<method>-gated`` is ``<method>`` generated with the seed tagger (the ``/seed_tagger`` treatment's,
#: trained once per machine) as the augmenter's ``tagger_gate``: the gate inside the pipeline, before the top-up,
#: from the first generator commit that has it. Each chunk records the tagger's weights digest (a tagger trained
#: again on another machine may differ in its last bits: recorded, not refused)
GATED = "-gated"
#: each dataset's cells in the order the background job works in (across datasets: :func:`job_order`): the first rule
#: cells (minutes each), then each LLM cell's rows and runs, with the cells added since where they were queued;
#: ``/likely_mention``: 2096b68's rows less those the split tagger's rule (session 39) fires on, the lever read first;
#: f4b6d2f is the row-quality issue's generator (the gates, the top-up asked twice, the split tagger's rule: 6fd8f81's
#: A/B, plus the comma rule and the checker's speed-ups, whose verdicts are the same), beside 2096b68's (it replaces
#: 08e3407, 794e120 and 6fd8f81, whose cells had not started). Its chunks' variety pass is given the cell's earlier rows
#: (as one map of the 200 seeds would count them: ``protocol200_worker``). ``/seed_tagger``: the rows less those in
#: which a tagger trained on the seeds finds a mention left untagged (``benchmarks.row_taggers``; the product's
#: ``TaggerGate``), the lever read after ``/likely_mention``; ``mr@1``, ``mr@2``: MR at 1 and 2 rows a seed, bracketing
#: the LLM cells' 1-2 (is MR's lead its rows' number?)
NEW = "f4b6d2f"
#: the generator after f4b6d2f: the composer's hints skip used-up entities (f98157c), the ``placeholder`` rule's two
#: type-name cases, the option checks of sessions 41-42, and the tagger gate inside the pipeline (f004868, reviewed in
#: e9da44b), opt-in: its ``rgda-gated`` cells are not in PLAN since the same gate over f4b6d2f's finished rows lowered
#: their F1 (-0.0159, p 0.014); run one by hand (``run "rgda-gated@seeds:f98157c" --commit``). FIN's LLM cells
#: come from it (none had started): FIN measures the generator the library ships, whose changes to the rows over
#: f4b6d2f are the entities the composer offers once the cap has used them up and the placeholder rule's two cases
NEXT = "f98157c"
PLAN = {"ncbi_disease": ["noaug", "mr", "rgda@seeds:2096b68", "rgda@seeds:2096b68/likely_mention",
                         "rgda@seeds+mr:2096b68", "eda", "mr-train", "rgda@seeds:2096b68/seed_tagger",
                         f"rgda@seeds:{NEW}", f"rgda@seeds+mr:{NEW}", f"rgda@seeds:{NEW}/seed_tagger", "mr@1",
                         "naive@seeds:2096b68", "gda@seeds:2096b68", "mr@2", f"rgda@seeds:{NEXT}", f"rgda@seeds+mr:{NEXT}",
                         f"rgda@seeds+mr:{NEW}/seed_tagger"],
        "fin": ["noaug", "mr", "eda", "mr-train", f"rgda@seeds:{NEXT}", f"rgda@seeds+mr:{NEXT}", f"naive@seeds:{NEXT}",
                f"gda@seeds:{NEXT}"]}
#: FIN's first chunks of rows, made before NCBI's next generator cell (the issue asks FIN started with its first
#: chunks; the whole of FIN waits for NCBI-disease to be complete)
FIN_FIRST_CHUNKS = 2


def job_order() -> list[tuple[str, str, int | None]]:
    """The background job's steps across datasets (``run`` with neither cells nor ``--dataset``): (dataset, cell,
    chunks), ``chunks`` making only the cell's first chunks, no training. NCBI-disease's PLAN through its last cell
    the issue names (``gda@seeds``), FIN's first chunks, the rest of NCBI-disease's, then FIN's."""
    ncbi = PLAN["ncbi_disease"]
    cut = ncbi.index("gda@seeds:2096b68") + 1
    return ([("ncbi_disease", c, None) for c in ncbi[:cut]] + [("fin", f"rgda@seeds:{NEXT}", FIN_FIRST_CHUNKS)]
            + [("ncbi_disease", c, None) for c in ncbi[cut:]] + [("fin", c, None) for c in PLAN["fin"]])


def parse_cell(cell: str) -> tuple[str, str | None, bool]:
    """``"rgda@seeds+mr:2096b68"`` -> (``"rgda"``, ``"2096b68"``, with MR rows); a rule method -> (name, None, False).
    A ``/RULE[+RULE]`` after the commit (:func:`recheck_of`) does not change what is generated."""
    name, _, generator = cell.partition(":")
    generator = generator.partition("/")[0]
    rule, _, per_seed = name.partition("@")  # "mr@1": MR's rows, 1 a seed instead of --ratio (the same steps)
    if name in RULES or (rule in RULES and rule != "noaug" and per_seed.isdigit() and int(per_seed) > 0):
        if generator:
            raise SystemExit(f"{cell}: a rule method has no generator commit")
        return name, None, False
    base, plus_mr = (name[:-3], True) if name.endswith("+mr") else (name, False)
    method, _, stats = base.partition("@")
    if method not in LLM_METHODS or stats != "seeds" or not generator:
        raise SystemExit(f"{cell}: an LLM cell is METHOD@seeds[+mr]:COMMIT with METHOD one of {', '.join(LLM_METHODS)}")
    return method, generator, plus_mr


def recheck_of(cell: str) -> tuple[str, ...]:
    """The checker rules a cell's rows are read again with: ``"rgda@seeds:2096b68/likely_mention"`` -> that rule.
    Such a cell trains on its generator's rows less those today's rule fires on (the statistics the ``@seeds``
    augmenter had: the seeds', each row read beside its own seed): what a new gate would have done to the same rows,
    without generating them again. Its results record the rules, how many rows were dropped and the code that
    dropped them. Only rules that read the row, its seed and the statistics mean anything here: one reading the
    seed's other rows, the prompt's examples or the run's ledger sees none of them and never fires. Beside the rules,
    ``seed_tagger`` reads the rows with a tagger trained on the seeds (``benchmarks.row_taggers``)."""
    generator = cell.partition(":")[2]
    return tuple(r for r in generator.partition("/")[2].split("+") if r)


def git(*args: str, cwd: Path = ROOT) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def full_commit(rev: str) -> str:
    return git("rev-parse", "--verify", f"{rev}^{{commit}}")


def worktree(commit: str) -> Path:
    """A detached worktree of ``commit`` under ``benchmarks/.gen/`` (made once)."""
    path = GEN / commit[:12]
    if not (path / "hf_rgda").is_dir():
        GEN.mkdir(parents=True, exist_ok=True)
        git("worktree", "add", "--detach", "--force", str(path), commit)
    if git("rev-parse", "HEAD", cwd=path) != commit:
        raise SystemExit(f"{path} is not at {commit}")
    return path


def commit_results(message: str, args: argparse.Namespace, also: tuple[str, ...] = ()) -> None:
    """Commit the results folder (and ``also``) alone (``git commit -- paths``), retrying while another git command
    holds the index."""
    if not args.commit:
        return
    rel = [str(Path(args.out).resolve().relative_to(ROOT)), *also, *write_plan(args)]
    for attempt in range(30):
        try:
            git("add", "--", *rel)
            if not git("diff", "--cached", "--name-only", "--", *rel):
                return
            git("commit", "-q", "-m", message, "--", *rel)
            return
        except subprocess.CalledProcessError as err:
            print(f"commit failed (attempt {attempt + 1}): {err.stderr.strip()[:200]}", flush=True)
            time.sleep(20)


def plan_block(args: argparse.Namespace) -> str:
    """The plan's table from the committed files (``benchmarks.protocol200_plan``)."""
    from benchmarks.protocol200_plan import plan_report

    return plan_report(Path(args.out), PLAN, chunks=-(-args.num_seeds // args.chunk_size), runs=args.runs,
                       full_commit=full_commit, parse_cell=parse_cell)[0]


def write_plan(args: argparse.Namespace, readme: Path = ROOT / "benchmarks" / "README.md",
               block: str | None = None) -> tuple[str, ...]:
    """The plan's block of ``readme`` rewritten from the committed files (``plan --readme``; ``block`` where already
    made); the paths it changed."""
    from benchmarks.ab_rows import write_readme as write_block

    if "<!-- protocol200-plan:start -->" not in readme.read_text():
        return ()
    write_block("protocol200-plan", block if block is not None else plan_block(args), readme)
    return (str(readme.relative_to(ROOT)),)


class Protocol:
    """One dataset's seeds, test split and the results file."""

    def __init__(self, args: argparse.Namespace) -> None:
        from hf_rgda.recipe import sample_seeds
        from hf_rgda.tags import label_names_of

        self.args, self.name = args, args.dataset
        dsd = load(args.data_dir, self.name)
        self.train_split, self.test = dsd["train"], dsd["test"]
        self.labels = label_names_of(self.train_split, self.test)
        self.seeds = sample_seeds(self.train_split, args.num_seeds, sample_seed=args.sample_seed, min_entities=1)
        from hf_rgda.tags import to_tag_names

        self.seed_tags = to_tag_names(self.seeds)
        self.keys = [seed_key(t, g) for t, g in zip(self.seeds["tokens"], self.seed_tags)]
        out = Path(getattr(args, "out", None) or OUT)
        self.dir = out / self.name
        self.results_path = out / f"{self.name}.json"
        self.scale = (f"{self.name}/seeds={len(self.seeds)}/ratio={args.ratio}/encoder={Path(args.encoder).name}"
                      f"/steps={self.steps}")

    @property
    def steps(self) -> int:
        """Optimizer steps of every cell: what a full 1:ratio set takes at ``--epochs``."""
        a = self.args
        return -(-a.num_seeds * (1 + a.ratio) // a.train_batch) * int(a.epochs)

    # ------------------------------------------------------------------ rows
    def chunk_path(self, method: str, commit: str, k: int) -> Path:
        return self.dir / f"{method}@seeds" / commit[:12] / f"chunk-{k:03d}.jsonl.gz"

    def chunks(self) -> list[range]:
        size = self.args.chunk_size
        return [range(lo, min(lo + size, len(self.seeds))) for lo in range(0, len(self.seeds), size)]

    def read_chunk(self, path: Path, method: str, commit: str, span: range, variety: str | None = None,
                   prior: int | None = None) -> tuple[dict, list[dict]] | None:
        """A committed chunk, refused where it is another cell's (commit, method, seeds) or its variety pass saw
        another scope (``variety``: "cell" where the generator's pass was given the cell's earlier rows, ``prior``
        of them: a chunk made before an earlier one was made again is refused)."""
        if not path.exists():
            return None
        with gzip.open(path, "rt") as fh:
            head, *rows = (json.loads(line) for line in fh)
        want = {"commit": commit, "method": method, "seeds": list(span), "keys": self.keys[span.start:span.stop],
                "variety": variety, **({"prior_rows": prior} if variety else {})}
        for k, v in want.items():
            if head.get(k) != v:
                raise SystemExit(f"{path}: its {k} is {head.get(k)!r}, this cell's is {v!r}: refused (not mixed in)")
        return head, rows

    def generate(self, method: str, commit: str, first: int | None = None) -> list[dict]:
        """Every chunk (or the ``first`` ones) of ``method``'s rows from ``commit``'s library: the missing ones are
        generated, each written and (``--commit``) committed as it lands. Returns the accepted rows of those chunks."""
        commit = full_commit(commit)
        tree = worktree(commit)
        # a commit with the variety pass is given the cell's earlier rows before each chunk (protocol200_worker)
        variety = "cell" if (tree / "hf_rgda" / "checking" / "variety.py").exists() else None
        accepted: list[dict] = []
        chunks = self.chunks()
        options: dict[str, Any] | None = None  # a -gated method's: its tagger loaded (or trained) for a chunk to make
        gated: dict[str, Any] = {}
        for k, span in enumerate(chunks[:first]):
            path = self.chunk_path(method, commit, k)
            found = self.read_chunk(path, method, commit, span, variety, len(accepted))
            if found is None:
                if options is None:
                    options, gated = self.gate_options(method)
                start = time.perf_counter()
                out = self.run_worker(tree, method, commit, k, span, accepted if variety else [], options)
                if out.get("prior_rows") != (len(accepted) if variety else None):
                    raise SystemExit(f"chunk {k}: the worker entered {out.get('prior_rows')} earlier rows, not "
                                     f"{len(accepted) if variety else None}")
                index = {key: i for i, key in zip(span, self.keys[span.start:span.stop])}
                rows = [{"seed": index.get(r.pop("source")), **r} for r in out["rows"]]
                head = {"commit": commit, "method": method, "dataset": self.name, "chunk": k, "of": len(chunks),
                        "seeds": list(span), "keys": self.keys[span.start:span.stop], "llm": self.args.llm,
                        "seconds": round(time.perf_counter() - start, 1), "machine": header("protocol200")["machine"],
                        "summary": out["summary"], **({"variety": variety, "prior_rows": len(accepted)} if variety else {}),
                        **gated}
                path.parent.mkdir(parents=True, exist_ok=True)
                tmp_path = path.with_suffix(".tmp")
                with gzip.open(tmp_path, "wt") as fh:
                    for line in (head, *rows):
                        fh.write(json.dumps(line) + "\n")
                tmp_path.rename(path)
                n = sum(r["status"] == "accepted" for r in rows)
                print(f"{path}: {n} accepted in {head['seconds']} s", flush=True)
                commit_results(f"protocol200 {self.name}/{method}@seeds:{commit[:7]}: chunk {k + 1}/{len(chunks)} "
                               f"(seeds {span.start}-{span.stop - 1}), {n} rows accepted, {head['seconds']:.0f} s",
                               self.args)
                found = (head, rows)
            accepted += [r for r in found[1] if r["status"] == "accepted"]
        return accepted

    def gate_options(self, method: str) -> tuple[dict[str, Any], dict[str, Any]]:
        """A ``-gated`` method's augmenter options (its ``tagger_gate``: the seed tagger's folder) and what a chunk
        records of the tagger; none for another method."""
        if not method.endswith(GATED):
            return {}, {}
        gate, info = self.tagger("seed_tagger")
        return {"tagger_gate": str(gate.path)}, {"tagger_gate": {**info, "digest": gate.digest}}

    def run_worker(self, tree: Path, method: str, commit: str, k: int, span: range,
                   prior: Sequence[dict] = (), options: dict[str, Any] | None = None) -> dict[str, Any]:
        """Chunk ``k``'s rows from the worker process, which imports ``hf_rgda`` from the generator's worktree;
        ``prior``: the rows the cell's earlier chunks accepted (for its variety pass); ``options``: the augmenter's
        (a ``-gated`` method's gate, :meth:`gate_options`)."""
        with tempfile.TemporaryDirectory() as tmp:
            self.seeds.select(span).save_to_disk(f"{tmp}/seeds")
            self.seeds.save_to_disk(f"{tmp}/source")  # @seeds: the augmenter's statistics from the seeds alone
            job = {"worktree": str(tree), "seeds": f"{tmp}/seeds", "source": f"{tmp}/source",
                   "method": method.removesuffix(GATED),
                   "llm": self.args.llm, "ratio": self.args.ratio, "domain": DOMAINS.get(self.name, ""),
                   "cache": str(CACHE / f"protocol200-{commit[:12]}.sqlite3"), "options": options or {},
                   "batch_size": self.args.batch_size, "desc": f"{self.name}/{method}@seeds chunk {k}",
                   "prior": [{"seed": r["seed"], "tokens": r["tokens"], "tags": r["tags"]} for r in prior]}
            Path(f"{tmp}/job.json").write_text(json.dumps(job))
            env = {**os.environ, "PYTHONPATH": str(tree), "HF_HUB_OFFLINE": "1"}
            subprocess.run([sys.executable, str(Path(__file__).with_name("protocol200_worker.py")),
                            f"{tmp}/job.json", f"{tmp}/out.json"], env=env, cwd=tree, check=True)
            return json.loads(Path(f"{tmp}/out.json").read_text())

    def complete(self, method: str, commit: str) -> bool:
        commit = full_commit(commit)
        return all(self.chunk_path(method, commit, k).exists() for k in range(len(self.chunks())))

    # ------------------------------------------------------------------ cells
    def cell_rows(self, cell: str) -> tuple[Any, dict[str, Any]]:
        """The augmented rows of ``cell`` (a Dataset of tokens, tag names, source) and what is said of them."""
        from datasets import Dataset

        from benchmarks.protocol import augment as rule_rows

        method, generator, plus_mr = parse_cell(cell)
        args = argparse.Namespace(ratio=self.args.ratio, sample_seed=self.args.sample_seed, batch_size=self.args.batch_size)
        parts, info = [], {}
        if generator is not None:
            if not self.complete(method, generator):
                raise SystemExit(f"{cell}: its rows are not all generated yet (run generate {cell})")
            rows = self.generate(method, generator)
            if rules := recheck_of(cell):
                rows, info["recheck"] = self.treat(rows, rules)
            parts.append({"tokens": [r["tokens"] for r in rows], "ner_tags": [r["tags"] for r in rows],
                          "rgda_source": [self.keys[r["seed"]] for r in rows]})
            info["generator"] = full_commit(generator)
        if generator is None or plus_mr:
            rule, _, per_seed = ("mr" if plus_mr else method).partition("@")
            if per_seed:  # fewer (or more) rows a seed, trained for the cells' common steps
                args.ratio = int(per_seed)
            aug, _ = rule_rows(rule, self.name, self.train_split, self.seeds, args)
            from hf_rgda.tags import to_tag_names

            parts.append({"tokens": aug["tokens"], "ner_tags": to_tag_names(aug),
                          "rgda_source": aug["rgda_source"] if "rgda_source" in aug.column_names else [""] * len(aug)})
        merged = {k: [v for p in parts for v in p[k]] for k in ("tokens", "ner_tags", "rgda_source")}
        return Dataset.from_dict(merged), info

    def treat(self, rows: list[dict], names: tuple[str, ...]) -> tuple[list[dict], dict[str, Any]]:
        """``rows`` after the checker rules among ``names`` (:meth:`recheck`), then the tagger treatments among them
        (``benchmarks.row_taggers``); with what each did."""
        from benchmarks import row_taggers as rt

        rules = tuple(n for n in names if n not in rt.TREATMENTS)
        before, log = len(rows), {"rules": list(names), "rows_before": len(rows), "code": header("protocol200")["commit"]}
        if rules:
            rows, _ = self.recheck(rows, rules)
        for name in (n for n in names if n in rt.TREATMENTS):
            gate, info = self.tagger(name)
            rows, dropped = rt.drop_missed(gate, rows)
            log[name] = {**info, "dropped": len(dropped)}
        log["dropped"] = before - len(rows)
        return rows, log

    def tagger(self, name: str) -> tuple[Any, dict]:
        """The gate of treatment ``name`` (``benchmarks.row_taggers``), trained once per machine, and its record."""
        from benchmarks import row_taggers as rt

        return rt.seed_tagger(self.training_set({"tokens": [], "ner_tags": []}), self.labels, self.steps,
                              self.args, CACHE / "seed_tagger")

    def recheck(self, rows: list[dict], names: tuple[str, ...]) -> tuple[list[dict], list[dict]]:
        """``rows`` split into those the checker's rules ``names`` pass and those one fires on (no repair), read with
        the seeds' statistics (the ``@seeds`` augmenter's) beside each row's own seed."""
        from hf_rgda.checking import RULES, Checker, SplitStats
        from hf_rgda.checking.sentence import Sentence
        from hf_rgda.checking.table import first_failure
        from hf_rgda.records import Seed

        table = {r.name: r for r in RULES}
        unknown = [n for n in names if n not in table]
        if unknown:
            raise SystemExit(f"recheck: {', '.join(unknown)} is not a rule of the checker's table")
        rules = tuple(table[n] for n in names)
        types = tuple(dict.fromkeys(label[2:] for label in self.labels if label != "O"))
        checker = Checker(types, SplitStats.from_split(self.seeds["tokens"][:], self.seed_tags))
        kept, dropped = [], []
        for r in rows:
            seed = Seed(self.keys[r["seed"]], tuple(self.seeds[r["seed"]]["tokens"]), tuple(self.seed_tags[r["seed"]]))
            found = first_failure(Sentence(r["tokens"], r["tags"], seed, checker), rules)
            (dropped if found else kept).append(r)
        return kept, dropped

    def diversity(self, aug: Any) -> float | None:
        """Mean BERTScore F1 of the added rows against their own seed sentences (lower: more diverse)."""
        from hf_rgda.metrics import bertscore

        text = {k: " ".join(t) for k, t in zip(self.keys, self.seeds["tokens"])}
        pairs = [(" ".join(t), text[s]) for t, s in zip(aug["tokens"], aug["rgda_source"]) if s in text]
        if not pairs:
            return None
        return round(bertscore([a for a, _ in pairs], [b for _, b in pairs], model=self.args.bertscore_model)["mean_f1"], 4)

    def training_set(self, aug: Any) -> Any:
        from datasets import ClassLabel, Dataset, Features, Sequence, Value

        features = Features({"tokens": Sequence(Value("string")), "ner_tags": Sequence(ClassLabel(names=self.labels))})
        return Dataset.from_dict({"tokens": list(self.seeds["tokens"]) + list(aug["tokens"]),
                                  "ner_tags": self.seed_tags + list(aug["ner_tags"])}, features=features)

    def load_results(self) -> dict[str, Any]:
        return json.loads(self.results_path.read_text()) if self.results_path.exists() else {"cells": {}}

    def save_results(self, results: dict[str, Any]) -> None:
        self.results_path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.results_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(results, indent=1))
        tmp.rename(self.results_path)

    def predictions_path(self, cell: str) -> Path:
        return self.dir / "predictions" / f"{cell.replace(':', '@').replace('/', '-')}.json.gz"

    def train(self, cell: str) -> None:
        """``--runs`` training runs of ``cell`` (the missing ones), each saved and committed as it finishes."""
        from benchmarks.protocol import rows_fingerprint, train_eval

        aug, info = self.cell_rows(cell)
        rows = self.training_set(aug)
        results = self.load_results()
        key = f"{self.scale}/{cell}"
        fingerprint = rows_fingerprint(rows)
        stored = results["cells"].get(key)
        if stored and stored["rows_sha256"] != fingerprint:
            raise SystemExit(f"{key}: the stored runs trained on other rows (sha256 {stored['rows_sha256'][:12]}, now "
                             f"{fingerprint[:12]}): move them aside to start the cell over")
        cell_out = stored or {"dataset": self.name, "cell": cell, "seeds": len(self.seeds), "augmented": len(aug),
                              "encoder": self.args.encoder, "steps": self.steps, "rows_sha256": fingerprint, **info,
                              "bertscore_vs_seed": self.diversity(aug), "runs": []}
        preds_path = self.predictions_path(cell)
        preds = json.loads(gzip.decompress(preds_path.read_bytes())) if preds_path.exists() else []
        preds = preds[: len(cell_out["runs"])]  # a run whose predictions were written but not its figures: again
        targs = argparse.Namespace(**{**vars(self.args), "labels": self.labels})
        for run in range(len(cell_out["runs"]), self.args.runs):
            r = train_eval(rows, self.test, steps=self.steps, run=run, args=targs)
            preds.append([" ".join(p) for p in r.pop("predictions")])
            preds_path.parent.mkdir(parents=True, exist_ok=True)
            preds_path.write_bytes(gzip.compress(json.dumps(preds).encode(), mtime=0))
            cell_out["runs"].append({**r, "run": run, "code": header("protocol200")["commit"],
                                     "machine": header("protocol200")["machine"]})
            f1s = [x["f1"] for x in cell_out["runs"]]
            cell_out["f1_mean"], cell_out["f1_sd"] = round(statistics.mean(f1s), 4), round(_sd(f1s), 4)
            results = self.load_results()  # another process may have written other cells meanwhile
            results["cells"][key] = cell_out
            self.save_results(results)
            print(f"{key}: run {run} F1 {r['f1']} in {r['seconds']} s", flush=True)
            readme = write_readme(self) if self.name == README_DATASET else None  # the table and its runs agree
            commit_results(f"protocol200 {key}: run {run + 1}/{self.args.runs} F1 {r['f1']:.4f} "
                           f"({r['steps']} steps, {r['seconds']:.0f} s)", self.args,
                           also=(str(readme.relative_to(ROOT)),) if readme else ())


#: the dataset whose table benchmarks/README.md opens with
README_DATASET = "ncbi_disease"


def write_readme(proto: Protocol, readme: Path = ROOT / "benchmarks" / "README.md") -> Path:
    """Write :func:`report`'s table into ``readme`` between its protocol200 markers."""
    text = readme.read_text()
    start, end = "<!-- protocol200:start -->", "<!-- protocol200:end -->"
    if start not in text or end not in text:
        raise SystemExit(f"{readme} has no {start} ... {end} block")
    head, rest = text.split(start, 1)
    readme.write_text(f"{head}{start}\n{report(proto)}\n{end}{rest.split(end, 1)[1]}")
    return readme


def _sd(values: list[float]) -> float:
    return statistics.stdev(values) if len(values) > 1 else 0.0


def pooled_bootstrap(refs: list[list[str]], runs_a: list[list[list[str]]], runs_b: list[list[list[str]]], *,
                     resamples: int = 10_000, seed: int = 0) -> dict[str, float]:
    """Paired bootstrap over test sentences of Δ = mean F1 over A's runs − mean F1 over B's runs.

    Each resample draws the sentences once (with replacement) and scores every run of both cells on that draw; the
    two-sided p is 2·min(P(Δ ≤ 0), P(Δ ≥ 0)), capped at 1. It measures the test set's sampling error for these trained
    models; the spread between training runs is what the ± of the table shows."""
    import numpy as np

    from hf_rgda.metrics import sentence_counts

    def counts(runs: list[list[list[str]]]) -> Any:
        return np.stack([np.asarray(sentence_counts(refs, r, "IOB2"), dtype=np.int64) for r in runs])  # (runs, n, 3)

    ca, cb = counts(runs_a), counts(runs_b)
    n = ca.shape[1]
    rng = np.random.default_rng(seed)

    def f1(c: Any) -> Any:  # (runs, draws, 3) -> mean F1 over runs, per draw
        tp, pred, ref = c[..., 0], c[..., 1], c[..., 2]
        return np.divide(2 * tp, pred + ref, out=np.zeros(tp.shape), where=(pred + ref) > 0).mean(axis=0)

    deltas = []
    for lo in range(0, resamples, 200):
        idx = rng.integers(0, n, size=(min(200, resamples - lo), n))
        deltas.append(f1(ca[:, idx].sum(axis=2)) - f1(cb[:, idx].sum(axis=2)))
    d = np.concatenate(deltas)
    full = f1(ca.sum(axis=1)[:, None]) - f1(cb.sum(axis=1)[:, None])
    p = min(1.0, 2 * min(float((d <= 0).mean()), float((d >= 0).mean())))
    return {"delta": round(float(full[0]), 4), "p_value": p, "ci_low": round(float(np.percentile(d, 2.5)), 4),
            "ci_high": round(float(np.percentile(d, 97.5)), 4), "resamples": resamples}


def report(proto: Protocol, pairs: Sequence[tuple[str, str]] = ()) -> str:
    """The markdown table of every cell of the dataset (mean ± sd, rows added, ΔF1 and p against MR and noaug); each
    of ``pairs`` (``A``, ``B``) compared too and printed (``A vs B`` in the results' bootstrap)."""
    from hf_rgda.tags import to_tag_names

    results = proto.load_results()
    cells = {c["cell"]: c for k, c in results["cells"].items() if k.startswith(proto.scale + "/")}
    refs = to_tag_names(proto.test)

    def preds(cell: str) -> list[list[list[str]]]:  # the predictions of the runs the results record, no more
        path = proto.predictions_path(cell)
        runs = json.loads(gzip.decompress(path.read_bytes()))[: len(cells[cell]["runs"])]
        return [[s.split(" ") for s in run] for run in runs]

    lines = ["| cell | F1 (mean ± sd, runs) | rows added | BERTScore vs seed | ΔF1 vs MR (p) | ΔF1 vs noaug (p) |",
             "|---|---|---|---|---|---|"]
    boot, fresh = results.get("bootstrap", {}), {}

    def versus(cell: str, other: str) -> dict[str, Any]:  # the pooled bootstrap, kept while both cells' runs stay
        c, o = cells[cell], cells[other]
        pair = hashlib.sha256(json.dumps([c["rows_sha256"], len(c["runs"]), o["rows_sha256"],
                                          len(o["runs"])]).encode()).hexdigest()[:16]
        b = boot.get(f"{cell} vs {other}")
        if not b or b.get("pair") != pair:
            b = {**pooled_bootstrap(refs, preds(cell), preds(other), resamples=proto.args.resamples), "pair": pair}
            fresh[f"{cell} vs {other}"] = b
        return b

    for a, b in pairs:  # the pairs asked for besides the table's (``compare A B``)
        if a not in cells or b not in cells or not cells[a]["runs"] or not cells[b]["runs"]:
            raise SystemExit(f"compare {a} {b}: both need training runs in {proto.results_path}")
        got = versus(a, b)
        print(f"{a} vs {b}: {got['delta']:+.4f} (p {_p(got['p_value'], got['resamples'])}, 95% "
              f"{got['ci_low']:+.4f} to {got['ci_high']:+.4f})")
    for cell, c in sorted(cells.items(), key=lambda kv: kv[1]["f1_mean"]):
        cmp = []
        for other in ("mr", "noaug"):
            if cell == other or other not in cells or not c["runs"]:
                cmp.append("—")
                continue
            b = versus(cell, other)
            cmp.append(f"{b['delta']:+.4f} ({_p(b['p_value'], b['resamples'])})")
        bs = f"{c['bertscore_vs_seed']:.3f}" if c.get("bertscore_vs_seed") is not None else "—"
        sd = f" ± {c['f1_sd']:.4f}" if len(c["runs"]) > 1 else ""  # one run has no spread to show
        lines.append(f"| {cell} | {c['f1_mean']:.4f}{sd} ({len(c['runs'])}) | {c['augmented']} | {bs} | "
                     + " | ".join(cmp) + " |")
    if fresh:  # written back at once (the background job may be saving a run: read again, add, write)
        latest = proto.load_results()
        latest.setdefault("bootstrap", {}).update(fresh)
        proto.save_results(latest)
    return "\n".join(lines)


def rows_report(proto: Protocol, cells: list[str], silver: bool = True) -> tuple[str, dict[str, Any]]:
    """The LLM cells' rows read without training (those whose rows are all generated): rows, rows per seed, seeds
    whose rows share an entity set, entity novelty against the 200 seeds, distinct bigrams, and silver tag precision
    and recall (``benchmarks.silver``'s tagger, trained on the whole train split); then ten rows drawn at random
    (``random.Random(0)``) of the last ``rgda`` cell read as generated (the newest generator in PLAN's order)."""
    import random

    from benchmarks.ab_rows import describe, entities, inline
    from benchmarks.silver import agreement, silver_tagger

    seed_ents = {e for t, g in zip(proto.seeds["tokens"], proto.seed_tags) for e in entities(t, g)}
    model = tokenizer = None
    if silver:
        from hf_rgda.train import predict_tags

        model, tokenizer, info = silver_tagger(proto.args.data_dir, proto.name, proto.args.encoder, 3.0,
                                               CACHE / "silver")
    lines = [("| cell | rows (per seed) | seeds with rows sharing an entity set | entity novelty | distinct bigrams | "
              "silver precision | silver recall |"), "|---|---|---|---|---|---|---|"]
    out: dict[str, Any] = {"dataset": proto.name, "cells": {}}
    quoted: dict[str, list[dict]] = {}
    for cell in cells:
        method, generator, plus_mr = parse_cell(cell)
        if generator is None or plus_mr or not proto.complete(method, generator):
            continue
        rows = proto.generate(method, generator)
        if rules := recheck_of(cell):
            rows, _ = proto.treat(rows, rules)
        d = describe(rows, list(range(len(proto.seeds))), seed_ents)
        d["silver"] = agreement([(r["tokens"], r["tags"]) for r in rows],
                                predict_tags(model, tokenizer, [r["tokens"] for r in rows])) if silver and rows else None
        out["cells"][cell] = d
        quoted[cell] = rows
        sp = f"{d['silver']['precision']:.3f}" if d["silver"] else "—"
        sr = f"{d['silver']['recall']:.3f}" if d["silver"] else "—"
        lines.append(f"| {cell} | {d['rows']} ({d['rows_per_seed']}) | {len(d['seeds_with_rows_sharing_an_entity_set'])}"
                     f" | {d['entity_novelty']:.2f} | {d['distinct_bigrams']:.2f} | {sp} | {sr} |")
    plain = [c for c in out["cells"] if c.startswith("rgda@seeds:") and not recheck_of(c)]
    first = plain[-1] if plain else next(iter(out["cells"]), None)
    if first:
        picked = random.Random(0).sample(quoted[first], min(10, len(quoted[first])))
        lines += ["", f"Ten rows of `{first}` drawn at random (`random.Random(0)`), as accepted:", ""]
        lines += [f"{i}. (seed {r['seed']}) `{inline(r['tokens'], r['tags']).replace('`', chr(39))}`"
                  for i, r in enumerate(picked, 1)]
        out["quoted"] = [inline(r["tokens"], r["tags"]) for r in picked]
    if silver:
        out["silver_tagger"] = info
    return "\n".join(lines), out


def seen_report(proto: Protocol, cells: list[str]) -> tuple[str, dict[str, Any]]:
    """What each trained cell finds of the test split's mentions, split by whether their text (lower-cased, any type)
    is a mention of the 200 seeds ("seen") or not ("new"): recall of each kind (exact spans and types), and the
    precision of the predicted spans whose text is of each kind; means over the cell's recorded runs. MR writes the
    seeds' mentions into new sentences; rows that carry new entity strings could teach what it cannot."""
    from benchmarks.ab_rows import entities
    from hf_rgda.tags import tags_to_spans, to_tag_names

    results = proto.load_results()
    done = {c["cell"]: c for k, c in results["cells"].items() if k.startswith(proto.scale + "/") and c["runs"]}
    seen = {text for t, g in zip(proto.seeds["tokens"], proto.seed_tags) for text, _ in entities(t, g)}
    tokens, refs = proto.test["tokens"], to_tag_names(proto.test)

    def spans(tags: Sequence[str], words: Sequence[str]) -> set[tuple[int, int, str, bool]]:
        return {(x.start, x.end, x.label, " ".join(words[x.start:x.end]).lower() in seen)
                for x in tags_to_spans(list(tags), strict=False)}

    gold = [spans(r, t) for r, t in zip(refs, tokens)]
    n_gold = {k: sum(1 for g in gold for x in g if x[3] == k) for k in (True, False)}
    out: dict[str, Any] = {"test_mentions_seen": n_gold[True], "test_mentions_new": n_gold[False], "cells": {}}
    lines = [f"| cell | recall, seen ({n_gold[True]}) | recall, new ({n_gold[False]}) | precision, seen | precision, new |",
             "|---|---|---|---|---|"]
    for cell in [c for c in cells if c in done] or sorted(done, key=lambda c: done[c]["f1_mean"]):
        path = proto.predictions_path(cell)
        runs = json.loads(gzip.decompress(path.read_bytes()))[: len(done[cell]["runs"])]
        per_run = []
        for run in runs:
            pred = [spans(p.split(" "), t) for p, t in zip(run, tokens)]
            hit = {k: sum(1 for g, q in zip(gold, pred) for x in g & q if x[3] == k) for k in (True, False)}
            made = {k: sum(1 for q in pred for x in q if x[3] == k) for k in (True, False)}
            per_run.append({"recall_seen": hit[True] / max(1, n_gold[True]), "recall_new": hit[False] / max(1, n_gold[False]),
                            "precision_seen": hit[True] / max(1, made[True]), "precision_new": hit[False] / max(1, made[False])})
        mean = {k: round(statistics.mean(r[k] for r in per_run), 4) for k in per_run[0]}
        out["cells"][cell] = {**mean, "runs": len(per_run)}
        lines.append(f"| {cell} | {mean['recall_seen']:.3f} | {mean['recall_new']:.3f} | {mean['precision_seen']:.3f} | "
                     f"{mean['precision_new']:.3f} |")
    return "\n".join(lines), out


def seen_page(out: Path, dataset: str) -> Path:
    """The page ``seen --readme`` writes its table into (``<out>/<dataset>_seen.md``), made with its heading if new."""
    page = Path(out) / f"{dataset}_seen.md"
    if not page.exists():
        page.parent.mkdir(parents=True, exist_ok=True)
        what = " ".join((seen_report.__doc__ or "").split())
        page.write_text(f"# The 200-seed cells on seen and new test mentions ({dataset})\n\n{what}\n\n"
                        f"<!-- protocol200-seen-{dataset}:start -->\n<!-- protocol200-seen-{dataset}:end -->\n")
    return page


def work(args: argparse.Namespace, steps: Sequence[tuple[str, str, int | None]],
         protos: dict[str, Protocol] | None = None) -> None:
    """Each (dataset, cell, first chunks) step: its rows generated (``run``, ``generate``; only the ``first`` chunks
    where given) and its runs trained (``run``, ``train``; none for a first-chunks step); a dataset's
    :class:`Protocol` made once."""
    protos = {} if protos is None else protos
    for dataset, cell, first in steps:
        if dataset not in protos:
            protos[dataset] = Protocol(argparse.Namespace(**{**vars(args), "dataset": dataset}))
        method, generator, _ = parse_cell(cell)
        if generator is not None and args.action in ("run", "generate"):
            protos[dataset].generate(method, generator, first)
        if first is None and args.action in ("run", "train"):
            protos[dataset].train(cell)


def _p(p: float, resamples: int) -> str:
    return f"< {1 / resamples:.4f}" if p == 0 else f"{p:.4f}"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("action", choices=["run", "generate", "train", "report", "rows", "seen", "compare", "plan"],
                   help="rows: the LLM cells' rows read without training (silver precision and recall, ten quoted); "
                        "plan: every dataset's PLAN cells not yet complete and their hours left (reads files only); "
                        "seen: each trained cell's recall of the test mentions the seeds hold and of new ones; "
                        "compare: the first cell against each other one (ΔF1, p, 95% interval)")
    p.add_argument("cells", nargs="*", help="cells, e.g. noaug mr rgda@seeds:2096b68 (run: the job's order "
                   "across datasets, or with --dataset that dataset's PLAN)")
    p.add_argument("--dataset", default=None, help="default: ncbi_disease; run: the job's order across datasets "
                                                  "(job_order) unless a dataset or cells are given")
    p.add_argument("--data-dir", type=Path, default=DATA_DIR)
    p.add_argument("--num-seeds", type=int, default=200)
    p.add_argument("--ratio", type=int, default=3)
    p.add_argument("--sample-seed", type=int, default=0)
    p.add_argument("--chunk-size", type=int, default=10)
    p.add_argument("--batch-size", type=int, default=5, help="seeds per augmentation batch inside a chunk")
    p.add_argument("--llm", default=None, help="default: the embedded local model")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--encoder", default="sentence-transformers/all-MiniLM-L6-v2")
    p.add_argument("--bertscore-model", default="sentence-transformers/all-MiniLM-L6-v2")
    p.add_argument("--epochs", type=float, default=10)
    p.add_argument("--lr", type=float, default=5e-5)
    p.add_argument("--train-batch", type=int, default=16)
    p.add_argument("--resamples", type=int, default=10_000)
    p.add_argument("--out", type=Path, default=OUT, help="the results folder")
    p.add_argument("--readme", action="store_true", help="report, rows, plan: also write the table into "
                   "benchmarks/README.md; seen: into the results folder's <dataset>_seen.md")
    p.add_argument("--commit", action="store_true", help="git-commit each chunk and run as it lands")
    args = p.parse_args(argv)
    if args.llm is None:
        from hf_rgda import DEFAULT_LLM

        args.llm = DEFAULT_LLM
    if args.action == "plan":
        block = plan_block(args)
        print(block)
        if args.readme:
            write_plan(args, block=block)
        return 0
    if args.action == "run" and not args.cells and args.dataset is None:
        work(args, job_order())
        return 0
    args.dataset = args.dataset or "ncbi_disease"
    proto = Protocol(args)
    cells = args.cells or (PLAN.get(args.dataset, []) if args.action in ("run", "report", "rows") else [])
    if args.action == "rows":
        block, out = rows_report(proto, cells)
        print(block)
        from benchmarks.ab_rows import write_readme as write_block
        from benchmarks.common import write_results

        write_results(args.out / f"{proto.name}_rows.json", {**header("protocol200", argv), **out})
        if args.readme:
            write_block(f"protocol200-rows-{proto.name}", block)
        return 0
    if args.action == "seen":
        block, out = seen_report(proto, args.cells)
        print(block)
        from benchmarks.ab_rows import write_readme as write_block
        from benchmarks.common import write_results

        write_results(args.out / f"{proto.name}_seen.json", {**header("protocol200", argv), **out})
        if args.readme:
            write_block(f"protocol200-seen-{proto.name}", block, seen_page(args.out, proto.name))
        return 0
    if args.action == "compare":  # the first cell against each other one: ΔF1, p, 95% interval
        if len(args.cells) < 2:
            raise SystemExit("compare: give a cell and the cells to compare it with")
        report(proto, [(args.cells[0], other) for other in args.cells[1:]])
        return 0
    if args.action == "report":
        print(report(proto))
        if args.readme:
            write_readme(proto)
        return 0
    work(args, [(proto.name, cell, None) for cell in cells], {proto.name: proto})
    return 0


if __name__ == "__main__":
    sys.exit(main())
