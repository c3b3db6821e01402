"""zsmalloc.corpus: the study of a tiny corpus recorded here (two short programs under the tier,
by `zsmalloc corpus record`), its tables as DataFrames, and the notebook that draws them. Needs
root (or access to /dev/userfaultfd) and the zsmalloc command; skips otherwise."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import run_notebook

import zsmalloc.corpus
import zsmalloc.lab

pytest.importorskip("pandas")

ROOT = Path(__file__).resolve().parents[2]


def _skip_reason() -> str | None:
    try:
        zsmalloc.lab.command()
    except FileNotFoundError as e:
        return str(e)
    if os.geteuid() != 0 and not os.access("/dev/userfaultfd", os.R_OK | os.W_OK):
        return "the tier needs root or access to /dev/userfaultfd"
    return None


SKIP = _skip_reason()
if SKIP:
    print(f"test_corpus: skipped: {SKIP}", file=sys.stderr)
pytestmark = pytest.mark.skipif(SKIP is not None, reason=str(SKIP))


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("corpus")
    subprocess.run(
        [zsmalloc.lab.command(), "corpus", "record", "--programs",
         str(ROOT / "examples" / "corpus" / "tiny-programs.json"), "-o", str(d)],
        check=True,
    )
    return d


def test_the_tables_come_back_as_dataframes(corpus: Path) -> None:
    tables = zsmalloc.corpus.study(corpus, free_ops=0)
    assert list(tables) == list(zsmalloc.corpus.TABLES)
    chains = tables["chains"]
    assert len(chains) == 2 * 16
    assert set(chains["trace"]) == {"py-small", "perl-small"}
    assert (chains[chains["config"] == "classic"]["peak_vs_classic_pct"] == 0).all()
    assert tables["leave_one_out"]["predicted_exactly"].all()
    assert tables["folios"].empty and tables["free_cost"].empty


def test_notes_say_why_a_table_is_empty(corpus: Path) -> None:
    r = zsmalloc.corpus.report(corpus, free_ops=0)
    notes = zsmalloc.corpus.notes(r)
    assert "no 16K or 64K folio trace" in notes["folios"]
    assert "cannot split: lookup" in notes["free_cost"]


def test_a_directory_without_a_manifest_is_a_value_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="manifest.json"):
        zsmalloc.corpus.study(tmp_path)


def test_the_notebook_draws_the_study() -> None:
    text, images = run_notebook("corpus_study.ipynb", timeout=600)
    assert "corpus studied: 6 traces" in text
    assert images >= 3
