"""Cross- and bi-encoders run by onnxruntime with the model's own tokenizer (no sentence-transformers[onnx]: its
optimum dependency cannot be installed with this stack).

The ONNX file is the model's own (`file_name`, or `onnx/model.onnx` when the model has one), or else an export made
once with `torch.onnx.export(..., dynamo=False)` into the cache folder. `quantization: int8` makes a dynamic int8
copy once with onnxruntime's quantiser. The file, the exporter or quantiser version and the quantisation are part of
the score identity.
"""

from __future__ import annotations

import inspect
import json
import logging
import warnings
from pathlib import Path

import numpy as np

from terazi.base import fingerprint
from terazi.base.paths import mark_used, write_atomic
from terazi.base.shutdown import check
from terazi.models.refs import (
    ModelError,
    ModelRef,
    cached_file,
    has_file,
    local_folder,
    model_config,
    model_file,
    pick_device,
    weights_info,
)
from terazi.rerank.backends.base import CPU_BATCH, Backend
from terazi.rerank.backends.bi import BiEncoder
from terazi.rerank.backends.torch_cross import activation_name
from terazi.rerank.pairs import Pair
from terazi.store.layout import CacheLayout

log = logging.getLogger("terazi.rerank.backends.onnx")
OPSET = 17
DEFAULT_FILE = "onnx/model.onnx"
ACTIVATIONS = {"Sigmoid": lambda x: 1 / (1 + np.exp(-x)), "Identity": lambda x: x, "Tanh": np.tanh}


def ort():
    try:
        import onnxruntime
    except ImportError:
        raise ModelError("backend: onnx needs onnxruntime: pip install 'terazi[onnx]'") from None
    return onnxruntime


def quantize_int8(source: Path, target: Path) -> Path:
    """Dynamic int8 weights (onnxruntime.quantization.quantize_dynamic, QInt8), written once. A source over
    1.5 GB (weights beside it) is read and written with external data: protobuf files stop at 2 GB."""
    if target.is_file():
        return target
    from onnxruntime.quantization import QuantType, quantize_dynamic

    large = sum(f.stat().st_size for f in source.parent.iterdir() if f.is_file()) > 1.5e9

    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)  # the quantiser's advice to pre-process is logged on the root logger
    try:
        log.info("quantising %s to int8", source)
        write_atomic(
            target,
            lambda tmp: quantize_dynamic(
                str(source), str(tmp), weight_type=QuantType.QInt8, use_external_data_format=large
            ),
        )
        return target
    finally:
        root.setLevel(level)


class _Onnx(Backend):
    backend = "onnx"

    def __init__(self, spec, ref: ModelRef, cache_dir: str):
        self.runtime = ort()
        self.own = spec.file_name or (DEFAULT_FILE if has_file(ref, DEFAULT_FILE) else None)
        super().__init__(spec, ref, cache_dir)
        self._file: Path | None = None

    def _precision(self) -> str:
        return "int8" if self.spec.quantization == "int8" else "fp32"

    def _source(self) -> str:
        return self.own or f"export torch-{_torch_version()} opset {OPSET}"

    def _backend_part(self) -> str:
        int8 = f"+int8 ort-{self.runtime.__version__}" if self.spec.quantization == "int8" else ""
        return f"onnx({self._source()}{int8})"

    def _device(self) -> str:
        """CUDA only when onnxruntime has its CUDA provider (onnxruntime-gpu); otherwise the CPU, as recorded."""
        device = pick_device(self.spec.device)
        return (
            device
            if device.startswith("cuda") and "CUDAExecutionProvider" in self.runtime.get_available_providers()
            else "cpu"
        )

    def _providers(self) -> list[str]:
        return (
            ["CUDAExecutionProvider", "CPUExecutionProvider"]
            if self.device.startswith("cuda")
            else ["CPUExecutionProvider"]
        )

    @property
    def _folder(self) -> Path:
        """One folder per model and ONNX source: the export (if any) and its int8 copy."""
        return CacheLayout(self.cache_dir).part(
            "onnx", fingerprint.of_json([self.ref.identity, self.kind, self._source()])
        )

    def onnx_file(self) -> Path:
        """The file the session runs: the model's own or the export, int8 copy when asked; made at most once."""
        if self._file is None:
            if self.own:
                source = model_file(self.ref, self.own)
                model_file(self.ref, self.own + "_data", required=False)  # external weights travel beside it
            else:
                source = self._folder / "model.onnx"
                if not source.is_file():
                    write_atomic(source, self._export)
            self._file = quantize_int8(source, self._int8_path) if self.spec.quantization == "int8" else source
            mark_used(self._folder)  # where an export or int8 copy lives (`terazi cache prune`)
        return self._file

    @property
    def _int8_path(self) -> Path:
        return self._folder / f"model_int8_ort-{self.runtime.__version__}.onnx"

    def _made_file(self) -> Path | None:
        """The file `onnx_file()` would return, if it is already on this machine (nothing made or fetched)."""
        if self._file is not None:
            return self._file
        if self.spec.quantization == "int8":
            return self._int8_path if self._int8_path.is_file() else None
        exported = self._folder / "model.onnx"
        return cached_file(self.ref, self.own) if self.own else (exported if exported.is_file() else None)

    def _export(self, target: Path) -> None:
        import torch

        model, tok = self._torch_model(), self._tokenizer()
        sample = (
            tok(["sorgu"], ["belge"], return_tensors="pt")
            if self.kind == "cross-encoder"
            else tok(["metin"], return_tensors="pt")
        )
        names = [n for n in inspect.signature(model.forward).parameters if n in sample]
        output = self.output

        class Exportable(torch.nn.Module):
            """The model with its tokenizer's tensors as positional inputs and one named output."""

            def __init__(self):
                super().__init__()
                self.model = model

            def forward(self, *tensors):
                return self.model(**dict(zip(names, tensors)), return_dict=True)[output]

        log.info("exporting %s to ONNX (once) for %s", self.ref.name, self.kind)
        with warnings.catch_warnings(), torch.no_grad():
            warnings.simplefilter("ignore")
            torch.onnx.export(
                Exportable().eval(),
                tuple(sample[n] for n in names),
                str(target),
                input_names=names,
                output_names=[output],
                opset_version=OPSET,
                dynamo=False,
                dynamic_axes={**{n: {0: "batch", 1: "sequence"} for n in names}, output: {0: "batch"}},
            )

    def _tokenizer(self):
        from transformers import AutoTokenizer

        return AutoTokenizer.from_pretrained(
            self.transformer_location(),
            revision=self.ref.revision,
            local_files_only=self.ref.local,
            trust_remote_code=self.spec.trust_remote_code,
        )

    def transformer_location(self) -> str:
        return self.ref.location

    def _load(self):
        runtime = self.runtime
        options = runtime.SessionOptions()
        options.log_severity_level = 3
        path = self.onnx_file()
        try:
            session = runtime.InferenceSession(str(path), options, providers=self._providers())
        except Exception as e:
            raise ModelError(f"onnxruntime could not open {path} for {self.ref.name!r}: {e}") from e
        self.tokenizer = self._tokenizer()
        self.inputs = {i.name for i in session.get_inputs()}
        outputs = [o.name for o in session.get_outputs()]
        self.output_name = self.output if self.output in outputs else outputs[0]
        return session

    def _run(self, encoded) -> np.ndarray:
        check()  # one batch: a stop request is honoured between batches
        feed = {k: np.asarray(v, dtype=np.int64) for k, v in encoded.items() if k in self.inputs}
        return self.model.run([self.output_name], feed)[0]

    def _auto_batch(self) -> int:
        return CPU_BATCH

    def size_bytes(self) -> int | None:
        f = self._made_file()  # a fully cached run measures what is there, and makes or fetches nothing
        return None if f is None else f.stat().st_size + sum(p.stat().st_size for p in f.parent.glob(f.name + "_data"))

    def params(self) -> int | None:
        if self._params is None:
            folder = local_folder(self.ref)
            self._params = weights_info(folder)[0] if folder else None
            if self._params is None and self._made_file():
                import onnx

                graph = onnx.load(str(self._made_file()), load_external_data=False).graph
                self._params = int(sum(np.prod(t.dims) for t in graph.initializer))
        return self._params


class OnnxCrossEncoder(_Onnx):
    kind = "cross-encoder"
    output = "logits"

    def __init__(self, spec, ref: ModelRef, cache_dir: str):
        self.activation = activation_name(model_config(ref), spec.trust_remote_code)
        if self.activation not in ACTIVATIONS:
            raise ModelError(
                f"{ref.name!r}: activation {self.activation} is not available with backend: onnx "
                f"({', '.join(ACTIVATIONS)} are)"
            )
        super().__init__(spec, ref, cache_dir)

    def _rule(self) -> str:
        return f"act={self.activation}"

    def _torch_model(self):
        from transformers import AutoModelForSequenceClassification

        return AutoModelForSequenceClassification.from_pretrained(
            self.ref.location,
            revision=self.ref.revision,
            local_files_only=self.ref.local,
            attn_implementation="eager",
            trust_remote_code=self.spec.trust_remote_code,
        ).eval()

    def _score(self, pairs: list[Pair]) -> np.ndarray:
        order = np.argsort([len(p.query) + len(p.doc) for p in pairs], kind="stable")
        out = np.empty(len(pairs), dtype=np.float64)
        max_length = self.max_length or self.tokenizer.model_max_length
        for i in range(0, len(pairs), self.batch_size):
            idx = order[i : i + self.batch_size]
            enc = self.tokenizer(
                [pairs[j].query for j in idx],
                [pairs[j].doc for j in idx],
                padding=True,
                truncation="longest_first",
                max_length=max_length,
                return_tensors="np",
            )
            logits = self._run(enc).astype(np.float64).reshape(len(idx), -1)
            out[idx] = ACTIVATIONS[self.activation](logits)[:, -1]
        return out


class OnnxBiEncoder(_Onnx, BiEncoder):
    """A sentence-transformers bi-encoder (Transformer, Pooling, optionally Normalize) from its token embeddings."""

    output = "last_hidden_state"

    def __init__(self, spec, ref: ModelRef, cache_dir: str):
        self.modules = self._modules(ref)
        super().__init__(spec, ref, cache_dir)

    @staticmethod
    def _modules(ref: ModelRef) -> dict:
        """Where the transformer is and how it pools, from modules.json; other modules (Dense, …) are refused."""
        path = model_file(ref, "modules.json", required=False)
        modules = json.loads(path.read_text()) if path else [{"type": "Transformer", "path": ""}]
        found = {"transformer": "", "pooling": {"pooling_mode_mean_tokens": True}}
        for m in modules:
            kind = m["type"].rsplit(".", 1)[-1]
            if kind == "Transformer":
                found["transformer"] = m.get("path", "")
            elif kind == "Pooling":
                cfg = model_file(ref, f"{m['path']}/config.json", required=False)
                found["pooling"] = json.loads(cfg.read_text()) if cfg else found["pooling"]
            elif kind != "Normalize":
                raise ModelError(
                    f"{ref.name!r}: backend onnx runs Transformer + Pooling (+ Normalize) bi-encoders; "
                    f"this one has a {kind} module"
                )
        return found

    def _rule(self) -> str:
        return f"cosine({self._pooling()})"

    def _pooling(self) -> str:
        p = self.modules["pooling"]
        for mode in ("cls_token", "max_tokens", "lasttoken", "mean_tokens"):
            if p.get(f"pooling_mode_{mode}"):
                return mode
        return "mean_tokens"

    def transformer_location(self) -> str:
        sub = self.modules["transformer"]
        return str(Path(self.ref.location) / sub) if sub and self.ref.local else self.ref.location

    def _torch_model(self):
        from transformers import AutoModel

        return AutoModel.from_pretrained(
            self.transformer_location(),
            revision=self.ref.revision,
            local_files_only=self.ref.local,
            attn_implementation="eager",
            trust_remote_code=self.spec.trust_remote_code,
        ).eval()

    def _encode(self, texts: list[str]) -> np.ndarray:
        max_length = self.max_length or self.tokenizer.model_max_length
        parts = []
        for i in range(0, len(texts), self.batch_size):
            enc = self.tokenizer(
                texts[i : i + self.batch_size],
                padding=True,
                truncation=True,
                max_length=max_length,
                return_tensors="np",
            )
            tokens = self._run(enc).astype(np.float64)
            mask = enc["attention_mask"].astype(np.float64)[:, :, None]
            mode = self._pooling()
            if mode == "cls_token":
                pooled = tokens[:, 0]
            elif mode == "max_tokens":
                pooled = np.where(mask > 0, tokens, -1e9).max(axis=1)
            elif mode == "lasttoken":
                pooled = tokens[np.arange(len(tokens)), enc["attention_mask"].sum(axis=1) - 1]
            else:
                pooled = (tokens * mask).sum(axis=1) / np.maximum(mask.sum(axis=1), 1e-9)
            parts.append(pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12))
        return np.concatenate(parts).astype(np.float32)  # as the vector stores keep them


def _torch_version() -> str:
    import torch

    return torch.__version__.split("+")[0]
