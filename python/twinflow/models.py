"""The built-in models of the C++ side (models/: the MLP, the GPT and the Llama, with the
published sizes of GPT-3 175B and the Llama 2 and 3 models as presets), for dry runs at sizes
no Python loop should build: explain, memory and simulate."""
from . import _C
from .report import Explanation, MemoryReport, SimulationReport


class BuiltinModel:
    def __init__(self, name, config, strategy, devices=None, optimizer=None, seed=1):
        """optimizer: an optimizer text ("adamw:lr=3e-4"); None: the model's default (the GPT:
        AdamW, the MLP: SGD). Reports name the one used."""
        self.name, self.config, self.strategy = name, dict(config), strategy
        self.optimizer, self.seed = optimizer, seed
        self.devices = devices if devices is not None else _devices_of(strategy)
        self._programs = {}

    def _program(self, cluster=None, fold="data"):
        """Compiled for the search's `accelerator` preset, or priced as `cluster` (name,
        nodes) is simulated, folded as `twinflow sim` folds (fold: "data", "replica" or
        "none")."""
        key = (cluster, fold)
        if key not in self._programs:
            model = self._build(self.strategy, self.devices)
            self._programs[key] = _C.compile(model, 0, "accelerator",
                                             cluster=cluster[0] if cluster else "",
                                             nodes=cluster[1] if cluster else None, fold=fold)
        return self._programs[key]

    def _build(self, strategy, devices):
        """The C++ model under `strategy` on `devices` devices (what tw.tune builds per
        candidate)."""
        return _C.builtin_model(self.name, self.config, strategy, devices, self.optimizer,
                                self.seed)

    def explain(self):
        return Explanation(self._program().explain())

    def memory(self, cluster="dgx-h100", nodes=1):
        """The compiled Plan's memory per device (a MemoryReport): the arena simulate() reports
        for the same cluster and nodes, and the planned peak by category."""
        return MemoryReport(self._program((cluster, nodes)).memory())

    def simulate(self, cluster="dgx-h100", nodes=1, steps=1, trace=False, replica=False):
        """Simulates a step on `cluster` x `nodes`, the Plan folded by its data-parallel copies
        that sit alike on the nodes (exact, as `twinflow sim`). replica=True folds it by every
        data-parallel replica (`twinflow sim --replica`: approximate where the replicas do not
        sit alike on the nodes; memory stays exact)."""
        batch = _C.builtin_batch(self.name, self.config)
        program = self._program((cluster, nodes), "replica" if replica else "data")
        data = _C.simulate(program, cluster, nodes, steps, 1, trace)
        return SimulationReport(data, batch, self.strategy)


def _resolved(strategy, devices):
    """The strategy as the C++ side reads it, its missing degree inferred for `devices`."""
    core = _C.parse_strategy(strategy)
    core.resolve(devices)
    return core


def _devices_of(strategy):
    """The devices a strategy needs when none are given: the product of its degrees."""
    return _C.parse_strategy(strategy).default_devices


_DECODER_SIZES = ("layers", "hidden", "heads", "kv_heads", "ffn", "sequence", "vocab", "batch")


def _decoder(name, strategy, devices, preset, hf_config, optimizer, attention, device, sizes):
    unknown = sorted(set(sizes) - set(_DECODER_SIZES))
    if unknown:
        raise _C.InvalidArgumentError(f"{name}: unknown sizes {unknown} (expected "
                                      f"{', '.join(_DECODER_SIZES)})")
    config = dict(sizes, device=device)
    if attention is not None:  # None: unfused, and left to tw.tune (fused for LLMs on GPUs)
        config["attention"] = attention
    if preset is not None:
        config["preset"] = preset
    if hf_config is not None:
        config["hf_config"] = str(hf_config)
    return BuiltinModel(name, config, strategy, devices, optimizer)


def gpt(strategy="auto", devices=None, preset=None, optimizer=None, attention=None,
        device="cpu", hf_config=None, **sizes):
    """The GPT decoder of models/gpt.cc; preset="gpt3-175b" for GPT-3's sizes (96 layers,
    hidden 12288, 96 heads, 2048 tokens, vocabulary 50257), or hf_config a Hugging Face
    config.json of model_type gpt2; sizes: layers, hidden, heads, kv_heads, ffn, sequence, vocab,
    batch. optimizer: None trains with AdamW, as LLMs are. attention: "unfused" (a graph of small
    ops) or "fused" (one fused_attention op, O(sequence) memory); None: unfused, and tw.tune
    tunes an LLM on GPUs with fused attention. device: "cpu" or "cuda", the
    type of every placement."""
    return _decoder("gpt", strategy, devices, preset, hf_config, optimizer, attention, device, sizes)


def llama(strategy="auto", devices=None, preset=None, optimizer=None, attention=None,
          device="cpu", hf_config=None, **sizes):
    """The Llama decoder (models/gpt.cc with RMSNorm, a SwiGLU MLP, rotary positions,
    grouped-query attention, no biases, an untied head). preset: "llama2-7b", "llama2-13b",
    "llama2-70b", "llama3-8b", "llama3-70b" or "llama3-405b"; or hf_config a Hugging Face
    config.json (model_type llama or mistral). The other arguments as for gpt()."""
    return _decoder("llama", strategy, devices, preset, hf_config, optimizer, attention, device,
                    sizes)


def mlp(widths=(784, 4096, 4096, 10), batch=512, strategy="auto", devices=None, optimizer=None,
        device="cpu"):
    return BuiltinModel("mlp", {"widths": list(widths), "batch": batch, "device": device},
                        strategy, devices, optimizer)
