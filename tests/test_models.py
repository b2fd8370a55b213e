"""-m resolution (GGUF files, Ollama's store, the Hugging Face cache), `infinipot models` (parameters counted once),
the plain prompt frame for tokenizers without a chat template, and Gemma 3's sliding-window layers in the pot."""

import json
import os
import shutil
import struct

import numpy as np
import pytest
import torch
from typer.testing import CliRunner

from infinipot_cli.runtime import catalogue as found
from infinipot_cli.app import app
from infinipot_cli.errors import ModelError
from infinipot_cli.runtime.loading import resolve_model_path, with_cache
from tiny_models import VOCAB, make_model

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def runner():
    try:
        return CliRunner(mix_stderr=False)
    except TypeError:  # click >= 8.2 keeps stderr apart by default
        return CliRunner()


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """An empty infinipot cache (the default one, looked in too, as well), Hugging Face cache and no Ollama store."""
    monkeypatch.setenv("INFINIPOT_CACHE", str(tmp_path / "ipcache"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("OLLAMA_MODELS", str(tmp_path / "no-ollama"))
    return tmp_path


# ---- a tiny GGUF written by the test ----------------------------------------------------------------------

def _permute(w: np.ndarray, n_head: int) -> np.ndarray:
    """llama.cpp's q/k row order (convert_hf_to_gguf.py); transformers' GGUF loader undoes it."""
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def write_tiny_gguf(path, model=None, arch="llama"):
    """A GGUF of a tiny llama (random weights, byte-level vocabulary of 256 tokens) the way llama.cpp writes one."""
    import gguf
    from transformers.convert_slow_tokenizer import bytes_to_unicode

    model = model or make_model("llama")
    cfg = model.config
    w = gguf.GGUFWriter(str(path), arch)
    w.add_name("tiny-test")
    w.add_context_length(cfg.max_position_embeddings)
    w.add_embedding_length(cfg.hidden_size)
    w.add_block_count(cfg.num_hidden_layers)
    w.add_feed_forward_length(cfg.intermediate_size)
    w.add_head_count(cfg.num_attention_heads)
    w.add_head_count_kv(cfg.num_key_value_heads)
    w.add_rope_dimension_count(cfg.head_dim)
    w.add_rope_freq_base(float(cfg.rope_parameters["rope_theta"]))
    w.add_layer_norm_rms_eps(cfg.rms_norm_eps)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("default")
    w.add_token_list(list(bytes_to_unicode().values()))
    w.add_token_types([1] * VOCAB)
    w.add_token_merges([])
    w.add_token_scores([0.0] * VOCAB)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    sd = {k: v.detach().float().numpy() for k, v in model.state_dict().items()}
    nh, nkv = cfg.num_attention_heads, cfg.num_key_value_heads
    w.add_tensor("token_embd.weight", sd["model.embed_tokens.weight"])
    for i in range(cfg.num_hidden_layers):
        p = f"model.layers.{i}."
        w.add_tensor(f"blk.{i}.attn_norm.weight", sd[p + "input_layernorm.weight"])
        w.add_tensor(f"blk.{i}.attn_q.weight", _permute(sd[p + "self_attn.q_proj.weight"], nh))
        w.add_tensor(f"blk.{i}.attn_k.weight", _permute(sd[p + "self_attn.k_proj.weight"], nkv))
        w.add_tensor(f"blk.{i}.attn_v.weight", sd[p + "self_attn.v_proj.weight"])
        w.add_tensor(f"blk.{i}.attn_output.weight", sd[p + "self_attn.o_proj.weight"])
        w.add_tensor(f"blk.{i}.ffn_norm.weight", sd[p + "post_attention_layernorm.weight"])
        w.add_tensor(f"blk.{i}.ffn_gate.weight", sd[p + "mlp.gate_proj.weight"])
        w.add_tensor(f"blk.{i}.ffn_up.weight", sd[p + "mlp.up_proj.weight"])
        w.add_tensor(f"blk.{i}.ffn_down.weight", sd[p + "mlp.down_proj.weight"])
    w.add_tensor("output_norm.weight", sd["model.norm.weight"])
    w.add_tensor("output.weight", sd["lm_head.weight"])
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return model


@pytest.fixture(scope="module")
def tiny_gguf(tmp_path_factory):
    path = tmp_path_factory.mktemp("gguf") / "tiny-llama.Q8.gguf"
    model = write_tiny_gguf(path)
    return path, model


def test_gguf_header_is_read_without_loading(tiny_gguf):
    path, model = tiny_gguf
    h = found.read_gguf_header(path)
    assert h.architecture == "llama" and h.name == "tiny-test" and h.context == 4096 and h.tokenizer == "gpt2"
    assert h.params == sum(p.numel() for p in model.state_dict().values())
    assert found.gguf_loadable("llama") and found.gguf_loadable("qwen2moe") and not found.gguf_loadable("rwkv6")


def test_gguf_loadable_list_matches_transformers():
    from transformers.integrations.ggml import GGUF_CONFIG_MAPPING
    from transformers.integrations.gguf.gguf_conversion_mapping import GGUF_ARCHS

    assert set(GGUF_CONFIG_MAPPING) - {"general", "tokenizer"} | set(GGUF_ARCHS) == found.GGUF_LOADABLE


def test_gguf_file_converts_once_and_keeps_the_weights(tiny_gguf, cache, monkeypatch):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    import infinipot_cli.runtime.loading as M

    path, model = tiny_gguf
    said = []
    name, folder = resolve_model_path(str(path), progress=said.append)
    assert name == str(path) and folder.parent == cache / "ipcache" / "models"
    assert len(said) == 1 and "tiny-llama.Q8.gguf" in said[0] and "llama" in said[0]
    marker = json.loads((folder / "infinipot.json").read_text())
    assert marker["identity"] == found.gguf_identity(path) and marker["kind"] == "gguf"
    assert not [p for p in folder.parent.iterdir() if p.name.startswith(".")]  # no temp folder left behind
    # the converted weights compute what the original model computes
    conv = AutoModelForCausalLM.from_pretrained(str(folder), dtype=torch.float32).eval()
    x = torch.tensor([[5, 77, 140, 33, 9, 250]])
    with torch.no_grad():
        torch.testing.assert_close(conv(x).logits, model(x).logits, atol=1e-4, rtol=1e-4)
    assert AutoTokenizer.from_pretrained(str(folder)).decode([72, 73]) == "ij"
    # second use: no conversion; a copy of the same file elsewhere maps to the same folder
    monkeypatch.setattr(M, "_convert_gguf", lambda *a, **k: pytest.fail("converted twice"))
    assert resolve_model_path(str(path), progress=said.append)[1] == folder and len(said) == 1
    copy = cache / "elsewhere.gguf"
    shutil.copy(path, copy)
    assert resolve_model_path(str(copy))[1].name.endswith(found.gguf_identity(path))


def test_gguf_of_an_architecture_transformers_cannot_load_is_one_line(cache):
    import gguf

    bad = cache / "rwkv.gguf"
    w = gguf.GGUFWriter(str(bad), "rwkv6")
    w.add_tensor("token_embd.weight", np.zeros((4, 4), dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    with pytest.raises(ModelError, match="GGUF architecture 'rwkv6' cannot be loaded by transformers"):
        resolve_model_path(str(bad))
    r = runner().invoke(app, ["ask", os.path.join(ROOT, "sample_docs", "lighthouse.txt"), "q", "-m", str(bad), "-q"])
    assert r.exit_code == 1 and "rwkv6" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    notgguf = cache / "fake.gguf"
    notgguf.write_bytes(b"not a gguf at all")
    with pytest.raises(ModelError, match="not a GGUF file"):
        resolve_model_path(str(notgguf))
    with pytest.raises(ModelError, match="not found"):
        resolve_model_path(str(cache / "missing.gguf"))


# ---- Ollama's store ---------------------------------------------------------------------------------------

def make_ollama_store(root, gguf_path, names=(("library", "tiny", "latest"),)):
    """Ollama's layout: manifests/registry.ollama.ai/<ns>/<name>/<tag> -> blobs/sha256-<hex>."""
    import hashlib

    data = gguf_path.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    (root / "blobs").mkdir(parents=True, exist_ok=True)
    (root / "blobs" / f"sha256-{digest}").write_bytes(data)
    for ns, name, tag in names:
        mf = root / "manifests" / "registry.ollama.ai" / ns / name / tag
        mf.parent.mkdir(parents=True, exist_ok=True)
        mf.write_text(json.dumps({"schemaVersion": 2, "layers": [
            {"mediaType": "application/vnd.ollama.image.template", "digest": "sha256:" + "0" * 64, "size": 10},
            {"mediaType": "application/vnd.ollama.image.model", "digest": f"sha256:{digest}", "size": len(data)}]}))
    return digest


def test_ollama_names_resolve_to_their_gguf_blob(tiny_gguf, cache, monkeypatch):
    path, _ = tiny_gguf
    store = cache / "ollama"
    digest = make_ollama_store(store, path, [("library", "tiny", "latest"), ("library", "tiny", "q8"),
                                             ("someone", "mine", "v1")])
    monkeypatch.setenv("OLLAMA_MODELS", str(store))
    blob = store / "blobs" / f"sha256-{digest}"
    assert found.resolve_ollama("tiny") == ("ollama:tiny:latest", blob)
    assert found.resolve_ollama("tiny:q8") == ("ollama:tiny:q8", blob)
    assert found.resolve_ollama("someone/mine:v1") == ("ollama:someone/mine:v1", blob)
    with pytest.raises(ModelError, match="not in the Ollama store.*tiny:latest"):
        found.resolve_ollama("llama3.2")
    name, folder = resolve_model_path("ollama:tiny:q8")
    assert name == "ollama:tiny:q8" and (folder / "model.safetensors").is_file()
    assert resolve_model_path(str(path))[1] == folder  # the same file, whatever its name


def test_ollama_store_absent_or_broken_is_one_line(tiny_gguf, cache, monkeypatch):
    with pytest.raises(ModelError, match="no Ollama model store"):
        resolve_model_path("ollama:llama3.2")
    r = runner().invoke(app, ["ask", os.path.join(ROOT, "sample_docs", "lighthouse.txt"), "q", "-m", "ollama:llama3.2"])
    assert r.exit_code == 1 and "no Ollama model store" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    store = cache / "ollama"
    digest = make_ollama_store(store, tiny_gguf[0])
    (store / "blobs" / f"sha256-{digest}").unlink()
    monkeypatch.setenv("OLLAMA_MODELS", str(store))
    with pytest.raises(ModelError, match="missing"):
        resolve_model_path("ollama:tiny")


# ---- `infinipot models` -----------------------------------------------------------------------------------

def _hf_repo(hub, rid, model):
    repo = hub / ("models--" + rid.replace("/", "--"))
    snap = repo / "snapshots" / "abc123"
    model.save_pretrained(str(snap))
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text("abc123")
    return snap


def test_models_lists_every_source(tiny_gguf, cache, monkeypatch):
    import transformers as tf

    path, model = tiny_gguf
    hub = cache / "hub"
    _hf_repo(hub, "org/tiny-qwen", make_model("qwen2"))
    gpt2 = tf.AutoModelForCausalLM.from_config(tf.GPT2Config(n_layer=1, n_embd=32, n_head=2, vocab_size=64, n_positions=128,
                                                                 bos_token_id=0, eos_token_id=0))
    _hf_repo(hub, "org/tiny-gpt2", gpt2)
    ggonly = hub / "models--org--tiny-GGUF" / "snapshots" / "def"
    ggonly.mkdir(parents=True)
    shutil.copy(path, ggonly / "tiny.Q8.gguf")
    store = cache / "ollama"
    make_ollama_store(store, path)
    monkeypatch.setenv("OLLAMA_MODELS", str(store))
    resolve_model_path(str(path))  # one converted GGUF

    r = runner().invoke(app, ["models", "--json"])
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)
    by = {e["m_value"]: e for e in doc["models"]}
    assert by["smollm2-135m"]["source"] == "builtin"
    qwen = by["org/tiny-qwen"]
    assert (qwen["architecture"], qwen["context"], qwen["pot"]) == ("qwen2", 4096, "yes")
    assert qwen["params"] == sum(p.numel() for p in make_model("qwen2").parameters()) and qwen["params_exact"]
    assert by["org/tiny-gpt2"]["pot"] == "no" and "RoPE" in by["org/tiny-gpt2"]["pot_note"]
    gg = by[str(ggonly / "tiny.Q8.gguf")]
    assert (gg["source"], gg["architecture"], gg["gguf"], gg["status"]) == ("huggingface", "llama", True, "ready (converted)")
    oll = by["ollama:tiny:latest"]
    assert (oll["source"], oll["architecture"], oll["context"], oll["pot"]) == ("ollama", "llama", 4096, "yes")
    assert oll["params"] == sum(p.numel() for p in model.state_dict().values())
    conv = by[str(path)]  # the converted GGUF, named by the file it came from
    assert (conv["source"], conv["architecture"], conv["pot"]) == ("gguf", "llama", "yes")

    r = runner().invoke(app, ["models"])
    assert r.exit_code == 0
    for m in ("smollm2-135m", "org/tiny-qwen", "org/tiny-gpt2", "ollama:tiny:latest", str(path)):
        assert m in r.stdout
    assert "learned positions" in r.stdout  # why gpt2 cannot go in a pot


def test_models_with_nothing_cached(cache):
    r = runner().invoke(app, ["models", "--json"])
    doc = json.loads(r.stdout)
    assert r.exit_code == 0 and doc["ollama"] is None
    assert {e["source"] for e in doc["models"]} <= {"builtin", "package"}


# ---- prompts without a chat template ----------------------------------------------------------------------

def _builtin_tok():
    from transformers import AutoTokenizer

    from infinipot_cli.runtime.loading import builtin_model_path

    return AutoTokenizer.from_pretrained(str(builtin_model_path()))


@pytest.fixture(scope="module")
def plain_tok():
    """The built-in tokenizer with its chat template removed (a base model's)."""
    tok = _builtin_tok()
    tok.chat_template = None
    return tok


def test_plain_frame_without_a_chat_template(plain_tok):
    from infinipot_cli.pot.prompts import CAP_G, Prompts, question_request

    P = Prompts(plain_tok)
    dec = plain_tok.decode
    assert not P.has_template
    assert dec(P.header_ids()).startswith("Read the following document carefully")
    q = "What was the keeper's cat called?"
    ids, (f0, f1) = P.ask(q)
    assert dec(ids).endswith(question_request(q) + "\nAnswer:") and dec(ids[f0:f1]).strip() == q
    ids, (f0, f1) = P.ask(q, answer_prefix="The cat was called")
    assert dec(ids).endswith("\nAnswer: The cat was called") and dec(ids[f0:f1]).strip() == q
    assert P.catalyst("question", q)[0] == P.ask(q)[0]  # CaP-Q: the very prompt the answer will use
    assert dec(P.catalyst_ids("general")).endswith(CAP_G + "\nAnswer:")
    assert dec(P.summary_ids()).endswith("\nSummary:")
    nl, blank = (plain_tok.encode(t, add_special_tokens=False)[0] for t in ("\n", "\n\n"))
    assert {nl, blank} <= P.stop_ids()                                      # an answer ends with its line
    assert blank in P.stop_ids("summary") and nl not in P.stop_ids("summary")  # a summary at a blank line


def test_template_frame_unchanged(plain_tok):
    from infinipot_cli.pot.prompts import Prompts

    tok = _builtin_tok()
    P = Prompts(tok)
    assert P.has_template and "\nAnswer:" not in tok.decode(P.ask("Who?")[0])
    assert tok.decode(P.header_ids()).startswith("<|im_start|>system")  # no BOS added: the template starts it
    assert plain_tok.encode("\n\n", add_special_tokens=False)[0] not in P.stop_ids()


# ---- Gemma 3: sliding-window layers in the pot --------------------------------------------------------------

def test_sliding_layers_cap_rows_use_the_window_mask_over_a_distilled_pot():
    """Tiny Gemma 3 (window 64, layers sliding/sliding/full) with a pot of 160 > 64: after distillations and
    CR-RoPE, the catalyst rows of a sliding layer attend exactly the entries the eager model attends (the last
    64 pot positions before each row), the full layer attends all of them, and the captured CaP scores match."""
    from transformers import DynamicCache

    from infinipot_cli.pot.engine import Engine, PotConfig
    from infinipot_cli.pot.scoring import capture as cap_scores

    model = make_model("gemma3")
    eager = make_model("gemma3", attn="eager")
    eager.load_state_dict(model.state_dict())
    g = torch.Generator().manual_seed(11)
    doc = torch.randint(10, VOCAB, (900,), generator=g).tolist()
    cat = [20, 21, 22, 23, 24, 25]
    eng = Engine(model, None, PotConfig(size=160, keep=100, chunk=48, segment=0), catalyst_ids=cat)
    eng.pin(list(range(3, 9)))
    eng.feed(doc)
    eng.finish()
    assert eng.cycles >= 5 and len(eng.pot) > 64
    S = len(eng.pot)
    P = len(cat)
    copy = DynamicCache()
    for li, layer in enumerate(eng.pot.cache.layers):
        copy.update(layer.keys.clone(), layer.values.clone(), li)
    with torch.no_grad(), cap_scores.capture(rows=P) as capt:
        model.model(input_ids=torch.tensor([cat]), **with_cache(model.model, eng.pot.cache), use_cache=True)
    with torch.no_grad():
        att = eager(torch.tensor([cat]), **with_cache(eager, copy), output_attentions=True).attentions
    cfg = model.config
    H, Hq, W = cfg.num_key_value_heads, cfg.num_attention_heads, cfg.sliding_window
    for layer, a in enumerate(att):
        ref = a[0, :, -P:, :].sum(1).view(H, Hq // H, -1).sum(1)
        torch.testing.assert_close(capt.scores[layer], ref.float(), atol=1e-5, rtol=1e-4)
        first_seen = S - W + 1  # the first catalyst row sits at position S and sees positions > S - W
        if cfg.layer_types[layer] == "sliding_attention":
            assert float(capt.scores[layer][:, :first_seen].abs().max()) == 0.0
        else:
            assert bool((capt.scores[layer][:, :first_seen] > 0).all())


GEMMA_DIR = found.converted_dir() / found.GEMMA3.folder


@pytest.mark.skipif(not (GEMMA_DIR / "infinipot.json").is_file() and not found.package_installed(found.GEMMA3),
                    reason="Gemma 3 270M not installed (make setup-gemma)")
def test_gemma3_270m_resolves_with_bos_and_the_plain_frame():
    from transformers import AutoTokenizer

    from infinipot_cli.pot.prompts import Prompts

    name, folder = resolve_model_path("gemma3-270m")
    cfg = json.loads((folder / "config.json").read_text())
    assert name == "gemma3-270m" and cfg["sliding_window"] == 512 and cfg["max_position_embeddings"] == 32768
    assert cfg["layer_types"].count("full_attention") == 3
    tok = AutoTokenizer.from_pretrained(str(folder))
    P = Prompts(tok)
    assert not P.has_template and P.header_ids()[0] == tok.bos_token_id


@pytest.mark.skipif(not found.package_installed(found.GEMMA3), reason="Gemma 3 270M not installed (make setup-gemma)")
def test_gemma3_package_is_assembled_checked_and_handed_to_the_converter(cache, monkeypatch):
    import infinipot_cli.runtime.loading as M

    seen = {}

    def fake_convert(gguf, out, meta=None):
        seen["header"] = found.read_gguf_header(gguf)
        seen["meta"] = meta
        out.mkdir(parents=True)
        (out / "infinipot.json").write_text(json.dumps({"format": found.CONVERTED_FORMAT, **meta}))

    monkeypatch.setattr(M, "_convert_gguf", fake_convert)
    said = []
    name, folder = resolve_model_path("gemma3-270m", progress=said.append)
    assert name == "gemma3-270m" and folder == cache / "ipcache" / "models" / "gemma-3-270m" and len(said) == 1
    assert seen["header"].architecture == "gemma3" and seen["header"].context == 32768
    assert seen["meta"]["kind"] == "package"
    assert [p.name for p in folder.parent.iterdir()] == ["gemma-3-270m"]  # the assembled GGUF is not kept
    assert resolve_model_path("gemma-3-270m", progress=said.append)[1] == folder and len(said) == 1


def test_models_counts_parameters_once(tmp_path):
    from infinipot_cli.runtime.catalogue import Q4_SIDECAR, safetensors_params

    def write(name, shapes):
        header = {k: {"dtype": "F32", "shape": s, "data_offsets": [0, 0]} for k, s in shapes.items()}
        raw = json.dumps(header).encode()
        (tmp_path / name).write_bytes(struct.pack("<Q", len(raw)) + raw)

    write("model.safetensors", {"w": [10, 10]})
    write(Q4_SIDECAR, {"w.q": [10, 5], "w.s": [10, 1]})
    assert safetensors_params(tmp_path) == 100
