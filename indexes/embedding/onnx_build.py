"""The ONNX copy of all-MiniLM-L6-v2 built without PyTorch: the BERT encoder written out
as an ONNX graph (``onnx.helper``) around the weights read from ``model.safetensors`` with
``safetensors.numpy``.

Where torch can be installed (CPython 3.11 here) :func:`indexes.embedding.onnx_embedder.export_onnx`
traces the PyTorch model instead. On Python 3.13 the only torch on the package index is
the multi-GB CUDA build, so this module is how a torch-free install gets the same vectors:
the graph computes what ``transformers``' ``BertModel`` computes (absolute positions,
erf GELU, post-LayerNorm), and the copy is checked against reference vectors of the
probe texts (``minilm_reference.npy``, made by sentence-transformers on the PyTorch
model, see :func:`write_reference`) before it is used: a copy off by more than
:data:`indexes.embedding.onnx_embedder.TOLERANCE` is refused.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

import numpy as np

from indexes.embedding.embedders import EmbedderUnavailableError

REFERENCE = Path(__file__).with_name("minilm_reference.npy")
"""``(len(PROBES), 384)`` float32: sentence-transformers' vectors of
:data:`indexes.embedding.onnx_embedder.PROBES` (unit rows)."""


def bert_graph(config: dict, weights: dict[str, np.ndarray]):
    """An ``onnx.ModelProto`` (opset 17) of a BERT encoder: inputs ``input_ids``,
    ``attention_mask``, ``token_type_ids`` (int64, ``(batch, tokens)``), output ``hidden``
    (float32, ``(batch, tokens, hidden_size)``) -- the inputs and output that
    :class:`indexes.embedding.onnx_embedder.OnnxEmbedder` feeds and reads. ``weights`` are the
    ``BertModel`` tensors by their safetensors names. Raises ``KeyError`` for a missing
    tensor and ``ValueError`` for a config this graph does not implement."""
    from onnx import TensorProto, helper, numpy_helper

    if config.get("hidden_act", "gelu") != "gelu" or \
            config.get("position_embedding_type", "absolute") != "absolute":
        raise ValueError("only BERT with gelu and absolute positions is implemented")
    hidden = int(config["hidden_size"])
    heads = int(config["num_attention_heads"])
    eps = float(config.get("layer_norm_eps", 1e-12))
    head_dim = hidden // heads
    nodes, inits = [], []
    counter = iter(range(1_000_000))

    def name(prefix: str) -> str:
        return f"{prefix}_{next(counter)}"

    def const(value, prefix: str = "c") -> str:
        tensor = numpy_helper.from_array(np.asarray(value), name(prefix))
        inits.append(tensor)
        return tensor.name

    def weight(key: str) -> str:
        tensor = numpy_helper.from_array(np.ascontiguousarray(weights[key]), key)
        inits.append(tensor)
        return key

    def op(kind: str, inputs: list[str], **attrs) -> str:
        out = name(kind.lower())
        nodes.append(helper.make_node(kind, inputs, [out], **attrs))
        return out

    def linear(x: str, prefix: str) -> str:  # torch Linear: x @ W.T + b
        w = numpy_helper.from_array(np.ascontiguousarray(weights[f"{prefix}.weight"].T),
                                    f"{prefix}.weight_t")
        inits.append(w)
        return op("Add", [op("MatMul", [x, w.name]), weight(f"{prefix}.bias")])

    def layer_norm(x: str, prefix: str) -> str:
        return op("LayerNormalization", [x, weight(f"{prefix}.weight"),
                                         weight(f"{prefix}.bias")], axis=-1, epsilon=eps)

    # embeddings: words + positions 0..tokens-1 + token types, then LayerNorm
    ids_shape = op("Shape", ["input_ids"])
    tokens = op("Gather", [ids_shape, const(np.array(1, dtype=np.int64))], axis=0)
    positions = op("Range", [const(np.array(0, dtype=np.int64)), tokens,
                             const(np.array(1, dtype=np.int64))])
    x = op("Add", [op("Gather", [weight("embeddings.word_embeddings.weight"), "input_ids"]),
                   op("Gather", [weight("embeddings.position_embeddings.weight"), positions])])
    x = op("Add", [x, op("Gather", [weight("embeddings.token_type_embeddings.weight"),
                                    "token_type_ids"])])
    x = layer_norm(x, "embeddings.LayerNorm")

    # the attention mask as an additive bias: 0 where attended, float32 min where padded
    mask = op("Cast", [op("Unsqueeze", ["attention_mask", const(np.array([1, 2]))])],
              to=TensorProto.FLOAT)
    bias = op("Mul", [op("Sub", [const(np.array(1.0, dtype=np.float32)), mask]),
                      const(np.array(np.finfo(np.float32).min, dtype=np.float32))])
    split_shape = const(np.array([0, 0, heads, head_dim], dtype=np.int64))
    merge_shape = const(np.array([0, 0, hidden], dtype=np.int64))
    scale = const(np.array(1.0 / np.sqrt(head_dim), dtype=np.float32))

    def split_heads(t: str) -> str:  # (b, t, h*d) -> (b, h, t, d)
        return op("Transpose", [op("Reshape", [t, split_shape])], perm=[0, 2, 1, 3])

    for i in range(int(config["num_hidden_layers"])):
        p = f"encoder.layer.{i}"
        q = split_heads(linear(x, f"{p}.attention.self.query"))
        k = split_heads(linear(x, f"{p}.attention.self.key"))
        v = split_heads(linear(x, f"{p}.attention.self.value"))
        scores = op("Add", [op("Mul", [op("MatMul", [q, op("Transpose", [k],
                                                          perm=[0, 1, 3, 2])]), scale]),
                            bias])
        context = op("MatMul", [op("Softmax", [scores], axis=-1), v])
        context = op("Reshape", [op("Transpose", [context], perm=[0, 2, 1, 3]), merge_shape])
        x = layer_norm(op("Add", [linear(context, f"{p}.attention.output.dense"), x]),
                       f"{p}.attention.output.LayerNorm")
        inner = linear(x, f"{p}.intermediate.dense")
        # GELU, erf form: 0.5 * x * (1 + erf(x / sqrt(2)))
        erf = op("Erf", [op("Div", [inner, const(np.array(np.sqrt(2.0), dtype=np.float32))])])
        inner = op("Mul", [op("Mul", [inner, op("Add", [erf, const(np.array(
            1.0, dtype=np.float32))])]), const(np.array(0.5, dtype=np.float32))])
        x = layer_norm(op("Add", [linear(inner, f"{p}.output.dense"), x]),
                       f"{p}.output.LayerNorm")
    nodes.append(helper.make_node("Identity", [x], ["hidden"]))

    int_input = [helper.make_tensor_value_info(n, TensorProto.INT64, ["batch", "tokens"])
                 for n in ("input_ids", "attention_mask", "token_type_ids")]
    output = helper.make_tensor_value_info("hidden", TensorProto.FLOAT,
                                           ["batch", "tokens", hidden])
    graph = helper.make_graph(nodes, "bert_encoder", int_input, [output], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              producer_name="wiki-kb indexes.embedding.onnx_build")
    model.ir_version = 8  # readable by every onnxruntime release that runs opset 17
    return model


def build_onnx(model_dir: Path, path: Path, reference: Path = REFERENCE) -> Path:
    """Write the ONNX copy of the BERT model in ``model_dir`` (``config.json``,
    ``model.safetensors``) to ``path`` atomically, without PyTorch, after checking its
    vectors of the probe texts against ``reference`` (:data:`REFERENCE`). Returns ``path``. Raises
    :class:`EmbedderUnavailableError` when ``onnx`` or ``safetensors`` is missing, the
    weights or the reference cannot be read, the cache folder cannot be written, or the
    copy differs from the reference by more than the tolerance; nothing is left at
    ``path`` then."""
    from indexes.embedding import onnx_embedder

    try:
        import onnx
        from safetensors.numpy import load_file
    except ImportError as exc:
        raise EmbedderUnavailableError(
            f"building the ONNX copy needs {exc.name}: run `make setup`") from None
    try:
        config = json.loads((model_dir / "config.json").read_text(encoding="utf-8"))
        weights = load_file(str(model_dir / "model.safetensors"))
        expected = np.load(reference)
        model = bert_graph(config, weights)
    except (OSError, ValueError, KeyError) as exc:
        raise EmbedderUnavailableError(f"cannot build the ONNX copy: {exc}") from None
    temp = onnx_embedder.temp_beside(path, "the ONNX copy")
    try:
        onnx.save(model, temp)
        got = onnx_embedder.OnnxEmbedder(Path(temp)).encode(onnx_embedder.PROBES)
        drift = float(np.abs(got - expected).max()) if got.shape == expected.shape else np.inf
        if drift > onnx_embedder.TOLERANCE:
            raise EmbedderUnavailableError(
                f"the ONNX copy differs from the reference vectors by {drift:.2g} "
                f"(> {onnx_embedder.TOLERANCE})")
        os.replace(temp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
    return path


def write_reference(st_model, path: Path = REFERENCE) -> np.ndarray:
    """Encode :data:`indexes.embedding.onnx_embedder.PROBES` with a loaded sentence-transformers
    model and save them to ``path`` (float32 ``.npy``): how :data:`REFERENCE` was made
    (``python -c "from indexes.embedding.onnx_build import write_reference; ..."`` on 3.11 with
    torch). Returns the vectors."""
    from indexes.embedding import onnx_embedder

    vectors = np.asarray(st_model.encode(list(onnx_embedder.PROBES), normalize_embeddings=True,
                                         convert_to_numpy=True, show_progress_bar=False),
                         dtype=np.float32)
    np.save(path, vectors)
    return vectors
