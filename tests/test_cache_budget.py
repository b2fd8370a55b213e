"""The pot cache's budget ($INFINIPOT_CACHE_BUDGET) trims only what storing a pot needs: the least recently used
entries, oldest first, just enough, each eviction said on stderr in one `infinipot:` line; a pot larger than the
whole budget is not stored and every other entry stays, with a line saying why."""

from __future__ import annotations

import os

from infinipot_cli.pot import pot_cache
from test_pot_cache import SMALL, cache, document, pots, run, tiny  # noqa: F401 - fixtures


def test_storing_evicts_just_enough_of_the_oldest_and_says_which(tiny, cache, tmp_path, monkeypatch):  # noqa: F811
    docs = [document(tmp_path / f"part{i}.txt", seed=50 + i) for i in range(4)]
    keys = []
    for i, doc in enumerate(docs[:3]):
        r, out = run(["ask", doc, "Which bell?"] + SMALL, tiny)
        assert r.exit_code == 0 and out["cache"]["stored"], r.stderr
        keys.append(out["cache"]["key"])
        os.utime(cache / f"{keys[-1]}.pot", (1000 + i, 1000 + i))  # part0 the least recently used
    sizes = [(cache / f"{k}.pot").stat().st_size for k in keys]
    monkeypatch.setenv("INFINIPOT_CACHE_BUDGET", str(sum(sizes) + sizes[0] // 2))  # room for three and a half
    r, out = run(["ask", docs[3], "Which bell?"] + SMALL, tiny)
    assert r.exit_code == 0 and out["cache"]["stored"], r.stderr
    assert pots(cache) == sorted(f"{k}.pot" for k in keys[1:] + [out["cache"]["key"]])  # part0 alone went
    said = [ln for ln in r.stderr.splitlines() if "evicted" in ln]
    assert len(said) == 1 and said[0].startswith("infinipot: evicted 1 least recently used cached pot (")
    assert "part0.txt" in said[0] and "INFINIPOT_CACHE_BUDGET" in said[0], said


def test_a_pot_over_the_whole_budget_is_not_stored_and_the_others_stay(tiny, cache, tmp_path,  # noqa: F811
                                                                     monkeypatch):
    r, first = run(["ask", document(tmp_path / "kept.txt", seed=60), "Which bell?"] + SMALL, tiny)
    assert r.exit_code == 0 and first["cache"]["stored"], r.stderr
    before = pots(cache)
    monkeypatch.setenv("INFINIPOT_CACHE_BUDGET", "1K")  # smaller than any pot
    r, out = run(["ask", document(tmp_path / "big.txt", seed=61), "Which bell?"] + SMALL, tiny)
    assert r.exit_code == 0, r.stderr
    assert out["cache"]["stored"] is False and "exceeds the cache budget (1.0 KiB" in out["cache"]["why"]
    assert pots(cache) == before  # nothing evicted for a pot that could not be kept anyway
    said = [ln for ln in r.stderr.splitlines() if "not cached" in ln]
    assert len(said) == 1 and said[0].startswith("infinipot: not cached: the pot (") and "evicted" not in r.stderr


def test_evict_drops_the_oldest_until_it_fits_and_never_the_new_one(tmp_path, monkeypatch):
    monkeypatch.setenv("INFINIPOT_CACHE", str(tmp_path))
    folder = pot_cache.folder()
    folder.mkdir(parents=True)
    for name, size, used in (("a", 300, 1), ("b", 300, 2), ("c", 300, 3), ("new", 300, 0)):
        (folder / f"{name}.pot").write_bytes(b"x" * size)
        os.utime(folder / f"{name}.pot", (used, used))
    gone = pot_cache.evict(700, keep=folder / "new.pot")  # 1200 bytes: two of the others must go
    assert [e.key for e in gone] == ["a", "b"] and sorted(p.stem for p in folder.glob("*.pot")) == ["c", "new"]
    assert pot_cache.evict(700, keep=folder / "new.pot") == []  # fits: nothing more
    assert pot_cache.evict(100, keep=folder / "new.pot")[0].key == "c" and (folder / "new.pot").exists()
